"""Static ifs (aot.emit.lower.static_if): an ``if`` on a run-time bool over
tensors of fixed shape compiles to a C ``if``/``else`` over the static
arena -- no object pool -- and computes what the interpreter does, on both
branches.  One C build for every case below."""

from __future__ import annotations

import dataclasses
import tempfile

import numpy as np
import pytest

import aot
from tests.cases.if_programs import IF_PROGRAM, if_args
from aot.compiler import plan
from aot.ir.dtype import DType
from aot.emit.plan.model import ArgKind, BranchSpan
from aot.emit.kernel.walk import stored_buffers
from aot.emit.plan.verify import verify_model_plan

PROGRAM = """
#[version = "0.0.5"]
def @main(%x: Tensor[(4), float32], %y: Tensor[(4), float32], %n: int32) {
  // a kernel both branches read (computed once, before the if), one
  // branch giving an input (copied into the result) and the same
  // tensor twice, a nested if in the else branch
  let %e = exp(%x);
  let %r = if (sum(%x) > 0f) {
    (%e * %y, %e + 1f)
  } else {
    let %d = %e - %y;
    if (%n > 2) { (%y, %d) } else { (%d, %d) }
  };
  // an if in a static loop's body, on the loop's state
  let %w = (let %lp = fn (%i: int32, %s: Tensor[(4), float32]) {
    if (%i < %n) {
      %lp(%i + 1, if (floor_mod(%i, 2) == 0) { %s + %x } else { %s * 0.5f })
    } else { %s }
  };
  %lp(0, %y));
  // a static loop in a branch
  let %v = if (%n > 1) {
    let %acc = fn (%j: int32, %t: Tensor[(4), float32]) {
      if (%j < %n) { %acc(%j + 1, %t + %y) } else { %t }
    };
    %acc(0, %x)
  } else { %x * %y };
  // a kernel read by the branch and after the if
  let %f = %x * 3f;
  let %u = if (%n == 0) { %f - %y } else { %y };
  (%r.0, %r.1, %w, %v, %u + %f)
}
"""


def _model():
    mod = aot.infer_types(aot.parse(PROGRAM))
    return mod, plan(mod, "sifs")


def test_static_ifs_compile_without_a_pool() -> None:
    mod, model = _model()
    assert model.program is None and model.pool_bytes == 0
    assert len(model.branches) == 5 and len(model.loops) == 2
    fn = aot.load(aot.compile(mod, tempfile.mkdtemp(prefix="aot-sifs-"), name="sifs"))
    y = np.array([0.5, 1.5, -1.0, 2.0], np.float32)
    for x0, n in ((1.0, 0), (-1.0, 3), (-1.0, 1), (1.0, 4)):
        x = np.array([x0, -0.25, 0.5, 0.75], np.float32)
        want = aot.interpret(mod, x, y, np.int32(n))
        got = fn(x, y, np.int32(n))
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, np.asarray(w), rtol=1e-6)


def test_branches_share_the_arena() -> None:
    """Tensors of one branch live inside its span: the planner may place
    the other branch's tensors over them."""
    src = """
    def @main(%x: Tensor[(64), float32], %c: bool) {
      if (%c) { let %a = exp(%x); %a / sum(%a) } else { let %b = log(%x); %b - mean(%b) }
    }"""
    model = plan(aot.infer_types(aot.parse(src)), "share")
    (br,) = model.branches
    then = [t for t in model.arena_tensors if br.begin <= t.first < br.mid]
    other = [t for t in model.arena_tensors if br.mid <= t.first < br.end]
    assert then and other
    assert {t.offset for t in then} & {t.offset for t in other}
    assert model.arena_bytes < sum(t.nbytes for t in (*then, *other))


def test_verifier_rejects_a_corrupted_branch_plan() -> None:
    _, model = _model()
    kernels = {k.name: k for k in model.kernels}

    def written(i: int) -> list[int]:
        """The arguments of call ``i`` that write output 0."""
        k = kernels[model.calls[i].kernel]
        stored = stored_buffers(k.body)
        return [j for j, (r, p) in enumerate(zip(model.calls[i].args, k.params))
                if r.kind is ArgKind.OUTPUT and r.index == 0 and p.name in stored]
    # the outer if of the first result
    br = next(b for b in model.branches if any(written(i) for i in range(b.mid, b.end)))
    bad = [dataclasses.replace(br, mid=br.begin),                 # an empty then part
           dataclasses.replace(br, end=len(model.calls) + 1),     # past the calls
           dataclasses.replace(br, cond=dataclasses.replace(br.cond, dtype=DType.FLOAT32))]
    for b in bad:
        with pytest.raises(AssertionError, match="branch"):
            verify_model_plan(dataclasses.replace(model, branches=tuple(
                b if x is br else x for x in model.branches)))
    # spans that cross
    cross = BranchSpan(br.mid, br.end, br.end + 1, br.cond)
    with pytest.raises(AssertionError, match="overlap without nesting"):
        verify_model_plan(dataclasses.replace(model, branches=(*model.branches, cross)))
    # the else part writing its first result where the then part writes the second
    k = next(i for i in range(br.mid, br.end) if written(i))
    call = model.calls[k]
    args = tuple(dataclasses.replace(r, index=1) if j in written(k) else r
                 for j, r in enumerate(call.args))
    calls = (*model.calls[:k], dataclasses.replace(call, args=args), *model.calls[k + 1:])
    with pytest.raises(AssertionError, match="only its"):
        verify_model_plan(dataclasses.replace(model, calls=calls))


def test_gradient_of_an_if_compiles_without_a_pool() -> None:
    """First-order gradients of ``if`` are ``if``\\ s of the branches'
    tapes: static ifs, compiled on the arena; C equals the interpreter
    (which equals central differences, tests/passes/test_gradient.py)."""
    grad = aot.gradient(aot.parse(IF_PROGRAM))
    model = plan(grad, "gif")
    assert model.program is None and model.pool_bytes == 0 and len(model.branches) >= 2
    fn = aot.load(aot.compile(grad, tempfile.mkdtemp(prefix="aot-gif-"), name="gif"))
    for case in (0, 1, 2):
        args = if_args(case)
        (r, gs), (wr, ws) = fn(*args), aot.interpret(grad, *args)
        np.testing.assert_allclose(r, wr, rtol=1e-12)
        for g, w in zip(gs, ws):
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)


def test_host_profile_of_a_branch_is_refused() -> None:
    """Per-call host timings assume each call runs once; calls in a branch
    may not run at all."""
    from aot.diagnostics import DiagnosticError
    from aot.profiler import profile_module

    mod = aot.parse("""
    def @main(%x: Tensor[(4), float32], %c: bool) { if (%c) { exp(%x) } else { log(%x) } }""")
    with pytest.raises(DiagnosticError, match="has loops or branches"):
        profile_module(mod, target="host", name="sifs_prof")
