"""Helpers shared by the pass tests (tests/passes/test_*.py): typing a
module, running a pass with options, the operators a module calls, the
interpreter's values before and after a pass, and deep inputs (10,000-deep
let chains and shared graphs) built without recursion.

Imported as ``from pass_helpers import ...`` (pytest puts this folder on
``sys.path``, as tests/emit does for its harnesses)."""

from __future__ import annotations

import collections

import numpy as np

import aot
from aot import builder as B
from aot.ir.expr import Call, Expr, Let, Op, Var
from aot.ir.module import IRModule
from aot.ir.structural import assert_structural_equal
from aot.ir.types import TensorType
from aot.ir.visitor import post_order
from aot.passes.bind_params import bind_params
from aot.passes.manager import PassContext, run_pass
from aot.values import Closure, ConstructorValue, values_equal

# ---------------------------------------------------------------- modules


def typed(text: str, params: dict | None = None, *, source_name: str = "<string>") -> IRModule:
    """``text`` parsed and type-inferred; ``params`` (name -> array) bound
    into ``@main`` as constants, and the result inferred again."""
    mod = aot.infer_types(aot.parse(text, source_name=source_name))
    return aot.infer_types(bind_params(mod, params, "main")) if params else mod


def main_module(sig: str, body: str, params: dict) -> IRModule:
    """``def @main(sig) { body }`` with ``params`` bound (see :func:`typed`)."""
    return typed(f"def @main({sig}) {{\n  {body}\n}}\n", params)


def run_with_options(name: str, mod: IRModule, **options: object) -> IRModule:
    """Pass ``name`` on ``mod`` through the pass manager with ``options``,
    the result verified well formed and well typed."""
    with PassContext(options={name: options}, verify=True):
        return run_pass(name, mod)


def op_names(mod: IRModule) -> list[str]:
    """The operators ``@main`` calls, one entry per call node, in post-order."""
    return [n.op.name for n in post_order(mod["main"])
            if isinstance(n, Call) and isinstance(n.op, Op)]


def op_counts(mod: IRModule) -> collections.Counter:
    """How many call nodes of each operator ``@main`` has."""
    return collections.Counter(op_names(mod))


# ----------------------------------------------------------------- values

def leaves(value: object) -> list:
    """The tensors of a (nested) tuple value, left to right."""
    if isinstance(value, tuple):
        return [leaf for v in value for leaf in leaves(v)]
    return [value]


def assert_same_values(before: IRModule, after: IRModule, *args: object) -> None:
    """The interpreter gives the same tensors (bit for bit, same dtypes)
    for ``before`` and ``after`` on ``args``."""
    want = leaves(aot.interpret(before, *args))
    got = leaves(aot.interpret(after, *args))
    assert len(want) == len(got)
    for w, g in zip(want, got):
        assert w.dtype == g.dtype
        np.testing.assert_array_equal(g, w)


def assert_close(before: IRModule, after: IRModule, *args: object, exact: bool = False) -> None:
    """The interpreter's results on ``args`` equal (``exact``) or equal to
    float rounding (rtol = atol = 1e-5)."""
    want, got = aot.interpret(before, *args), aot.interpret(after, *args)
    if exact:
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def assert_close_on_random_args(before: IRModule, after: IRModule, seed: int = 0) -> None:
    """``before`` and ``after`` (tensor parameters only) give tensors of the
    same shapes and dtypes, equal to float rounding, on standard-normal
    arguments."""
    rng = np.random.default_rng(seed)
    args = []
    for p in before["main"].params:
        t = p.checked_type
        assert isinstance(t, TensorType)
        args.append(rng.standard_normal(t.shape).astype(t.dtype.np))
    want, got = leaves(aot.interpret(before, *args)), leaves(aot.interpret(after, *args))
    assert len(want) == len(got)
    for w, g in zip(want, got):
        assert w.shape == g.shape and w.dtype == g.dtype
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def check_rewrite(name: str, before_text: str, expected_text: str, *, params: dict | None = None,
                  expected_params: dict | None = None, **options: object) -> IRModule:
    """Pass ``name`` (with ``options``) turns ``before_text`` into
    ``expected_text`` (structurally) and keeps the values on random
    arguments; the result."""
    before = typed(before_text, params)
    after = run_with_options(name, before, **options)
    assert_structural_equal(after, typed(expected_text, expected_params))
    assert_close_on_random_args(before, after)
    return after


def random_args(mod: IRModule, seed: int = 0) -> list[np.ndarray]:
    """Arguments for ``@main``'s tensor parameters: booleans, floats from a
    standard normal, integers in [0, 4)."""
    rng = np.random.default_rng(seed)
    out = []
    for p in mod["main"].params:
        t = p.checked_type
        assert isinstance(t, TensorType), t
        if t.dtype.is_bool:
            out.append(rng.integers(0, 2, t.shape).astype(np.bool_))
        elif t.dtype.is_float:
            out.append(rng.standard_normal(t.shape).astype(t.dtype.np))
        else:
            out.append(rng.integers(0, 4, t.shape).astype(t.dtype.np))
    return out


def same_value(a: object, b: object, *, closures: bool = True) -> bool:
    """Interpreter results equal: tuples element-wise, ADT values by
    constructor name and fields, tensors by ``values_equal``.  A closure
    matches any closure when ``closures`` (a pass changes the function
    object), and nothing otherwise (results that must be first-order)."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if isinstance(x, tuple):
            if not isinstance(y, tuple) or len(x) != len(y):
                return False
            stack.extend(zip(x, y))
        elif isinstance(x, ConstructorValue):
            if not isinstance(y, ConstructorValue) or x.constructor.name != y.constructor.name:
                return False
            stack.extend(zip(x.fields, y.fields))
        elif isinstance(x, Closure):
            if not closures or not isinstance(y, Closure):
                return False
        elif not values_equal(x, y):
            return False
    return True


# ------------------------------------------------------------ deep inputs

def deep_let_chain(n: int) -> tuple[Var, Expr]:
    """``let %v0 = add(%x, 1f); ...; let %v(n-1) = add(%v(n-2), 1f); %v(n-1)``
    over a float32 ``%x``: (``%x``, the chain)."""
    x = B.var("x", "float32")
    vars_ = [x] + [B.var(f"v{i}") for i in range(n)]
    body: Expr = vars_[-1]
    for k in range(n, 0, -1):
        body = Let(vars_[k], B.add(vars_[k - 1], 1.0), body)
    return x, body


def shared_graph(n: int) -> tuple[Var, Expr]:
    """A chain of ``n`` maximum nodes over a float32 ``%x``, each node used
    by the next two (a graph, not a tree): (``%x``, the last node)."""
    x = B.var("x", "float32")
    a, b = x, B.negative(x)
    for _ in range(n):
        a, b = b, B.maximum(a, b)
    return x, b


# ------------------------------------------------------------- programs

#: TVM's reference program (test_ref of the normal-form passes): effects
#: only, nothing to share or move.
TVM_REF_PROGRAM = """def @main() {
             let %i = ref(1); let %iv = ref_read(%i); let %u = ref_write(%i, 2);
             let %uv = ref_read(%i); add(%iv, %uv)
           }"""
