"""Static loops (aot.emit.lower.static_loop): tail-recursive local
functions over tensors of fixed shape compile to C loops over the static
arena -- no object pool -- and compute what the interpreter does.  One C
build for every case below."""

from __future__ import annotations

import tempfile

import numpy as np
import pytest

import aot
from aot.compiler import plan
from aot.diagnostics import DiagnosticError
from aot.profiler import profile_module

PROGRAM = """
#[version = "0.0.5"]
def @main(%x: Tensor[(4), float32], %n: int32) {
  // a swap of two states every iteration (a parallel assignment), the
  // condition leaving on true (the then branch exits)
  %0 = (let %swap = fn (%i: int32, %a: Tensor[(4), float32], %b: Tensor[(4), float32]) {
    if (%i >= %n) { (%a, %b) } else { %swap(%i + 1, %b, %a + %b) }
  };
  %swap(0, %x, %x * 2f));
  // a loop inside a loop: s += sum_j (x * j) for j < i, i < 3
  %1 = (let %outer = fn (%i: int32, %s: Tensor[(4), float32]) {
    if (%i < 3) {
      %2 = (let %inner = fn (%j: int32, %t: Tensor[(4), float32]) {
        if (%j < %i) { %inner(%j + 1, %t + %x * cast(%j, dtype="float32")) } else { %t }
      };
      %inner(0, %s));
      %outer(%i + 1, %2)
    } else { %s }
  };
  %outer(0, %x));
  // the same loop run twice; the second result drops the accumulator
  %3 = (let %twice = fn (%k: int32, %v: Tensor[(4), float32], %acc: Tensor[(4), float32]) {
    if (%k < 4) { %twice(%k + 1, %v * 0.5f, %acc + %v) } else { (%v, %acc) }
  };
  %4 = %twice(0, %x, %x);
  %5 = %twice(1, %x, %x);
  (%4.1, %5.0));
  // a tuple parameter, a loop-invariant exp(%x) (fused into the
  // iteration's kernel) and an exit branch that computes
  %6 = (let %pair = fn (%st: (int32, Tensor[(4), float32])) {
    if (%st.0 < %n) { %pair((%st.0 + 1, %st.1 * 0.5f + exp(%x))) } else { %st.1 - 1f }
  };
  %pair((0, %x)));
  (%0.0, %0.1, %1, %3.0, %3.1, %6)
}
"""


def test_static_loops_compile_without_a_pool() -> None:
    mod = aot.infer_types(aot.parse(PROGRAM))
    model = plan(mod, "sloops")
    assert model.program is None and model.pool_bytes == 0
    assert len(model.loops) == 6
    # the second run of %twice carries %v only: one copy step less per iteration
    last, first = model.loops[-2], model.loops[-3]
    assert last.end - last.begin == first.end - first.begin - 2
    fn = aot.load(aot.compile(mod, tempfile.mkdtemp(prefix="aot-sloops-"), name="sloops"))
    x = np.array([1.0, -2.0, 0.5, 3.0], np.float32)
    for n in (0, 1, 4, 5):
        want = aot.interpret(mod, x, np.int32(n))
        got = fn(x, np.int32(n))
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, np.asarray(w), rtol=1e-6)


def test_host_profile_of_a_loop_is_refused() -> None:
    """Per-call host timings assume each call runs once; a model with loops
    gets a diagnostic there (its Cortex-M profile gives the total)."""
    mod = aot.infer_types(aot.parse(PROGRAM))
    with pytest.raises(DiagnosticError, match="has loops"):
        profile_module(mod, target="host", name="sloops_prof")
