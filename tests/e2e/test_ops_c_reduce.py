"""The reductions (aot/ir/ops/reduce.py) and the sorting operators
(aot/ir/ops/algorithm.py) compiled to C against the interpreter: every
axis form (None, lists, negative axes, keepdims, exclude, empty axes and
tensors, 0-d), the dtypes of tests/emit/test_lower_reduce.py, NaN / tie /
wrap semantics; argsort, sort and topk over axes, directions, k, ret_type
and index dtypes, with NaN, -0.0 and infinities among many ties.  One
build per test (see test_ops_c.py)."""

from __future__ import annotations

import numpy as np

from c_harness import check_cases
from cases import algorithm
from cases import reduce as table
from cases.common import as_text, attr_text
from test_ops_c import case, data, rng_for

F16_SUM_TOL = 3e-3


def call(op: str, args: str, attrs: str) -> str:
    return f"{op}({args}{', ' + attrs if attrs else ''})"


def reduce_input(name: str, op: str, shape, dtype: str) -> np.ndarray:
    rng = rng_for(name)
    if op == "prod":
        if np.dtype(dtype).kind == "f":
            return rng.uniform(0.5, 1.5, shape).astype(dtype)
        return data(rng, shape, dtype, lo=-3, hi=3)
    return data(rng, shape, dtype, lo=-120, hi=120)


def reduce_cases():
    out = []
    for op in table.REDUCERS:
        for shape, kw in table.AXES:
            attrs = attr_text(kw)
            name = f"{op}:float32-{shape}-{attrs}"
            out.append(case(name, [("x", shape, "float32")], call(op, "%x", attrs),
                            [reduce_input(name, op, shape, "float32")]))
        for dt in table.DTYPES[op]:
            for shape, kw in table.DTYPE_AXES:
                attrs = attr_text(kw)
                name = f"{op}:{dt}-{shape}-{attrs}"
                out.append(case(name, [("x", shape, dt)], call(op, "%x", attrs),
                                [reduce_input(name, op, shape, dt)],
                                rtol=F16_SUM_TOL if dt == "float16" else None))
    nan = np.array([[1.0, np.nan, 3.0], [1.0, 2.0, 3.0], [np.nan, np.nan, 0.0],
                    [-np.inf, np.inf, 0.0], [-0.0, 0.0, -0.0]], np.float32)
    for op in table.REDUCERS:
        out.append(case(f"{op}:nan-inf", [("x", (5, 3), "float32")], f"{op}(%x, axis=[1])",
                        [nan]))
    out += [
        case("sum:int8-wraps", [("x", (2, 2), "int8")], "sum(%x, axis=[1])",
             [np.array([[100, 100], [-100, -100]], np.int8)]),
        case("mean:int8-truncates", [("x", (2, 2), "int8")], "mean(%x, axis=[1])",
             [np.array([[100, 100], [-3, -4]], np.int8)]),
        case("sum:uint8-wraps", [("x", (2,), "uint8")], "sum(%x)",
             [np.array([200, 100], np.uint8)]),
        case("sum:int64-wraps", [("x", (2,), "int64")], "sum(%x)",
             [np.array([2**62, 2**62], np.int64)]),
        case("prod:uint64-wraps", [("x", (2,), "uint64")], "prod(%x)",
             [np.array([2**32, 2**32], np.uint64)]),
        case("mean:int8-128", [("x", (128,), "int8")], "mean(%x)",
             [np.array([-128] + [0] * 127, np.int8)]),
        case("mean:int16-40000", [("x", (40000,), "int16")], "mean(%x)",
             [np.array([-32768] + [0] * 39999, np.int16)]),
        case("mean:uint8-300", [("x", (300,), "uint8")], "mean(%x, keepdims=True)",
             [np.array([7, 9] + [255] * 298, np.uint8)]),
        case("sum:float32-needs-double", [("x", (9,), "float32")], "sum(%x)",
             [np.array([2.0**24] + [1.0] * 8, np.float32)], rtol=0, atol=0),
        case("sum:fused-exp", [("x", (3, 4), "float32")], "sum(exp(%x), axis=[1])"),
        case("max:fused-epilogue", [("x", (3, 4), "float32")],
             "subtract(max(multiply(%x, 2f), axis=[1], keepdims=True), 0.5f)"),
        case("mean:fused", [("x", (3, 4), "float32")], "multiply(mean(abs(%x), axis=[1]), 3f)"),
    ]
    return out


