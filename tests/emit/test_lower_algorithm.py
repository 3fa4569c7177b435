"""Lowerings of argsort, sort and topk (aot/emit/lower/ops/algorithm.py)
against the interpreter: stability in both directions, NaN / -0.0 / inf
ordering, every axis, k, ret_type and index dtype, both algorithms
(selection for small k, merge sort otherwise) over row lengths around
powers of two, fused prologues and epilogues, scratch use, and the printed
C compiled with gcc."""

from __future__ import annotations

import numpy as np
import pytest

import aot
from aot.emit.kernel import ir as K
from aot.emit.c.printer import print_kernel
from aot.emit.kernel.walk import walk_stmts
from aot.emit.lower.group import lower_group
from aot.emit.kernel.simplify import simplify_kernel
from kernel_c_harness import build, call
from cases import algorithm as table
from cases.common import as_text
from lowering_harness import assert_close, check_lowering, lower_main, main_as_group


def ttype(shape: tuple, dtype: str) -> str:
    dims = ", ".join(str(d) for d in shape)
    return f"Tensor[({dims}{',' if len(shape) == 1 else ''}), {dtype}]"


def program(shape: tuple, dtype: str, body: str) -> str:
    return f"def @main(%x: {ttype(shape, dtype)}) {{ {body} }}"


def data(shape: tuple, dtype: str, seed: int) -> np.ndarray:
    return table.tied_values(np.random.default_rng(seed), shape, dtype)


def seed_of(*parts: object) -> int:
    return sum(ord(c) for c in repr(parts))


def scratch_names(group) -> list[str]:
    return [b.name.rstrip("0123456789") for b in group.scratch]


# ======================================================= argsort / sort

@pytest.mark.parametrize("op", table.SORTS)
@pytest.mark.parametrize("ascending", [True, False])
@pytest.mark.parametrize("shape,axis", table.SHAPES)
def test_argsort_and_sort(op, ascending, shape, axis):
    dtype = "float32"
    text = program(shape, dtype, f"{op}(%x, axis={axis}, is_ascend={ascending})")
    check_lowering(text, [data(shape, dtype, seed_of(op, shape, axis))])


@pytest.mark.parametrize("op", table.SORTS)
@pytest.mark.parametrize("dtype", table.DTYPES)
@pytest.mark.parametrize("ascending", [True, False])
def test_dtypes(op, dtype, ascending):
    shape = (3, 7)
    text = program(shape, dtype, f"{op}(%x, is_ascend={ascending})")
    check_lowering(text, [data(shape, dtype, seed_of(op, dtype))])


@pytest.mark.parametrize("n", table.ROW_LENGTHS)
@pytest.mark.parametrize("ascending", [True, False])
def test_row_lengths(n, ascending):
    """Merge passes with partial runs (n not a power of two), the final
    order in either half of the scratch (odd and even pass counts)."""
    text = program((2, n), "float32", f"argsort(%x, is_ascend={ascending})")
    check_lowering(text, [data((2, n), "float32", n)])


def test_stability_and_nan_order_in_both_directions():
    x = np.array([[1, 3, 2, 3, 1, 2, 3, 1]], np.int32)
    f = np.array([[np.nan, 1.0, np.nan, -np.inf, -0.0, 0.0, np.inf, 1.0]], np.float32)
    for asc in (True, False):
        check_lowering(program((1, 8), "int32", f"argsort(%x, is_ascend={asc})"), [x])
        check_lowering(program((1, 8), "float32", f"argsort(%x, is_ascend={asc})"), [f])
        check_lowering(program((1, 8), "float32", f"sort(%x, is_ascend={asc})"), [f])


@pytest.mark.parametrize("dtype", table.INDEX_DTYPES)
def test_argsort_index_dtype(dtype):
    shape = (2, 6)
    group = check_lowering(program(shape, "float32", f'argsort(%x, dtype="{dtype}")'),
                           [data(shape, "float32", 3)])
    assert group.outputs[0].dtype.value == dtype


def test_index_dtype_too_narrow_wraps():
    """Indices beyond int8 wrap, as the reference's conversion does."""
    x = -np.arange(200, dtype=np.float32)
    check_lowering(program((200,), "float32", 'argsort(%x, dtype="int8")'), [x])


@pytest.mark.parametrize("seed", range(4))
def test_long_random_rows(seed):
    x = np.random.default_rng(seed).standard_normal((2, 40)).astype(np.float32)
    x[0, ::7] = np.nan
    x[1, ::5] = x[1, 3]
    asc = bool(seed % 2)
    check_lowering(program((2, 40), "float32", f"sort(%x, axis=1, is_ascend={asc})"), [x])


# ================================================================ topk

@pytest.mark.parametrize("ret_type", table.RET_TYPES)
@pytest.mark.parametrize("shape,attrs", as_text(table.TOPK))
def test_topk(ret_type, shape, attrs):
    text = program(shape, "float32", f'topk(%x, {attrs}, ret_type="{ret_type}")')
    check_lowering(text, [data(shape, "float32", seed_of(shape, attrs))])


