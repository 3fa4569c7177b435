"""PartialEvaluate on by default (opt level 3, issue 17 point 3) on a
closure-passing program, end to end: examples/list_fold.relay maps a
closure capturing a tensor over a list, folds with another, counts in a
reference and matches on the reversed list.  PartialEvaluate removes every
closure, ADT and reference: the PROGRAM pipeline's output is plain
dataflow, and the compiled C gives the interpreter's values.  One C build."""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path

import numpy as np

import aot
from aot.compiler import _context, is_dataflow
from aot.ir.expr import Function
from aot.ir.visitor import post_order
from aot.passes.bind_params import bind_params
from aot.passes.manager import PassContext
from aot.passes.pipelines import PROGRAM
from aot.values import values_equal

ROOT = Path(__file__).resolve().parents[2]
LIST_FOLD = ROOT / "examples" / "list_fold.relay"


def _mod() -> aot.IRModule:
    return aot.parse(LIST_FOLD.read_text(), source_name="list_fold.relay")


def _closures(mod: aot.IRModule) -> int:
    return sum(isinstance(n, Function) and n is not f and not n.attrs.get("Primitive")
               for f in mod.functions.values() for n in post_order(f))


@functools.cache
def _compiled():
    return aot.load(aot.compile(_mod(), tempfile.mkdtemp(prefix="aot-pe-"), name="listfold"))


def _args() -> tuple[np.ndarray, np.ndarray]:
    return (np.array([1.0, -2.0, 0.5], np.float32), np.array([0.25, 3.0, -1.5], np.float32))


def _program_pipeline() -> aot.IRModule:
    """What the PROGRAM pipeline makes of the example under the current
    context (what the backend choice looks at)."""
    return PROGRAM(bind_params(_mod(), {}, "main"), _context(None, "main"))


def test_partial_evaluation_leaves_plain_dataflow() -> None:
    with PassContext(opt_level=3, disabled=["PartialEvaluate"]):
        without = _program_pipeline()
    assert _closures(without) >= 3 and not is_dataflow(without)
    program = _program_pipeline()              # the default: opt level 3
    assert _closures(program) == 0
    assert list(program.functions) == [program.get_global_var("main")]
    assert is_dataflow(program)


def test_closure_passing_program_compiles_and_matches_the_interpreter() -> None:
    a, b = _args()
    want = aot.interpret(_mod(), a, b)
    fn = _compiled()
    for _ in range(2):
        assert values_equal(fn(a, b), want)


def test_closure_passing_program_takes_the_dataflow_backend() -> None:
    """The dataflow backend's models have no object pool."""
    assert not hasattr(_compiled(), "pool_in_use")