def arg_and_statistics_cases():
    out = []
    for op in table.ARG_REDUCERS:
        for last in [False, True]:
            for shape, kw in table.nonscalar(table.AXES):
                if 0 in shape:
                    continue
                attrs = attr_text({**kw, "select_last_index": last})
                name = f"{op}:int8-{shape}-{attrs}"
                out.append(case(name, [("x", shape, "int8")], call(op, "%x", attrs), lo=-2, hi=2))
            for dt in table.ARG_DTYPES:
                name = f"{op}:{dt}-{last}"
                x = data(rng_for(name), (3, 6), dt, lo=-3, hi=3)
                if dt.startswith("float"):
                    x[0, 1] = x[0, 4] = np.nan           # the first / last NaN wins
                    x[1, :] = x[1, 2]                    # all equal
                    x[2, :] = -np.inf if op == "argmax" else np.inf
                out.append(case(name, [("x", (3, 6), dt)],
                                f"{op}(%x, axis=[-1], select_last_index={last})", [x]))
        out.append(case(f"{op}:fused", [("x", (3, 4), "float32")],
                        f'cast({op}(negative(%x), axis=[1]), dtype="float32")'))
    for op in table.STATISTICS:
        for dt in table.FLOATS:
            for unbiased in [False, True]:
                for shape, kw, mshape in table.VARIANCE_AXES:
                    attrs2 = attr_text({**kw, "unbiased": unbiased})
                    name = f"{op}:{dt}-{shape}-{attrs2}-{mshape}"
                    rng = rng_for(name)
                    x = data(rng, shape, dt)
                    m = data(rng, mshape, dt) * np.asarray(0.1, dt)
                    out.append(case(name, [("x", shape, dt), ("m", mshape, dt)],
                                    call(op, "%x, %m", attrs2), [x, m],
                                    rtol=F16_SUM_TOL if dt == "float16" else None))
    out.append(case("std:fused-mean", [("x", (3, 4), "float32"), ("m", (3, 1), "float32")],
                    "std(exp(%x), multiply(%m, 2f), axis=[1])"))
    for dt in table.FLOATS:
        for shape, kw in table.LOGSUMEXP_AXES:
            attrs = attr_text(kw)
            name = f"logsumexp:{dt}-{shape}-{attrs}"
            x = data(rng_for(name), shape, dt) * np.asarray(3, dt)
            out.append(case(name, [("x", shape, dt)], call("logsumexp", "%x", attrs), [x],
                            rtol=F16_SUM_TOL if dt == "float16" else None))
    x = np.array([[1000.0, 1000.0, -np.inf], [-np.inf, -np.inf, -np.inf],
                  [np.inf, 1.0, 2.0], [np.nan, 1.0, 2.0]], np.float32)
    out.append(case("logsumexp:edges", [("x", (4, 3), "float32")], "logsumexp(%x, axis=[1])",
                    [x]))
    return out


# ========================================================== sort / topk

#: the row lengths of the sorting table this layer runs, argsort and sort
#: both (tests/emit runs them all, argsort only)
ROW_LENGTHS = [n for n in algorithm.ROW_LENGTHS if n in (1, 3, 9, 17, 33)]


