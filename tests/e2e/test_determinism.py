"""The same input gives byte-identical output: sources, header, make
fragment, metadata and library, whatever the process (hash seeds differ
between Python processes, so a dict or set iterated in hash order would
show up here)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROGRAM = """
def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32]) {
  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1]);
  %1 = nn.relu(%0);
  %2 = nn.max_pool2d(%1, pool_size=[2, 2], strides=[2, 2]);
  %3 = reshape(%2, newshape=[1, 64]);
  %4 = nn.softmax(%3);
  (%4, sum(%2, axis=[1]), split(%3, indices_or_sections=2, axis=1))
}
"""

SCRIPT = """
import sys, numpy as np, aot
mod = aot.parse(open(sys.argv[1]).read())
w = np.arange(108, dtype=np.float32).reshape(4, 3, 3, 3) / 7
aot.compile(mod, sys.argv[2], name="det", params={"w": w})
"""


def _compile(tmp_path: Path, tag: str, seed: str) -> Path:
    prog = tmp_path / "prog.relay"
    prog.write_text(PROGRAM)
    out = tmp_path / tag
    env = {"PYTHONHASHSEED": seed, "PATH": "/usr/bin:/bin:/usr/local/bin",
           "PYTHONPATH": str(ROOT)}
    import os
    env = {**os.environ, **env}
    subprocess.run([sys.executable, "-c", SCRIPT, str(prog), str(out)], check=True, env=env,
                   cwd=tmp_path)
    return out


def test_output_is_byte_identical_across_processes(tmp_path):
    a = _compile(tmp_path, "a", "1")
    b = _compile(tmp_path, "b", "2")
    files_a = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    files_b = sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    assert files_a == files_b
    for rel in files_a:
        assert (a / rel).read_bytes() == (b / rel).read_bytes(), f"{rel} differs"
