"""Lowerings of the elementwise family against the interpreter, on the
kernel-IR reference evaluator: the family's table derived from the
registry (tests/cases/elemwise.py), one row per operator: float32 for
every other operator, int32 for the rest, on a rotating broadcast shape.  tests/e2e compiles the wider slice to
C; this layer pins a failure to the lowering without a C compiler."""

from __future__ import annotations

import numpy as np
import pytest

from cases import elemwise
from lowering_harness import check_lowering

DTYPES = ["float32", "int32"]

def _one_row_each() -> list[elemwise.ElemwiseCase]:
    rows = elemwise.one_shape_each(elemwise.all_cases())
    ops = sorted({c.op for c in rows})
    have = {(c.op, c.dtype) for c in rows}
    # (float-only operators, such as fast_exp, take float32 whatever their turn)
    want = {op: DTYPES[i % 2] if (op, DTYPES[i % 2]) in have else DTYPES[1 - i % 2]
            for i, op in enumerate(ops)}
    return [c for c in rows if c.dtype == want[c.op]]


ROWS = _one_row_each()


def test_every_elementwise_operator_is_lowered_here():
    missing = sorted(elemwise.ops_with_cases() - {c.op for c in ROWS})
    assert not missing, (
        f"elementwise operators without a row in tests/emit: {missing}; "
        "their relations reject every shape of tests/cases/elemwise.py -- add one they accept")
    untabled = sorted({op.name for op in elemwise.elemwise_ops()} - elemwise.ops_with_cases())
    assert not untabled, (
        f"elementwise operators whose relations accept no row of tests/cases/elemwise.py: "
        f"{untabled}; add shapes or dtypes they accept to UNARY_SHAPES / BINARY_SHAPES")


@pytest.mark.parametrize("row", ROWS, ids=lambda c: c.name)
def test_lowering_matches_interpreter(row):
    rng = np.random.default_rng(len(row.name))
    args = []
    for s in row.shapes:
        if row.dtype == "float32":
            args.append(rng.standard_normal(s).astype(np.float32) * np.float32(3))
        else:
            args.append(rng.integers(-50, 50, s, endpoint=True).astype(np.int32))
    check_lowering(row.text, args, rtol=1e-5, atol=1e-6)
