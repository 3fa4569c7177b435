"""The FastMath pass (aot/passes/fast_math.py): it replaces exp, tanh, erf
and nn.softmax by their fast approximations, runs only when required (opt
level 4, as Relay's), through the Python API and `aot compile
--enable-pass FastMath`, and the compiled approximations match the
interpreter."""

from __future__ import annotations

import numpy as np

import aot
from aot.ir.expr import Call
from aot.ir.visitor import post_order
from aot.passes.fast_math import fast_math
from aot.passes.manager import get_pass

TEXT = """def @main(%x: Tensor[(2, 8), float32]) {
  nn.softmax(tanh(exp(%x)) + erf(%x), axis=0)
}"""


def op_names(mod) -> set[str]:
    return {c.op.name for c in post_order(mod["main"].body) if isinstance(c, Call)}


def test_rewrites_the_four_operators():
    mod = aot.infer_types(aot.parse(TEXT))
    out = fast_math(mod)
    names = op_names(out)
    assert {"fast_exp", "fast_tanh", "fast_erf", "nn.fast_softmax"} <= names
    assert not names & {"exp", "tanh", "erf", "nn.softmax"}
    assert [c.attrs.axis for c in post_order(out["main"].body)
            if isinstance(c, Call) and c.op.name == "nn.fast_softmax"] == [0]
    plain = aot.infer_types(aot.parse(
        "def @main(%x: Tensor[(2,), float32]) { sigmoid(%x) }"))
    assert fast_math(plain) is plain


def test_opt_in_only():
    assert get_pass("FastMath").opt_level == 4


def test_compiled_with_and_without(tmp_path):
    mod = aot.parse(TEXT)
    x = np.random.default_rng(1).uniform(-3, 3, (2, 8)).astype(np.float32)
    with aot.PassContext(required=["FastMath"]):
        fast = aot.compile(mod, tmp_path / "fast", name="fm")
    exact = aot.compile(mod, tmp_path / "exact", name="fm")
    sources = {d: "".join(p.read_text() for p in (tmp_path / d).rglob("fm*.c"))
               for d in ("fast", "exact")}
    assert "aot_fast_exp_f32(" in sources["fast"] and "expf(" not in sources["fast"]
    assert "aot_fast_exp_f32(" not in sources["exact"] and "expf(" in sources["exact"]
    want = aot.interpret(mod, x)
    got_fast, got_exact = aot.load(fast)(x), aot.load(exact)(x)
    np.testing.assert_allclose(got_exact, want, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(got_fast, want, rtol=2e-5, atol=1e-7)
    assert not np.array_equal(got_fast, got_exact)


def test_cli_enable_pass(tmp_path):
    from aot.cli import main
    src = tmp_path / "m.relay"
    src.write_text(TEXT)
    assert main(["compile", str(src), "-o", str(tmp_path / "out"), "--name", "fm",
                 "--enable-pass", "FastMath"]) == 0
    assert "aot_fast_exp_f32(" in "".join(p.read_text() for p in (tmp_path / "out").rglob("*.c"))
