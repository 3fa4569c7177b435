"""`aot compile --ram-budget` and `--memory-report` (issue 17.5, 17.6):
the budget's diagnostic, all or nothing, the report's files."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

import aot
from aot.cli import main
from aot.diagnostics import DiagnosticError

#: three kernels at opt level 0: intermediates in the arena
PROGRAM = """
def @main(%x: Tensor[(64,), float32]) {
  %0 = add(%x, 1f);
  %1 = tanh(%0);
  sigmoid(%1)
}
"""


def _source(tmp_path):
    path = tmp_path / "prog.relay"
    path.write_text(PROGRAM)
    return str(path)


def _files(root):
    return {p.relative_to(root): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_a_budget_below_the_arena_fails_before_writing_anything(tmp_path, capsys):
    out = tmp_path / "art"
    assert main(["compile", _source(tmp_path), "-o", str(out), "--opt-level", "0",
                 "--ram-budget", "100"]) == 1
    err = capsys.readouterr().err
    assert "needs 256 bytes of RAM, more than the budget of 100 bytes" in err
    assert "arena" in err and "pool" in err and "not measured" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["prog.relay"]


def test_the_stack_counts_and_a_failed_compile_leaves_the_old_artifact(tmp_path, capsys):
    out = tmp_path / "art"
    assert main(["compile", _source(tmp_path), "-o", str(out), "--opt-level", "0", "-q"]) == 0
    before = _files(out)
    meta = json.loads((out / "metadata.json").read_text())
    stack = meta["stack"]["library"]["bytes"]
    needed = meta["arena_bytes"] + stack
    assert stack > 0
    assert main(["compile", _source(tmp_path), "-o", str(out), "--opt-level", "0",
                 "--ram-budget", str(needed - 1), "--name", "other"]) == 1
    err = capsys.readouterr().err
    assert f"needs {needed:,} bytes of RAM, more than the budget of {needed - 1:,}" in err
    assert f"stack  {stack:>12,}  worst case with" in err
    assert _files(out) == before                        # not even renamed
    assert sorted(p.name for p in tmp_path.iterdir()) == ["art", "prog.relay"]
    assert main(["compile", _source(tmp_path), "-o", str(out), "--opt-level", "0",
                 "--ram-budget", "64K"]) == 0
    assert f"stack {stack} bytes" in capsys.readouterr().out


def test_memory_report_writes_the_picture_and_the_table(tmp_path, capsys):
    out = tmp_path / "art"
    assert main(["compile", _source(tmp_path), "-o", str(out), "--opt-level", "0",
                 "--memory-report", "--no-build"]) == 0
    printed = capsys.readouterr().out
    table = (out / "memory.txt").read_text()
    assert table in printed and table.startswith("arena of `model`: 256 bytes")
    root = ET.parse(out / "memory.svg").getroot()
    boxes = [r for r in root.iter("{http://www.w3.org/2000/svg}rect")
             if r.get("class") == "tensor"]
    assert len(boxes) == len(table.splitlines()) - 3 == 2
    # a compile without the report leaves no stale one behind
    assert main(["compile", _source(tmp_path), "-o", str(out), "--no-build", "-q"]) == 0
    assert not (out / "memory.svg").exists() and not (out / "memory.txt").exists()


def test_bad_budgets(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["compile", _source(tmp_path), "-o", str(tmp_path / "a"), "--ram-budget", "lots"])
    assert exc.value.code == 2
    assert "expected a number of bytes such as 65536 or 64K" in capsys.readouterr().err
    with pytest.raises(DiagnosticError, match="ram_budget must be a non-negative number"):
        aot.compile(aot.parse(PROGRAM), tmp_path / "b", ram_budget=-1)
