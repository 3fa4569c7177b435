"""Lowerings of the reductions (aot/emit/lower/ops/reduce.py) against the
interpreter: every operator over a table of axis forms (None, lists,
negative axes, keepdims, exclude, empty and 0-d cases) and dtypes, the
documented NaN / tie / wrap semantics, fused prologues and epilogues, the
shape of the generated loops, and the printed C compiled with gcc."""

from __future__ import annotations

import numpy as np
import pytest

import aot
from aot.emit.c.printer import print_kernel
from aot.emit.lower.group import lower_group
from aot.emit.kernel.simplify import simplify_kernel
from aot.emit.kernel import ir as K
from aot.ir.dtype import DType
from aot.emit.kernel.walk import stmt_exprs, walk_exprs, walk_stmts
from kernel_c_harness import build, call
from cases import reduce as table
from cases.common import as_text, program
from lowering_harness import (assert_close, check_lowering, lower_main, main_as_group,
                              run_lowered)

#: (rtol, atol) per float dtype: the reference sums in float64 pairwise, the
#: kernel in double sequentially; both round once to the dtype
TOL = {"float16": (2e-3, 2e-3), "float32": (2e-6, 1e-6), "float64": (1e-12, 1e-12)}


def call_text(op: str, args: str, attrs: str) -> str:
    return f"{op}({args}{', ' + attrs if attrs else ''})"