@pytest.mark.parametrize("k", [1, 2, 6])
@pytest.mark.parametrize("dtype", table.TOPK_DTYPES)
def test_topk_dtypes(k, dtype):
    shape = (3, 6)
    text = program(shape, dtype, f'topk(%x, k={k}, dtype="int64")')
    check_lowering(text, [data(shape, dtype, seed_of(k, dtype))])


def test_topk_selection_with_ties_and_nans():
    """Successive selection scans must step over equal values in index
    order, NaN first when descending and last when ascending."""
    x = np.array([[2.0, np.nan, 2.0, 1.0, np.nan, 2.0, -0.0, 0.0, 2.0]], np.float32)
    for k in (1, 2, 3, 4):
        for asc in (True, False):
            check_lowering(program((1, 9), "float32", f"topk(%x, k={k}, is_ascend={asc})"), [x])


def test_algorithm_choice_and_scratch():
    """Selection needs no scratch; merge sort needs 2n indices, plus a copy
    of the row when a prologue is fused into the input."""
    _, sel = lower_main(program((2, 16), "float32", "topk(%x, k=4)"))
    assert sel.scratch == ()
    _, merge = lower_main(program((2, 16), "float32", "topk(%x, k=5)"))
    assert [(b.dtype.value, b.shape) for b in merge.scratch] == [("int32", (32,))]
    _, fused = lower_main(program((2, 16), "float32", "sort(exp(%x))"))
    assert [(b.dtype.value, b.shape) for b in fused.scratch] == [("int32", (32,)),
                                                                 ("float32", (16,))]


def test_merge_sort_is_one_pass_loop():
    """The passes are a loop (not unrolled), the body stores into the
    scratch halves; loop extents of the row are constants."""
    _, group = lower_main(program((3, 100), "float32", "argsort(%x)"))
    kernel = simplify_kernel(group.kernel)
    fors = [s for s in walk_stmts(kernel.body) if isinstance(s, K.For)]
    passes = [f for f in fors if f.var.name.startswith("pass")]
    assert len(passes) == 1 and int(passes[0].extent.value) == 7    # ceil(log2 100)
    assert int(fors[0].extent.value) == 3                   # rows


# ===================================================== prologue / epilogue

FUSED = [
    ("sort(exp(%x), is_ascend=False)", (2, 6)),
    ("argsort(negative(%x))", (2, 6)),
    ("topk(multiply(%x, 2f), k=1)", (2, 6)),
    ("topk(abs(%x), k=5, axis=0)", (6, 2)),
    # epilogues: elementwise on the anchor's output shape
    ("add(sort(%x), 1f)", (2, 6)),
    ("cast(argsort(%x, is_ascend=False), dtype=\"float32\")", (2, 6)),
    ("multiply(topk(%x, k=2, ret_type=\"values\"), 3f)", (2, 6)),
    ("add(topk(%x, k=4, ret_type=\"indices\"), 10)", (2, 6)),
]


@pytest.mark.parametrize("body,shape", FUSED)
def test_fused_prologue_and_epilogue(body, shape):
    group = check_lowering(program(shape, "float32", body), [data(shape, "float32", 5)])
    assert group.anchor in ("sort", "argsort", "topk")
    print_kernel(simplify_kernel(group.kernel))


# ================================================================ C

C_CASES = [
    ((2, 8), "float32", "argsort(%x)"),
    ((2, 8), "float32", "argsort(%x, is_ascend=False, dtype=\"int64\")"),
    ((9, 2), "float32", "sort(%x, axis=0)"),
    ((2, 7), "float16", "sort(%x, is_ascend=False)"),
    ((2, 7), "int8", "sort(%x)"),
    ((2, 7), "bool", "argsort(%x)"),
    ((2, 8), "float32", "topk(%x, k=1)"),
    ((2, 8), "float32", "topk(%x, k=3, is_ascend=True)"),
    ((2, 8), "float64", "topk(%x, k=5)"),
    ((2, 8), "uint8", "topk(%x, k=2, ret_type=\"indices\", dtype=\"uint8\")"),
    ((2, 8), "float32", "sort(exp(%x))"),
    ((2, 8), "float32", "add(argsort(%x), 1)"),
    ((1, 33), "float32", "argsort(%x, is_ascend=False)"),
]


def test_printed_c_matches_the_interpreter(tmp_path):
    cases = []
    for n, (shape, dtype, body) in enumerate(C_CASES):
        mod = aot.infer_types(aot.parse(program(shape, dtype, body)))
        group = lower_group(main_as_group(mod), f"k{n}")
        cases.append((mod, group, simplify_kernel(group.kernel), data(shape, dtype, n)))
    lib = build([k for _, _, k, _ in cases], tmp_path, "algorithm")
    for mod, group, kernel, x in cases:
        arrays = {group.inputs[0].name: np.ascontiguousarray(x).reshape(-1).copy()}
        for b in (*group.outputs, *group.scratch):
            arrays[b.name] = np.zeros(b.size, b.dtype.np)
        call(lib, kernel, arrays)
        result = aot.interpret(mod, x)
        wants = result if isinstance(result, tuple) else (result,)
        for b, want in zip(group.outputs, wants):
            want = np.asarray(want)
            # exact but for libm's expf against NumPy's in the fused case
            assert_close(arrays[b.name].reshape(want.shape), want, 1e-6, 0, kernel.name)
