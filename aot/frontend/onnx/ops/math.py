"""Elementwise math, comparison and logic.

ONNX broadcasting is NumPy's, as the IR's broadcasting operators.  Choices
worth knowing:

* Div on integers truncates toward zero (onnxruntime's C++ division; the
  IR's ``divide``).  Mod with ``fmod=0`` is the integer remainder with
  the divisor's sign (``floor_mod``), with ``fmod=1`` the dividend's
  (``mod``, C ``fmod``); floats need ``fmod=1``, as the specification says.
* Pow's exponent may have another dtype than the base: it is cast to the
  base's dtype; an integer base with a float exponent is computed in
  float64 and truncated back (onnxruntime's ``std::pow``).
* Reciprocal is ``1 / x``; IsInf honours ``detect_negative`` and
  ``detect_positive``; variadic Min/Max/Sum/Mean fold left, Mean divides
  the sum by the count.

Versions are those selected by opsets 11 to 21, plus 22 for the unary
functions whose version 22 only added bfloat16.
"""

from __future__ import annotations

from typing import Sequence

from ....ir.dtype import DType
from ....ir.expr import Expr
from ..graph import Node
from ..registry import converter
from .util import scalar_like


def _same_dtype(node: Node, xs: Sequence[Expr]) -> None:
    dts = {node.dtype(x) for x in xs}
    if len(dts) > 1:
        raise node.error(f"the inputs have different dtypes: {', '.join(sorted(map(str, dts)))}")


def _binary(op_name: str, allow_bool: bool = True):
    def convert(node: Node) -> list[Expr]:
        a, b = node.input(0), node.input(1)
        _same_dtype(node, [a, b])
        if not allow_bool and node.dtype(a).is_bool:
            raise node.error("bool tensors are not supported")
        return [node.call(op_name, [a, b])]
    return convert


_ARITH = (7, 13, 14)
for _name, _op in (("Add", "add"), ("Sub", "subtract"), ("Mul", "multiply"),
                   ("Div", "divide")):
    converter(_name, _ARITH)(_binary(_op, allow_bool=False))

for _name, _op, _versions in (("Equal", "equal", (11, 13, 19)),
                              ("Less", "less", (9, 13)),
                              ("Greater", "greater", (9, 13)),
                              ("LessOrEqual", "less_equal", (12, 16)),
                              ("GreaterOrEqual", "greater_equal", (12, 16))):
    converter(_name, _versions)(_binary(_op))


def _logical(op_name: str):
    def convert(node: Node) -> list[Expr]:
        xs = [node.input(i) for i in range(len(node.inputs))]
        for x in xs:
            if not node.dtype(x).is_bool:
                raise node.error(f"expects bool tensors, got {node.dtype(x)}")
        return [node.call(op_name, xs)]
    return convert


converter("And", (7,))(_logical("logical_and"))
converter("Or", (7,))(_logical("logical_or"))
converter("Xor", (7,))(_logical("logical_xor"))
converter("Not", (1,))(_logical("logical_not"))


@converter("Mod", (10, 13))
def convert_mod(node: Node) -> list[Expr]:
    a, b = node.input(0), node.input(1)
    _same_dtype(node, [a, b])
    fmod = int(node.attr("fmod", 0))
    if node.dtype(a).is_float and fmod != 1:
        raise node.unsupported("fmod", 0, "on floating-point tensors is not allowed "
                               "(the specification requires fmod=1)")
    if node.dtype(a).is_bool:
        raise node.error("bool tensors are not supported")
    return [node.call("mod" if fmod else "floor_mod", [a, b])]


