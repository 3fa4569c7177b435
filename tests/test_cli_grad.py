"""`aot compile --grad`: the artifact of @main's gradient."""

from __future__ import annotations

import json

import numpy as np

import aot
from aot.cli import main

PROGRAM = """
def @main(%x: Tensor[(2, 3), float32], %w: Tensor[(4, 3), float32]) {
  %0 = nn.dense(%x, %w);
  %1 = tanh(%0);
  mean(%1)
}
"""


def test_compile_grad_writes_the_gradient(tmp_path):
    f = tmp_path / "prog.relay"
    f.write_text(PROGRAM)
    out = tmp_path / "art"
    assert main(["compile", str(f), "-o", str(out), "--name", "g", "--grad"]) == 0
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["pool_bytes"] == 0
    assert [o["shape"] for o in meta["outputs"]] == [[], [2, 3], [4, 3]]
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3)).astype(np.float32)
    w = rng.standard_normal((4, 3)).astype(np.float32)
    loss, (dx, dw) = aot.load(out)(x, w)
    t = np.tanh(x.astype(np.float64) @ w.T.astype(np.float64))
    d0 = (1 - t * t) / 8
    np.testing.assert_allclose(loss, t.mean(), rtol=1e-5)
    np.testing.assert_allclose(dx, d0 @ w, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(dw, d0.T @ x, rtol=1e-4, atol=1e-6)


def test_compile_grad_refuses_an_operator_without_a_rule(tmp_path, capsys):
    f = tmp_path / "prog.relay"
    f.write_text("def @main(%x: Tensor[(4,), float32]) { floor(%x) }")
    assert main(["compile", str(f), "-o", str(tmp_path / "art"), "--grad"]) != 0
    assert "operator floor has no gradient rule" in capsys.readouterr().err


def test_compile_grad_mode_auto_takes_higher_order_for_control_flow(tmp_path):
    """`--grad` (mode auto) differentiates a program with `if` and a
    recursive global in higher-order mode: the object pool backend."""
    f = tmp_path / "prog.relay"
    f.write_text("""
def @pow(%x: Tensor[(2), float32], %n: int32) -> Tensor[(2), float32] {
  if (less_equal(%n, 0)) { ones_like(%x) } else { multiply(%x, @pow(%x, subtract(%n, 1))) }
}
def @main(%x: Tensor[(2), float32], %n: int32) { sum(@pow(%x, %n)) }
""")
    out = tmp_path / "art"
    assert main(["compile", str(f), "-o", str(out), "--name", "g", "--grad", "--no-build",
                 "--pool-bytes", "65536"]) == 0
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["pool_bytes"] == 65536
    assert [o["shape"] for o in meta["outputs"]] == [[], [2], []]
    assert main(["compile", str(f), "-o", str(tmp_path / "fo"), "--grad", "--no-build",
                 "--grad-mode", "first_order"]) != 0


def test_compile_grad_mode_higher_order_of_a_dataflow_program_has_no_pool(tmp_path):
    f = tmp_path / "prog.relay"
    f.write_text(PROGRAM)
    out = tmp_path / "art"
    assert main(["compile", str(f), "-o", str(out), "--name", "g", "--grad", "--no-build",
                 "--grad-mode", "higher_order"]) == 0
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["pool_bytes"] == 0
    assert [o["shape"] for o in meta["outputs"]] == [[], [2, 3], [4, 3]]
