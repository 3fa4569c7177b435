"""1-d, 3-d and adaptive pools and the 1-d and 3-d transposed and 3-d
convolutions (aot/emit/lower/ops/nn_pool.py, nn_pool_adaptive.py,
nn_conv.py, nn_conv_nd.py) compiled to C against the interpreter: every
row of tests/cases/pool_nd.py and conv_nd.py in float32 and int8 (layouts,
strides, padding, dilation, groups, ceil_mode, count_include_pad, windows
wholly in the padding, overlapping adaptive windows; every other pool row
in int8).  One build for all of them."""

from __future__ import annotations

from c_harness import check_cases
from cases import conv_nd
from cases import pool_nd as table
from cases.common import attr_text
from test_ops_c import case

#: float32 convolutions accumulate in float32 (nn_conv's design note)
TOL = {"float32": 2e-5}


def _rows(rows: list, dtype: str) -> list:
    """Every row in float32, every other one in int8 (the integer paths
    differ only in the accumulator and the division; tests/ops runs all)."""
    return rows if dtype == "float32" else rows[::2]


def pool_cases():
    out = []
    for dtype in table.DTYPES:
        for suffix, shape, attrs in _rows(table.WINDOWS, dtype):
            for kind in ("max", "avg"):
                op, a = table.window_op(kind, suffix, attrs)
                out.append(case(f"{op}:{shape}-{dtype}-{attr_text(a)}", [("x", shape, dtype)],
                                f"{op}(%x, {attr_text(a)})"))
        for suffix, shape, attrs in _rows(table.ADAPTIVE, dtype):
            for kind in ("max", "avg"):
                op = f"nn.adaptive_{kind}_pool{suffix}"
                body = f"{op}(%x, {attr_text(attrs)})" if attrs else f"{op}(%x)"
                out.append(case(f"{op}:{shape}-{dtype}-{attr_text(attrs)}",
                                [("x", shape, dtype)], body))
    return out


def conv_cases():
    out = []
    rows = [("nn.conv3d", *r) for r in conv_nd.CONV3D] + \
        [("nn.conv1d_transpose", *r) for r in conv_nd.TRANSPOSE1D] + \
        [("nn.conv3d_transpose", *r) for r in conv_nd.TRANSPOSE3D]
    for op, xs, ws, attrs in rows:
        for dtype, out_dtype in conv_nd.DTYPES:
            a = dict(attrs, out_dtype=out_dtype) if out_dtype else attrs
            tol = TOL.get(dtype)
            out.append(case(f"{op}:{xs}-{ws}-{dtype}-{attr_text(a)}",
                            [("x", xs, dtype), ("w", ws, dtype)],
                            f"{op}(%x, %w, {attr_text(a)})", rtol=tol, atol=tol))
    return out


def all_cases():
    return pool_cases() + conv_cases()


def test_pools_and_convolutions_nd():
    check_cases(pool_cases() + conv_cases(), "nd")
