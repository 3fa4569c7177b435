"""Matrix products: Gemm, MatMul and Einsum.

Gemm ``alpha * A' @ B' + beta * C``: ``nn.dense`` when only B is
transposed (the fully connected layer PyTorch exports), ``nn.matmul`` with
``transpose_a``/``transpose_b`` otherwise; ``alpha`` multiplies the
product, ``beta * C`` (folded when C is constant) is added with
broadcasting.  Versions 11 and 13 (opset 11+).

MatMul has NumPy's ``matmul`` semantics: a 1-d operand gets a unit axis
prepended (first) or appended (second) that is removed from the result; a
2-d second operand uses ``nn.matmul`` for any rank of the first; otherwise
the batch dimensions broadcast, both operands are reshaped to 3-d and
multiplied by ``nn.batch_matmul`` (a batch of 1 broadcasts), and the result
is reshaped back.  Versions 9 and 13.

Einsum (12) is ``einsum`` of its inputs, the equation as given (its
letters, ``...`` and implicit result are NumPy's, which the IR follows).
"""

from __future__ import annotations

import numpy as np

from ....ir.expr import Expr
from ..graph import Node
from ..registry import converter
from .util import broadcast_shape, prod, reshape_to, scalar_like


@converter("Gemm", (11, 13))
def convert_gemm(node: Node) -> list[Expr]:
    a, b = node.input(0), node.input(1)
    if node.rank(a) != 2 or node.rank(b) != 2:
        raise node.error(f"A and B must be 2-d, got shapes {list(node.shape(a))} and "
                         f"{list(node.shape(b))}")
    trans_a, trans_b = bool(node.attr("transA", 0)), bool(node.attr("transB", 0))
    alpha, beta = float(node.attr("alpha", 1.0)), float(node.attr("beta", 1.0))
    dt = node.dtype(a)
    if not dt.is_float and (alpha != 1.0 or beta not in (0.0, 1.0)):
        raise node.error(f"alpha={alpha} and beta={beta} on {dt} tensors are not supported")
    if trans_b and not trans_a:
        y = node.call("nn.dense", [a, b])
    else:
        y = node.call("nn.matmul", [a, b], transpose_a=trans_a, transpose_b=trans_b)
    if alpha != 1.0:
        y = node.call("multiply", [y, scalar_like(node, alpha, y)])
    c = node.optional(2)
    if c is None or beta == 0.0:
        return [y]
    if beta != 1.0:
        c_value = node.ctx.const_value(c)
        if c_value is not None:
            c = node.constant(np.multiply(c_value, c_value.dtype.type(beta)))
        else:
            c = node.call("multiply", [c, scalar_like(node, beta, c)])
    return [node.call("add", [y, c])]


@converter("MatMul", (9, 13))
def convert_matmul(node: Node) -> list[Expr]:
    a, b = node.input(0), node.input(1)
    if node.dtype(a) != node.dtype(b) or node.dtype(a).is_bool:
        raise node.error(f"operands of dtypes {node.dtype(a)} and {node.dtype(b)} are not "
                         "supported")
    return [matmul(node, a, b)]


def matmul(node: Node, a: Expr, b: Expr) -> Expr:
    """NumPy's ``matmul(a, b)`` (see the module docstring)."""
    a_shape, b_shape = node.shape(a), node.shape(b)
    orig = (list(a_shape), list(b_shape))
    if not a_shape or not b_shape:
        raise node.error("MatMul of a scalar is not defined")
    squeeze: list[int] = []
    if len(a_shape) == 1:
        a = node.call("expand_dims", [a], axis=0)
        a_shape = (1,) + a_shape
        squeeze.append(-2)
    if len(b_shape) == 1:
        b = node.call("expand_dims", [b], axis=1)
        b_shape = b_shape + (1,)
        squeeze.append(-1)
    if a_shape[-1] != b_shape[-2]:
        raise node.error(f"shapes {orig[0]} and {orig[1]} cannot be multiplied")
    if len(b_shape) == 2:
        y = node.call("nn.matmul", [a, b])
    else:
        y = _batched(node, a, b, a_shape, b_shape)
    if squeeze:
        rank = node.rank(y)
        y = node.call("squeeze", [y], axis=tuple(sorted(rank + s for s in squeeze)))
    return y


def _batched(node: Node, a: Expr, b: Expr, a_shape: tuple[int, ...],
             b_shape: tuple[int, ...]) -> Expr:
    batch = broadcast_shape(a_shape[:-2], b_shape[:-2])
    m, n = a_shape[-2], b_shape[-1]
    a3 = _as_batch(node, a, a_shape, batch)
    b3 = _as_batch(node, b, b_shape, batch)
    y = node.call("nn.batch_matmul", [a3, b3], transpose_b=False)
    out_shape = batch + (m, n)
    if node.shape(y) != out_shape:
        y = reshape_to(node, y, out_shape)
    return y


def _as_batch(node: Node, x: Expr, shape: tuple[int, ...], batch: tuple[int, ...]) -> Expr:
    """``x`` as a 3-d (B, rows, cols) operand of batch_matmul: a batch of 1
    stays 1 (batch_matmul broadcasts it), any other batch is broadcast to
    the full batch shape first."""
    rows, cols = shape[-2], shape[-1]
    own = shape[:-2]
    if prod(own) == 1:
        target = (1, rows, cols)
    else:
        if tuple((1,) * (len(batch) - len(own)) + own) != batch:
            x = node.call("broadcast_to", [x], shape=batch + (rows, cols))
        target = (prod(batch), rows, cols)
    if shape != target:
        x = reshape_to(node, x, target)
    return x


@converter("Einsum", (12,))
def convert_einsum(node: Node) -> list[Expr]:
    xs = [node.input(i) for i in range(len(node.inputs))]
    if not xs:
        raise node.error("Einsum needs at least one input")
    equation = node.attr("equation")
    if not isinstance(equation, str) or not equation:
        raise node.error("the equation attribute is required")
    return [node.call("einsum", [node.ctx.make_tuple(xs)], equation=equation)]
