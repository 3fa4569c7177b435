"""Bitwise logic and shifts: BitwiseAnd, BitwiseOr, BitwiseXor, BitwiseNot
(18) and BitShift (11), on the integer types.

They are ``bitwise_and``, ``bitwise_or``, ``bitwise_xor``, ``bitwise_not``
and ``left_shift`` / ``right_shift`` (BitShift's ``direction``), with
ONNX's multidirectional broadcasting.  ONNX's BitShift takes unsigned
types only; a shift by the width or more gives 0, as in NumPy (ONNX does
not say).
"""

from __future__ import annotations

from ....ir.expr import Expr
from ..graph import Node
from ..registry import converter


def _ints(node: Node, *xs: Expr) -> None:
    for x in xs:
        if not node.dtype(x).is_int:
            raise node.error(f"{node.op_type} takes integer tensors, got {node.dtype(x)}")


def _binary(op: str):
    def convert(node: Node) -> list[Expr]:
        a, b = node.input(0), node.input(1)
        _ints(node, a, b)
        return [node.call(op, [a, b])]
    return convert


converter("BitwiseAnd", (18,))(_binary("bitwise_and"))
converter("BitwiseOr", (18,))(_binary("bitwise_or"))
converter("BitwiseXor", (18,))(_binary("bitwise_xor"))


@converter("BitwiseNot", (18,))
def convert_bitwise_not(node: Node) -> list[Expr]:
    x = node.input(0)
    _ints(node, x)
    return [node.call("bitwise_not", [x])]


@converter("BitShift", (11,))
def convert_bit_shift(node: Node) -> list[Expr]:
    direction = node.attr("direction")
    ops = {"LEFT": "left_shift", "RIGHT": "right_shift"}
    if direction not in ops:
        raise node.unsupported("direction", direction, "must be LEFT or RIGHT")
    return _binary(ops[direction])(node)
