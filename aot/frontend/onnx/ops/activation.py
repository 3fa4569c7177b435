"""Activations: Relu, LeakyRelu, PRelu, Sigmoid, HardSigmoid, HardSwish,
Tanh, Elu, Selu, Softplus, Softsign, Gelu, Clip, Softmax, LogSoftmax.

Those the catalogue has map onto it (``nn.relu``, ``nn.leaky_relu``,
``sigmoid``, ``tanh``, ``nn.softmax``, ``clip``); the others are composed
of elementwise operators following the formula of the ONNX specification,
with constants of the input's dtype:

* HardSigmoid ``max(0, min(1, alpha*x + beta))``, HardSwish
  ``x * HardSigmoid(x)`` with alpha 1/6 and beta 1/2;
* Elu ``x < 0 ? alpha*(exp(x) - 1) : x``; Selu ``gamma * (x <= 0 ?
  alpha*(exp(x) - 1) : x)``;
* Softplus ``max(x, 0) + log(1 + exp(-|x|))`` (the same function as
  ``log(exp(x) + 1)`` without its overflow for large x);
* Softsign ``x / (1 + |x|)``; Gelu (opset 20) with ``approximate`` none
  (``erf``) or tanh;
* PRelu: ``nn.prelu`` when the slope varies along one axis only,
  otherwise ``x < 0 ? slope * x : x`` with broadcasting.

Softmax/LogSoftmax before opset 13 (versions 1 and 11) flatten the input
to 2-d at ``axis`` and normalise each row; from version 13 they normalise
along ``axis``.  Clip (versions 11, 12, 13) takes optional min/max inputs:
constant bounds give ``clip`` on floats (``maximum``/``minimum`` on
integers, whose bounds may not fit a float), dynamic bounds
``maximum``/``minimum``.
"""

from __future__ import annotations

import math

from ....ir.expr import Expr
from ..graph import Node
from ..registry import converter
from .util import normalize_axis, prod, require_float, reshape_to, scalar_like


def _unary(op_name: str):
    def convert(node: Node) -> list[Expr]:
        return [node.call(op_name, [node.input(0)])]
    return convert


converter("Relu", (6, 13, 14))(_unary("nn.relu"))
converter("Sigmoid", (6, 13))(_unary("sigmoid"))
converter("Tanh", (6, 13))(_unary("tanh"))


@converter("LeakyRelu", (6, 16))
def convert_leaky_relu(node: Node) -> list[Expr]:
    x = node.input(0)
    require_float(node, x)
    return [node.call("nn.leaky_relu", [x], alpha=float(node.attr("alpha", 0.01)))]


@converter("PRelu", (9, 16))
def convert_prelu(node: Node) -> list[Expr]:
    x, slope = node.input(0), node.input(1)
    x_shape, s_shape = node.shape(x), node.shape(slope)
    if len(s_shape) > len(x_shape):
        raise node.error(f"the slope {list(s_shape)} has a higher rank than the input "
                         f"{list(x_shape)}")
    aligned = (1,) * (len(x_shape) - len(s_shape)) + s_shape
    varying = [i for i, d in enumerate(aligned) if d != 1]
    if len(varying) == 1 and aligned[varying[0]] == x_shape[varying[0]] \
            and node.dtype(slope) == node.dtype(x):
        axis = varying[0]
        vec = reshape_to(node, slope, (x_shape[axis],))
        return [node.call("nn.prelu", [x, vec], axis=axis)]
    zero = scalar_like(node, 0, x)
    neg = node.call("less", [x, zero])
    return [node.call("where", [neg, node.call("multiply", [x, slope]), x])]


def _hard_sigmoid(node: Node, x: Expr, alpha: float, beta: float) -> Expr:
    y = node.call("add", [node.call("multiply", [x, scalar_like(node, alpha, x)]),
                          scalar_like(node, beta, x)])
    return node.call("clip", [y], a_min=0.0, a_max=1.0)


@converter("HardSigmoid", (6, 22))
def convert_hard_sigmoid(node: Node) -> list[Expr]:
    x = node.input(0)
    require_float(node, x)
    return [_hard_sigmoid(node, x, float(node.attr("alpha", 0.2)), float(node.attr("beta", 0.5)))]


@converter("HardSwish", (14, 22))
def convert_hard_swish(node: Node) -> list[Expr]:
    x = node.input(0)
    require_float(node, x)
    return [node.call("multiply", [x, _hard_sigmoid(node, x, 1.0 / 6.0, 0.5)])]


def _expm1_scaled(node: Node, x: Expr, alpha: float) -> Expr:
    """``alpha * (exp(x) - 1)``."""
    em1 = node.call("subtract", [node.call("exp", [x]), scalar_like(node, 1, x)])
    return node.call("multiply", [scalar_like(node, alpha, x), em1])


@converter("Elu", (6, 22))
def convert_elu(node: Node) -> list[Expr]:
    x = node.input(0)
    require_float(node, x)
    neg = node.call("less", [x, scalar_like(node, 0, x)])
    return [node.call("where", [neg, _expm1_scaled(node, x, float(node.attr("alpha", 1.0))),
                                x])]


_SELU_ALPHA = 1.67326319217681884765625
_SELU_GAMMA = 1.05070102214813232421875


