"""Comparisons: LESS, LESS_EQUAL, GREATER, GREATER_EQUAL, EQUAL, NOT_EQUAL,
with NumPy broadcasting, giving bool tensors (a WHILE's condition, an
IF's).  Float and integer operands compare their values; quantized
operands compare their stored integers when both have the same
quantization parameters (the order of real values is then the order of
stored ones), and are refused otherwise."""

from __future__ import annotations

from ....ir.expr import Expr
from ..graph import Op
from ..registry import converter

_OPS = {"LESS": "less", "LESS_EQUAL": "less_equal", "GREATER": "greater",
        "GREATER_EQUAL": "greater_equal", "EQUAL": "equal", "NOT_EQUAL": "not_equal"}


@converter(*_OPS)
def convert_compare(op: Op) -> list[Expr]:
    a, b = op.input(0), op.input(1)
    if op.dtype(a) != op.dtype(b):
        raise op.error(f"the inputs have types {op.dtype(a)} and {op.dtype(b)}")
    qa, qb = op.tensor(0).quant, op.tensor(1).quant
    if (qa is None) != (qb is None) or (qa is not None and qb is not None and (
            qa.scale.tolist() != qb.scale.tolist() or
            qa.zero_point.tolist() != qb.zero_point.tolist())):
        raise op.error("quantized operands must have the same scale and zero point")
    return [op.call(_OPS[op.name], [a, b])]