@converter("Pow", (7, 12, 13, 15))
def convert_pow(node: Node) -> list[Expr]:
    x, y = node.input(0), node.input(1)
    xt, yt = node.dtype(x), node.dtype(y)
    if xt.is_bool or yt.is_bool:
        raise node.error("bool tensors are not supported")
    if xt.is_int and yt.is_float:
        xf = node.call("cast", [x], dtype=DType.FLOAT64)
        yf = y if yt is DType.FLOAT64 else node.call("cast", [y], dtype=DType.FLOAT64)
        return [node.call("cast", [node.call("power", [xf, yf])], dtype=xt)]
    if yt != xt:
        y = node.call("cast", [y], dtype=xt)
    return [node.call("power", [x, y])]


def _variadic(op_name: str, mean: bool = False):
    def convert(node: Node) -> list[Expr]:
        xs = [node.input(i) for i in range(len(node.inputs))]
        _same_dtype(node, xs)
        if node.dtype(xs[0]).is_bool:
            raise node.error("bool tensors are not supported")
        acc = xs[0]
        for x in xs[1:]:
            acc = node.call(op_name, [acc, x])
        if mean and len(xs) > 1:
            acc = node.call("divide", [acc, scalar_like(node, len(xs), acc)])
        return [acc]
    return convert


converter("Max", (8, 12, 13))(_variadic("maximum"))
converter("Min", (8, 12, 13))(_variadic("minimum"))
converter("Sum", (8, 13))(_variadic("add"))
converter("Mean", (8, 13))(_variadic("add", mean=True))


def _unary(op_name: str, float_only: bool = True):
    def convert(node: Node) -> list[Expr]:
        x = node.input(0)
        dt = node.dtype(x)
        if dt.is_bool or (float_only and not dt.is_float):
            raise node.error(f"{dt} tensors are not supported")
        return [node.call(op_name, [x])]
    return convert


for _name, _op, _versions in (("Sqrt", "sqrt", (6, 13)), ("Exp", "exp", (6, 13)),
                              ("Log", "log", (6, 13)), ("Floor", "floor", (6, 13)),
                              ("Ceil", "ceil", (6, 13)), ("Round", "round", (11, 22)),
                              ("Erf", "erf", (9, 13)),
                              ("Sin", "sin", (7, 22)), ("Cos", "cos", (7, 22)),
                              ("Tan", "tan", (7, 22)), ("Asin", "asin", (7, 22)),
                              ("Acos", "acos", (7, 22)), ("Atan", "atan", (7, 22)),
                              ("Sinh", "sinh", (9, 22)), ("Cosh", "cosh", (9, 22))):
    converter(_name, _versions)(_unary(_op))

converter("Neg", (6, 13))(_unary("negative", float_only=False))
converter("Abs", (6, 13))(_unary("abs", float_only=False))
converter("Sign", (9, 13))(_unary("sign", float_only=False))


@converter("Reciprocal", (6, 13))
def convert_reciprocal(node: Node) -> list[Expr]:
    x = node.input(0)
    if not node.dtype(x).is_float:
        raise node.error(f"{node.dtype(x)} tensors are not supported")
    return [node.call("divide", [scalar_like(node, 1, x), x])]


@converter("IsNaN", (9, 13, 20))
def convert_isnan(node: Node) -> list[Expr]:
    return [node.call("isnan", [node.input(0)])]


@converter("IsInf", (10, 20))
def convert_isinf(node: Node) -> list[Expr]:
    x = node.input(0)
    neg, pos = int(node.attr("detect_negative", 1)), int(node.attr("detect_positive", 1))
    inf = node.call("isinf", [x])
    if neg and pos:
        return [inf]
    if not neg and not pos:
        return [node.call("zeros", [], shape=node.shape(x), dtype=DType.BOOL)]
    side = node.call("greater" if pos else "less", [x, scalar_like(node, 0, x)])
    return [node.call("logical_and", [inf, side])]


@converter("Where", (9, 16))
def convert_where(node: Node) -> list[Expr]:
    cond, x, y = node.input(0), node.input(1), node.input(2)
    _same_dtype(node, [x, y])
    return [node.call("where", [cond, x, y])]