@converter("Selu", (6, 22))
def convert_selu(node: Node) -> list[Expr]:
    x = node.input(0)
    require_float(node, x)
    alpha = float(node.attr("alpha", _SELU_ALPHA))
    gamma = float(node.attr("gamma", _SELU_GAMMA))
    nonpos = node.call("less_equal", [x, scalar_like(node, 0, x)])
    y = node.call("where", [nonpos, _expm1_scaled(node, x, alpha), x])
    return [node.call("multiply", [scalar_like(node, gamma, x), y])]


def _softplus(node: Node, x: Expr) -> Expr:
    """``log(1 + exp(x))`` as ``max(x, 0) + log(1 + exp(-|x|))`` (no overflow)."""
    pos = node.call("maximum", [x, scalar_like(node, 0, x)])
    e = node.call("exp", [node.call("negative", [node.call("abs", [x])])])
    tail = node.call("log", [node.call("add", [scalar_like(node, 1, x), e])])
    return node.call("add", [pos, tail])


@converter("Softplus", (1, 22))
def convert_softplus(node: Node) -> list[Expr]:
    x = node.input(0)
    require_float(node, x)
    return [_softplus(node, x)]


@converter("Mish", (18, 22))
def convert_mish(node: Node) -> list[Expr]:
    """``x * tanh(softplus(x))`` (the dynamo exporter's ``nn.Mish``)."""
    x = node.input(0)
    require_float(node, x)
    return [node.call("multiply", [x, node.call("tanh", [_softplus(node, x)])])]


@converter("Celu", (12,))
def convert_celu(node: Node) -> list[Expr]:
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))`` (the classic
    exporter's ``nn.CELU``); float32 only, as the operator."""
    x = node.input(0)
    require_float(node, x)
    alpha = float(node.attr("alpha", 1.0))
    if alpha == 0:
        raise node.unsupported("alpha", alpha, "must not be 0")
    scaled = node.call("divide", [x, scalar_like(node, alpha, x)])
    neg = node.call("less", [x, scalar_like(node, 0, x)])
    return [node.call("where", [neg, _expm1_scaled(node, scaled, alpha), x])]


@converter("Softsign", (1, 22))
def convert_softsign(node: Node) -> list[Expr]:
    x = node.input(0)
    require_float(node, x)
    den = node.call("add", [scalar_like(node, 1, x), node.call("abs", [x])])
    return [node.call("divide", [x, den])]


@converter("Gelu", (20,))
def convert_gelu(node: Node) -> list[Expr]:
    x = node.input(0)
    require_float(node, x)
    approximate = node.attr("approximate", "none")
    half_x = node.call("multiply", [scalar_like(node, 0.5, x), x])
    one = scalar_like(node, 1, x)
    if approximate == "none":
        inner = node.call("erf", [node.call("multiply", [x, scalar_like(node, 1 / math.sqrt(2),
                                                                        x)])])
    elif approximate == "tanh":
        cube = node.call("multiply", [node.call("multiply", [x, x]), x])
        poly = node.call("add", [x, node.call("multiply", [scalar_like(node, 0.044715, x),
                                                           cube])])
        inner = node.call("tanh", [node.call("multiply",
                                             [scalar_like(node, math.sqrt(2 / math.pi), x),
                                              poly])])
    else:
        raise node.unsupported("approximate")
    return [node.call("multiply", [half_x, node.call("add", [one, inner])])]


@converter("Clip", (11, 12, 13))
def convert_clip(node: Node) -> list[Expr]:
    x = node.input(0)
    dt = node.dtype(x)
    if dt.is_bool:
        raise node.error("bool tensors cannot be clipped")
    lo, hi = node.optional(1), node.optional(2)
    for bound in (lo, hi):
        if bound is not None and node.shape(bound) != ():
            raise node.error(f"the clip bounds must be scalars, got shape "
                             f"{list(node.shape(bound))}")
    lo_v = node.ctx.const_value(lo) if lo is not None else None
    hi_v = node.ctx.const_value(hi) if hi is not None else None
    consts = (lo is None or lo_v is not None) and (hi is None or hi_v is not None)
    if dt.is_float and consts:
        a_min = float(lo_v) if lo_v is not None else -math.inf
        a_max = float(hi_v) if hi_v is not None else math.inf
        if not (math.isnan(a_min) or math.isnan(a_max)) and a_min <= a_max:
            return [node.call("clip", [x], a_min=a_min, a_max=a_max)]
    y = x
    for bound, op_name in ((lo, "maximum"), (hi, "minimum")):
        if bound is not None:
            y = node.call(op_name, [y, bound])
    return [y]


def _softmax(node: Node, op_name: str) -> list[Expr]:
    x = node.input(0)
    require_float(node, x)
    shape = node.shape(x)
    rank = len(shape)
    if node.version >= 13:
        axis = normalize_axis(node, int(node.attr("axis", -1)), rank)
        return [node.call(op_name, [x], axis=axis)]
    axis = normalize_axis(node, int(node.attr("axis", 1)), max(rank, 1))
    if axis == rank - 1:
        return [node.call(op_name, [x], axis=-1)]
    flat = reshape_to(node, x, (prod(shape[:axis]), prod(shape[axis:])))
    y = node.call(op_name, [flat], axis=-1)
    return [reshape_to(node, y, shape)]


@converter("Softmax", (11, 13))
def convert_softmax(node: Node) -> list[Expr]:
    return _softmax(node, "nn.softmax")


@converter("LogSoftmax", (11, 13))
def convert_log_softmax(node: Node) -> list[Expr]:
    return _softmax(node, "nn.log_softmax")