def sort_cases():
    out = []

    def add(op, shape, dtype, attrs):
        name = f"{op}:{dtype}-{shape}-{attrs}"
        out.append(case(name, [("x", shape, dtype)], call(op, "%x", attrs),
                        [algorithm.tied_values(rng_for(name), shape, dtype)]))

    for op in algorithm.SORTS:
        for asc in [True, False]:
            for shape, axis in algorithm.SHAPES:
                add(op, shape, "float32", f"axis={axis}, is_ascend={asc}")
            for dt in algorithm.DTYPES:
                add(op, (3, 7), dt, f"is_ascend={asc}")
            for n in ROW_LENGTHS:
                add(op, (2, n), "float32", f"axis=1, is_ascend={asc}")
    for dt in algorithm.INDEX_DTYPES:
        add("argsort", (2, 6), "float32", f'dtype="{dt}"')
    out.append(case("argsort:int8-index-wraps", [("x", (200,), "float32")],
                    'argsort(%x, dtype="int8")', [-np.arange(200, dtype=np.float32)]))
    for ret in algorithm.RET_TYPES:
        for shape, attrs in as_text(algorithm.TOPK):
            add("topk", shape, "float32", f'{attrs}, ret_type="{ret}"')
    for k in [1, 3]:
        for dt in algorithm.TOPK_DTYPES:
            add("topk", (3, 7), dt, f'k={k}, dtype="int64"')
    add("topk", (2, 8), "uint8", 'k=2, ret_type="indices", dtype="uint8"')
    out += [
        case("sort:fused", [("x", (2, 6), "float32")], "exp(sort(negative(%x), axis=1))"),
        case("topk:fused", [("x", (2, 6), "float32")],
             'multiply(topk(abs(%x), k=2, ret_type="values"), 3f)'),
        case("argsort:fused", [("x", (2, 6), "float32")],
             "add(argsort(multiply(%x, 2f), is_ascend=False), 10)"),
    ]
    return out


def scan_cases():
    """cumsum and cumprod: every axis form, exclusive, dtype conversion,
    integer wrap-around, float16 rounding after every step, NaN and inf."""
    out = []
    for op in ("cumsum", "cumprod"):
        for dt in ("float32", "int8", "float16", "uint8", "float64"):
            for axis in (None, 0, -1, 1):
                for exclusive in (False, True):
                    name = f"{op}:{dt}-{axis}-{exclusive}"
                    given = "" if axis is None else f"axis={axis}, "
                    x = data(rng_for(name), (3, 4, 2), dt, lo=-4, hi=4) if op == "cumprod" \
                        else data(rng_for(name), (3, 4, 2), dt, lo=-120, hi=120)
                    out.append(case(name, [("x", (3, 4, 2), dt)],
                                    f"{op}(%x, {given}exclusive={exclusive})", [x]))
        out.append(case(f"{op}:widen", [("x", (2, 6), "int8")],
                        f'{op}(%x, axis=1, dtype="int32")',
                        [data(rng_for(op), (2, 6), "int8", lo=-128, hi=127)]))
        out.append(case(f"{op}:bool", [("x", (5,), "bool")], f'{op}(%x, dtype="int16")',
                        [np.array([True, False, True, True, False])]))
        out.append(case(f"{op}:specials", [("x", (6,), "float32")], f"{op}(%x, axis=0)",
                        [np.array([1.5, np.inf, -2, np.nan, 0.0, -0.0], np.float32)]))
        out.append(case(f"{op}:to-float16", [("x", (8,), "float32")],
                        f'{op}(%x, dtype="float16")',
                        [np.array([1e4, 3.3, 7.1, -2.2, 6e4, 1e-3, 9.9, 0.5], np.float32)]))
    out.append(case("cumsum:fused-input", [("x", (3, 4), "float32")],
                    "exp(cumsum(negative(%x), axis=1))", [data(rng_for("cf"), (3, 4), "float32")]))
    return out


def all_cases():
    return reduce_cases() + arg_and_statistics_cases() + sort_cases() + scan_cases()


def test_reductions():
    check_cases(reduce_cases(), "red")


def test_arg_reductions_variance_logsumexp():
    check_cases(arg_and_statistics_cases(), "red_arg")


def test_argsort_sort_topk():
    check_cases(sort_cases(), "sorting")


def test_cumsum_cumprod():
    check_cases(scan_cases(), "scans")
