"""1-d, 3-d and adaptive pools (aot/emit/lower/ops/nn_pool.py,
nn_pool_adaptive.py) compiled to C against the interpreter, every row of
tests/cases/pool_nd.py in float32 and int8: layouts, strides, padding,
dilation, ceil_mode, count_include_pad, windows wholly in the padding,
overlapping adaptive windows.  One build for all of them."""

from __future__ import annotations

from c_harness import check_cases
from cases import pool_nd as table
from cases.common import attr_text
from test_ops_c import case


def pool_cases():
    out = []
    for dtype in table.DTYPES:
        for suffix, shape, attrs in table.WINDOWS:
            for kind in ("max", "avg"):
                op, a = table.window_op(kind, suffix, attrs)
                out.append(case(f"{op}:{shape}-{dtype}-{attr_text(a)}", [("x", shape, dtype)],
                                f"{op}(%x, {attr_text(a)})"))
        for suffix, shape, attrs in table.ADAPTIVE:
            for kind in ("max", "avg"):
                op = f"nn.adaptive_{kind}_pool{suffix}"
                body = f"{op}(%x, {attr_text(attrs)})" if attrs else f"{op}(%x)"
                out.append(case(f"{op}:{shape}-{dtype}-{attr_text(attrs)}",
                                [("x", shape, dtype)], body))
    return out


def test_pools_nd():
    check_cases(pool_cases(), "pool_nd")