def data(shape: tuple, dtype: str, seed: int, op: str = "sum") -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.startswith(("int", "uint")):
        info = np.iinfo(dtype)
        lo, hi = (-3, 4) if op == "prod" else (max(int(info.min), -120), min(int(info.max), 120))
        if dtype.startswith("uint"):
            lo = 0
        return rng.integers(lo, hi, shape).astype(dtype)
    if op == "prod":
        return rng.uniform(0.5, 1.5, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def tol(dtype: str) -> dict[str, float]:
    rtol, atol = TOL.get(dtype, (0.0, 0.0))
    return {"rtol": rtol, "atol": atol}


def seed_of(*parts: object) -> int:
    return sum(ord(c) for c in repr(parts))


# ================================================================ tables

@pytest.mark.parametrize("op", table.REDUCERS)
@pytest.mark.parametrize("shape,attrs", as_text(table.AXES))
def test_axis_forms(op, shape, attrs):
    dtype = "float32"
    text = program([("x", shape, dtype)], call_text(op, "%x", attrs))
    check_lowering(text, [data(shape, dtype, seed_of(op, shape, attrs), op)], **tol(dtype))


@pytest.mark.parametrize("op,dtype", [(op, dt) for op, dts in table.DTYPES.items()
                                      for dt in dts])
@pytest.mark.parametrize("shape,attrs", as_text(table.DTYPE_AXES))
def test_dtypes(op, dtype, shape, attrs):
    text = program([("x", shape, dtype)], call_text(op, "%x", attrs))
    check_lowering(text, [data(shape, dtype, seed_of(op, dtype, shape), op)], **tol(dtype))


@pytest.mark.parametrize("op", table.ARG_REDUCERS)
@pytest.mark.parametrize("last", [False, True])
@pytest.mark.parametrize("shape,attrs", as_text(table.nonscalar(table.AXES)))
def test_arg_reductions(op, last, shape, attrs):
    attrs = ", ".join(a for a in (attrs, f"select_last_index={last}") if a)
    text = program([("x", shape, "int8")], call_text(op, "%x", attrs))
    x = np.random.default_rng(seed_of(op, shape)).integers(-2, 3, shape).astype(np.int8)  # ties
    check_lowering(text, [x])


@pytest.mark.parametrize("op", table.ARG_REDUCERS)
@pytest.mark.parametrize("dtype", table.ARG_DTYPES)
@pytest.mark.parametrize("last", [False, True])
def test_arg_reduction_dtypes(op, dtype, last):
    shape = (3, 6)
    x = data(shape, dtype, seed_of(op, dtype))
    if dtype.startswith("float"):
        x[0, 1] = x[0, 4] = np.nan     # the first / last NaN wins
        x[1, :] = x[1, 2]               # all equal: first / last index
        x[2, :] = -np.inf if op == "argmax" else np.inf   # the identity itself
    text = program([("x", shape, dtype)],
                   call_text(op, "%x", f"axis=[-1], select_last_index={last}"))
    check_lowering(text, [x])


@pytest.mark.parametrize("op", table.STATISTICS)
@pytest.mark.parametrize("dtype", table.FLOATS)
@pytest.mark.parametrize("unbiased", [False, True])
@pytest.mark.parametrize("shape,attrs,mean_shape", as_text(table.VARIANCE_AXES))
def test_variance_and_std(op, dtype, unbiased, shape, attrs, mean_shape):
    attrs = ", ".join(a for a in (attrs, f"unbiased={unbiased}") if a)
    text = program([("x", shape, dtype), ("m", mean_shape, dtype)], call_text(op, "%x, %m", attrs))
    seed = seed_of(op, dtype, shape, attrs)
    x = data(shape, dtype, seed)
    m = data(mean_shape, dtype, seed + 1) * np.asarray(0.1, dtype)
    check_lowering(text, [x, m], **tol(dtype))


@pytest.mark.parametrize("dtype", table.FLOATS)
@pytest.mark.parametrize("shape,attrs", as_text(table.LOGSUMEXP_AXES))
def test_logsumexp(dtype, shape, attrs):
    text = program([("x", shape, dtype)], call_text("logsumexp", "%x", attrs))
    check_lowering(text, [data(shape, dtype, seed_of(dtype, shape)) * np.asarray(3, dtype)],
                   **tol(dtype))


def test_logsumexp_infinities_and_nan():
    x = np.array([[1000.0, 1000.0, -np.inf], [-np.inf, -np.inf, -np.inf],
                  [np.inf, 1.0, 2.0], [np.nan, 1.0, 2.0]], np.float32)
    check_lowering(program([("x", (4, 3), "float32")], "logsumexp(%x, axis=[1])"), [x])


# ============================================================ semantics

def test_integer_sum_and_mean_wrap_and_truncate():
    check_lowering(program([("x", (2, 2), "int8")], "sum(%x, axis=[1])"),
                   [np.array([[100, 100], [-100, -100]], np.int8)])
    check_lowering(program([("x", (2, 2), "int8")], "mean(%x, axis=[1])"),
                   [np.array([[100, 100], [-3, -4]], np.int8)])
    check_lowering(program([("x", (2,), "uint8")], "sum(%x)"), [np.array([200, 100], np.uint8)])
    check_lowering(program([("x", (2,), "int64")], "sum(%x)"),
                   [np.array([2**62, 2**62], np.int64)])
    check_lowering(program([("x", (2,), "uint64")], "prod(%x)"),
                   [np.array([2**32, 2**32], np.uint64)])


@pytest.mark.parametrize("dtype,n", [("int8", 128), ("int8", 130), ("int16", 40000)])
def test_integer_mean_of_more_elements_than_the_dtype_counts(dtype, n):
    """The count does not fit the dtype: the division is done in 64 bits
    (-128 / 128 is -1, not 0)."""
    x = np.zeros(n, dtype)
    x[0] = np.iinfo(dtype).min                        # the wrapped sum is the extreme
    check_lowering(program([("x", (n,), dtype)], "mean(%x)"), [x])


def test_unsigned_mean_of_more_elements_than_the_dtype_counts():
    """Checked against the documented rule directly: the interpreter's
    reference raises for an unsigned count beyond the dtype (NumPy 2 will
    not mix a uint8 array with 300)."""
    x = np.full(300, 255, np.uint8)
    x[:2] = [7, 9]
    _, group = lower_main(program([("x", (300,), "uint8")], "mean(%x, keepdims=True)"))
    (got,) = run_lowered(group, [x])
    wrapped = int(x.astype(np.uint64).sum()) % 256
    np.testing.assert_array_equal(got, np.array([wrapped // 300], np.uint8))


def test_max_min_propagate_nan():
    x = np.array([[1.0, np.nan, 3.0], [1.0, 2.0, 3.0], [np.nan, np.nan, 0.0]], np.float32)
    for op in ("max", "min"):
        check_lowering(program([("x", (3, 3), "float32")], f"{op}(%x, axis=[1])"), [x])


def test_all_any_of_nan_and_negative_zero():
    x = np.array([[np.nan, 1.0], [-0.0, 2.0], [0.0, 0.0]], np.float32)
    for op in ("all", "any"):
        check_lowering(program([("x", (3, 2), "float32")], f"{op}(%x, axis=[1])"), [x])


def test_float_sum_accumulates_in_double():
    """A float32 accumulator would lose the 1.0s next to 2**24."""
    x = np.array([2.0**24] + [1.0] * 8, np.float32)
    group = check_lowering(program([("x", (9,), "float32")], "sum(%x)"), [x], rtol=0, atol=0)
    accs = [s.var for s in walk_stmts(group.kernel.body) if isinstance(s, K.Decl)]
    assert any(v.dtype is DType.FLOAT64 for v in accs)


# ===================================================== prologue / epilogue

FUSED = [
    ("sum(exp(%x), axis=[1])", (3, 4)),
    ("max(multiply(%x, 2f), axis=[0])", (3, 4)),
    ("mean(abs(%x), axis=[1], keepdims=True)", (3, 4)),
    ("argmax(negative(%x), axis=[1])", (3, 4)),
    ("logsumexp(add(%x, %x))", (3, 4)),
    ("min(add(%x, 1f), axis=[-1])", (2, 3)),
    # epilogues: elementwise ops on the anchor's output shape
    ("multiply(mean(%x, axis=[1]), 3f)", (3, 4)),
    ("sqrt(add(sum(exp(%x), axis=[1]), 1f))", (3, 4)),
    ("cast(argmin(%x, axis=[0]), dtype=\"float32\")", (3, 4)),
    ("subtract(max(%x, axis=[1], keepdims=True), 0.5f)", (3, 4)),
]


@pytest.mark.parametrize("body,shape", FUSED)
def test_fused_prologue_and_epilogue(body, shape):
    group = check_lowering(program([("x", shape, "float32")], body),
                           [data(shape, "float32", seed_of(body))])
    assert group.anchor is not None
    assert not group.scratch                # no intermediate tensor
    print_kernel(simplify_kernel(group.kernel))


def test_variance_with_a_fused_mean_input_expression():
    text = program([("x", (3, 4), "float32"), ("m", (3, 1), "float32")],
                   "std(exp(%x), multiply(%m, 2f), axis=[1])")
    check_lowering(text, [data((3, 4), "float32", 1), data((3, 1), "float32", 2)])


# ========================================================= kernel shape

def loops(stmt: K.Stmt) -> list[K.For]:
    return [s for s in walk_stmts(stmt) if isinstance(s, K.For)]


def test_loops_over_the_output_then_the_reduced_axes():
    """sum over axis 1 of (2, 3, 4): output loops (2, 4), one reduced loop
    of 3 inside them, constant bounds, the accumulator a scalar."""
    _, group = lower_main(program([("x", (2, 3, 4), "float32")], "sum(%x, axis=[1])"))
    kernel = simplify_kernel(group.kernel)
    fors = loops(kernel.body)
    assert [int(f.extent.value) for f in fors] == [2, 4, 3]
    assert all(isinstance(f.extent, K.Const) for f in fors)
    stores = [s for s in walk_stmts(kernel.body) if isinstance(s, K.Store)]
    assert [s.buffer.name for s in stores] == ["out"]


def test_last_axis_reduction_is_innermost_and_contiguous():
    _, group = lower_main(program([("x", (4, 8), "float32")], "sum(%x, axis=[-1])"))
    kernel = simplify_kernel(group.kernel)
    inner = loops(kernel.body)[-1]
    assert int(inner.extent.value) == 8
    c = print_kernel(kernel)
    assert f"p0[i1 * 8 + {inner.var.name}]" in c


def test_keepdims_mean_is_read_once_per_output_element():
    _, group = lower_main(program([("x", (2, 5), "float32"), ("m", (2, 1), "float32")],
                                  "variance(%x, %m, axis=[1])"))
    inner = loops(simplify_kernel(group.kernel).body)[-1]
    loads = [e for s in walk_stmts(inner.body) for e in _loads(s)]
    assert {b.name for b in loads} == {"p0"}


def _loads(s: K.Stmt) -> list[K.Buffer]:
    return [e.buffer for root in stmt_exprs(s) for e in walk_exprs(root) if isinstance(e, K.Load)]


# ================================================================ C

C_CASES = [
    ("sum", (3, 4), "float32", "axis=[1]"),
    ("sum", (3, 4), "int8", "axis=[0]"),
    ("sum", (2, 3), "float16", ""),
    ("prod", (3, 4), "int32", "axis=[1]"),
    ("prod", (3, 4), "float64", "axis=[1], keepdims=True"),
    ("mean", (3, 4), "float32", "axis=[-1]"),
    ("mean", (3, 4), "int16", "axis=[1]"),
    ("mean", (130,), "int8", ""),
    ("mean", (0, 2), "float32", "axis=[0]"),
    ("max", (3, 4), "float32", "axis=[1]"),
    ("max", (3, 4), "bool", "axis=[1]"),
    ("min", (3, 4), "uint8", "axis=[0, 1]"),
    ("min", (3, 4), "float16", "axis=[1]"),
    ("all", (3, 4), "float32", "axis=[1]"),
    ("any", (3, 4), "int8", "axis=[0]"),
    ("logsumexp", (3, 4), "float32", "axis=[1]"),
    ("argmax", (3, 4), "float32", "axis=[1]"),
    ("argmax", (3, 4), "float32", "axis=[1], select_last_index=True"),
    ("argmin", (3, 4), "int16", "axis=[0, 1], keepdims=True"),
    ("argmin", (3, 4), "bool", "axis=[1]"),
]


def test_printed_c_matches_the_interpreter(tmp_path):
    """All kernels of the table in one gcc build (-Werror), run through
    ctypes, compared with the interpreter."""
    cases = []
    for n, (op, shape, dtype, attrs) in enumerate(C_CASES):
        text = program([("x", shape, dtype)], call_text(op, "%x", attrs))
        mod = aot.infer_types(aot.parse(text))
        group = lower_group(main_as_group(mod), f"k{n}")
        x = data(shape, dtype, n)
        if dtype == "float32" and x.size:
            x.reshape(-1)[1] = np.nan
        cases.append((mod, group, simplify_kernel(group.kernel), x))
    cases.append(_variance_case(len(cases)))
    cases.append(_fused_case(len(cases)))
    lib = build([k for _, _, k, _ in cases], tmp_path, "reduce")
    for mod, group, kernel, x in cases:
        args = x if isinstance(x, tuple) else (x,)
        arrays = {b.name: np.ascontiguousarray(a, b.dtype.np).reshape(-1).copy()
                  for b, a in zip(group.inputs, args)}
        for b in (*group.outputs, *group.scratch):
            arrays[b.name] = np.zeros(b.size, b.dtype.np)
        call(lib, kernel, arrays)
        want = np.asarray(aot.interpret(mod, *args))
        got = arrays["out"].reshape(want.shape)
        assert_close(got, want, **tol(want.dtype.name), what=kernel.name)


def _variance_case(n: int):
    text = program([("x", (3, 4), "float32"), ("m", (3, 1), "float32")],
                   "std(%x, %m, axis=[1], unbiased=True)")
    mod = aot.infer_types(aot.parse(text))
    group = lower_group(main_as_group(mod), f"k{n}")
    return mod, group, simplify_kernel(group.kernel), (data((3, 4), "float32", 5),
                                                       data((3, 1), "float32", 6))


def _fused_case(n: int):
    text = program([("x", (3, 4), "float32")], "multiply(sum(exp(%x), axis=[1]), 0.5f)")
    mod = aot.infer_types(aot.parse(text))
    group = lower_group(main_as_group(mod), f"k{n}")
    return mod, group, simplify_kernel(group.kernel), data((3, 4), "float32", 7)
