"""FakeQuantizationToInteger: run the float regions of a QDQ graph as
integer qnn operators.

Design note
===========

A QDQ ("fake quantized") graph computes in float between a dequantize and
a quantize::

    q1 -> dequantize -> conv2d -> bias_add -> relu -> quantize -> q2
    w  -> dequantize ----^

The integer inputs and the integer output are all that matter; the pass
rewrites such a region into integer operators of the catalogue::

    q1, w -> qnn.conv2d -> add (int32 bias) -> qnn.requantize -> maximum(., zp) -> q2

so a microcontroller runs 8-bit multiply-accumulates on int8 weights in
flash instead of float ones.  This is Relay's ``FakeQuantizationToInteger``
(``src/relay/transforms/fake_quantization_to_integer.cc``) with one
difference of principle, the rule below: Relay rewrites whenever it has a
rule for every operator, and an intermediate result that is not
quantized in the float program gets the quantization parameters of an
operand (one more rounding, unbounded in output steps); here a region is
rewritten only where the integer program provably stays within the rule,
and is left in float otherwise.

The rule
--------
Let ``Q`` be the region's final quantize (scale ``s``, zero point ``z``)
and ``r`` the *exact real* value of the float operators applied to the
dequantized inputs ``s_i * (q_i - z_i)``.  The float program returns
``Q(r + e_f)``, where ``e_f`` is its own float32 rounding (relative
errors of about 2**-24 per operation); the rewritten program returns
``round(r/s + e_i) + z``, saturated, with ``|e_i| <= 3/8`` of a step (the
pass's error budget :data:`BUDGET`, checked statically for each region).
Two roundings to the nearest integer of values less than one apart differ
by at most one, so:

* **the rewritten output is within one quantization step (one unit of the
  final quantize) of the float QDQ program's output** whenever the float
  program's own error is below 5/8 of a step (on 8-bit models it is
  about 1e-5 of a step);
* **it is exactly the float program's output** where every operator of
  the region is exact on integers: a dequantize -> quantize pair with the
  same parameters disappears; reshape, transpose, squeeze, expand_dims,
  batch_flatten, strided_slice, max pooling, relu, clip, maximum/minimum,
  pad and concatenate of tensors sharing one set of parameters are exact
  (the dequantize map ``q -> s * (q - z)`` is increasing and commutes with
  them); and relu, clip and max pooling directly before a quantize are
  exact after it (``Q`` is non-decreasing, so ``Q(max(v, c)) =
  max(Q(v), Q(c))``).

What contributes to ``e_i`` (each bounded at compile time, a region whose
sum exceeds the budget stays in float): the fixed-point multipliers
(relative 2**-31) and float32 scale products (relative 2**-24, below 2**-6
of a step inside the 16-bit output range, where saturation does not hide
them); a float bias quantized to the int32 accumulator's scale (its
measured rounding, usually ``<< 1/2 * s_acc / s``); a constant operand of
add/multiply represented in 8 bits (exact for a uniform constant, else
measured); the double rounding of TFLite's ``MultiplyByQuantizedMultiplier``
in ``qnn.mul`` and ``qnn.add`` (at most 1/4 of a step) and the 2**-20
operand rounding of ``qnn.add``.

Representations
---------------
The analysis walks the function once in post-order (iteratively; a
10,000-node graph is fine) and gives each float node it can follow one
of two integer representations:

* :class:`Exact` ``(q, params)``: the float value *is* ``dequantize(q)``
  bit for bit.  Made by ``qnn.dequantize`` with constant parameters and
  kept by the exact operators above;
* :class:`Acc` ``(acc, scale)``: an int32 accumulator with zero point 0;
  the float value is ``scale * acc`` up to float rounding and a bounded
  absolute error ``err`` (from bias rounding).  Made by ``nn.conv2d``,
  ``nn.dense`` and ``nn.matmul`` (constant weights) of Exact operands
  (``qnn.conv2d``/``qnn.dense``), by average pooling and ``mean`` (an
  int32 ``sum`` of ``q - z`` with scale ``s / n``; a windowed average as a
  depthwise ``qnn.conv2d`` with unit weights), kept by ``nn.bias_add`` and
  ``add`` of a constant (quantized to the accumulator's scale), ``add`` of
  an accumulator with the same scales, relu, max pooling and (per-tensor
  scale) layout operators.  A static bound on ``|acc|`` proves that no
  int32 arithmetic wraps.

At a quantize (``qnn.quantize``, or the composite the ONNX importer makes
of QuantizeLinear: ``cast(clip(round(x / s) + z))``), the pass looks down
the chain of *tail* operators that commute with ``Q`` (relu, clip, max
pooling; layout operators when ``Q`` is per-tensor) to the deepest *core*
it can finish with ``Q``'s parameters:

* an Exact core: the integer tensor itself when its parameters equal
  ``Q``'s, else ``qnn.requantize``;
* an Acc core: ``qnn.requantize`` (per-channel input scales allowed);
* ``add``/``subtract``/``multiply`` of Exact operands (or of an Exact one
  and a constant): ``qnn.add``/``qnn.mul`` with ``Q``'s parameters;
* ``concatenate`` of Exact operands: ``qnn.concatenate``;
* ``maximum``/``minimum`` of Exact operands and constants: each operand
  finished as above, a constant quantized by ``Q`` itself;

then applies the tails on integers (``Q(0)``, ``Q(lo)``, ``Q(hi)`` are
computed by evaluating ``Q`` itself on constants).  ``qnn.requantize``
rounds to nearest (``TONEAREST``) with one rounding.  Binary operators and
concatenation are finished only at a quantize, never in the middle of a
region, because their integer form needs output parameters that only a
quantize gives (Relay borrows an operand's, which breaks the rule).

The dataflow pattern language (:mod:`aot.ir.pattern`) recognises the
quantize forms and selects the rule of each operator (a table of
``is_op(...)(wildcard(), ...)`` patterns and handlers); the regions are
unbounded in depth, so the analysis itself is one post-order walk rather
than :func:`~aot.ir.pattern.rewrite` callbacks.

Sharing: a float node of a region that is also used outside every
rewritten region would be computed twice (in float for its other user and
in integers for the quantize); such regions are not rewritten (decided to
a fixed point, as dropping one region can expose another node).  An
integer value shared by several rewritten regions is built once.

The pass reads types (the module must be typed or it is typed first), so
it sees dataflow in graph normal form: a let-bound operand is a variable
it does not follow.  Constant parameters are found by evaluating closed
constant sub-expressions with the reference interpreter (``cast(128u8)``
of the importer need not be folded first).  The result is type-checked
again.  The pass is at level 4 (only when required), see the pipeline
note in :mod:`aot.passes.pipelines`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from ..diagnostics import DiagnosticError
from ..interpreter import Interpreter
from ..ir import quant
from ..ir.attrs import Attrs
from ..ir.dtype import DType
from ..ir.expr import Call, Constant, Expr, Function, Op, Tuple, TupleGetItem, op
from ..ir.module import IRModule
from ..ir.ops.nn_conv import Conv2DAttrs
from ..ir.ops._nn_util import pair
from ..ir.ops.nn_pool import AvgPool2DAttrs, GlobalPool2DAttrs
from ..ir.ops.qnn import BroadcastAttrs, QnnConcatenateAttrs, RequantizeAttrs, Rounding
from ..ir.ops.qnn_linear import QnnConv2DAttrs, QnnDenseAttrs
from ..ir.ops.reduce import ReduceAttrs
from ..ir.ops.transform_init import CastAttrs, ClipAttrs
from ..ir.pattern import DFPattern, DFPatternMatcher, is_op, is_tuple, wildcard
from ..ir.types import TensorType
from ..ir.visitor import ExprMutator, Visit, children, post_order
from .manager import register_pass

__all__ = ["fake_quantization_to_integer", "BUDGET"]

#: the largest deviation, in steps of the final quantize, that the integer
#: program may add before its final rounding (see the rule)
BUDGET = 0.375
#: integer intermediates are kept below this bound (no int32 wrap-around,
#: with room for zero points and rounding)
_SAFE = 1 << 30
#: slack for relative errors (float32 scale products, fixed-point multipliers)
_REL_SLACK = 2.0 ** -6

_I8, _U8, _I16, _U16, _I32 = DType.INT8, DType.UINT8, DType.INT16, DType.UINT16, DType.INT32
_QUANT_DTYPES = (_I8, _U8, _I16, _U16, _I32)
_REQUANT_IN = (_I8, _U8, _I16, _I32)
_REQUANT_OUT = (_I8, _U8, _I16, _I32)
_CONV_IN = (_I8, _U8, _I16)
_DENSE_DATA = (_I8, _U8, _I16, _U16)
_DENSE_WEIGHT = (_I8, _U8)
_BINARY = (_I8, _U8)
_CONCAT = (_I8, _U8, _I16, _I32)
_LAYOUT_OPS = ("reshape", "transpose", "squeeze", "expand_dims", "nn.batch_flatten",
               "strided_slice")


# ====================================================================== parameters

@dataclass(frozen=True, eq=False)
class QParams:
    """Affine quantization ``real = scale * (q - zero_point)`` of a tensor
    of ``dtype``: per tensor (``axis`` None, 0-d arrays) or per channel of
    ``axis`` (1-D arrays, one value per index of that axis)."""

    scale: np.ndarray       # float32
    zero_point: np.ndarray  # int64
    axis: int | None
    dtype: DType

    @staticmethod
    def make(scale: np.ndarray, zero_point: np.ndarray, axis: int | None,
             dtype: DType) -> QParams | None:
        """Canonical parameters (per tensor when every channel has the same
        ones), or None when they are not usable: scales must be positive
        and finite, zero points integers, the two of one or of equal length."""
        s = np.asarray(scale, dtype=np.float32).reshape(-1)
        z = np.asarray(zero_point).reshape(-1)
        if s.size == 0 or z.size == 0 or not np.all(np.isfinite(s)) or np.any(s <= 0):
            return None
        zf = z.astype(np.float64)
        if not np.all(np.isfinite(zf)) or np.any(zf != np.round(zf)) \
                or np.any(np.abs(zf) >= _SAFE):
            return None
        z = zf.astype(np.int64)
        n = max(s.size, z.size)
        if s.size not in (1, n) or z.size not in (1, n):
            return None
        s, z = np.broadcast_to(s, (n,)), np.broadcast_to(z, (n,))
        if np.all(s == s[0]) and np.all(z == z[0]):
            return QParams(np.asarray(s[0], np.float32), np.asarray(z[0], np.int64), None, dtype)
        if axis is None:
            return None
        return QParams(np.array(s, np.float32), np.array(z, np.int64), axis, dtype)

    @property
    def per_tensor(self) -> bool:
        return self.axis is None

    def same(self, other: QParams) -> bool:
        return (self.dtype == other.dtype and self.axis == other.axis
                and self.scale.shape == other.scale.shape
                and bool(np.all(self.scale == other.scale))
                and bool(np.all(self.zero_point == other.zero_point)))

    def scale_at(self, ndim: int) -> np.ndarray:
        """The scales (float64) shaped to broadcast against a rank-``ndim`` tensor."""
        return _along(self.scale.astype(np.float64), ndim, self.axis)

    def zero_point_at(self, ndim: int) -> np.ndarray:
        return _along(self.zero_point, ndim, self.axis)

    def scale_arg(self) -> Constant:
        """The scale as a qnn operator argument."""
        return Constant(np.array(self.scale, np.float32))

    def zero_point_arg(self) -> Constant:
        return Constant(np.array(self.zero_point, np.int32))

    @property
    def deviation(self) -> int:
        """The largest ``|q - zero_point|`` over the dtype's range."""
        lo, hi = quant.dtype_range(self.dtype.np)
        return int(np.max(np.maximum(hi - self.zero_point, self.zero_point - lo)))

    @property
    def max_real(self) -> float:
        """The largest ``|real value|`` a tensor with these parameters holds."""
        lo, hi = quant.dtype_range(self.dtype.np)
        dev = np.maximum(hi - self.zero_point, self.zero_point - lo).astype(np.float64)
        return float(np.max(dev * self.scale.astype(np.float64)))

    def dequantized(self, q: np.ndarray) -> np.ndarray:
        """``qnn.dequantize``'s float32 values of the integers ``q`` (per
        tensor)."""
        assert self.per_tensor
        diff = (np.asarray(q, np.int64) - int(self.zero_point)).astype(np.float32)
        return diff * np.float32(self.scale)


def _along(values: np.ndarray, ndim: int, axis: int | None) -> np.ndarray:
    if axis is None or values.ndim == 0:
        return values.reshape(())
    shape = [1] * ndim
    shape[axis] = values.size
    return values.reshape(shape)


def _param_axis(shape: tuple[int, ...], ndim: int) -> int | None | bool:
    """The data axis a broadcastable parameter of ``shape`` varies along:
    None (a scalar-like parameter), the axis, or False when it varies along
    several axes or does not broadcast right-aligned against rank ``ndim``."""
    if len(shape) > ndim:
        return False
    varying = [i for i, d in enumerate(shape) if d != 1]
    if not varying:
        return None
    if len(varying) > 1:
        return False
    return ndim - len(shape) + varying[0]


# ====================================================================== representations

@dataclass(frozen=True, eq=False)
class _Cell:
    """A persistent set of the float nodes an integer value replaces: one
    node and the cells of its operands (shared, so long chains cost
    O(1) per node)."""

    node: Expr | None
    parts: tuple[_Cell, ...] = ()


def _cell(node: Expr, *parts: _Cell | None) -> _Cell:
    return _Cell(node, tuple(p for p in parts if p is not None))


def _flatten(cells: Sequence[_Cell | None]) -> set[Expr]:
    nodes: set[Expr] = set()
    seen: set[int] = set()
    stack = [c for c in cells if c is not None]
    while stack:
        c = stack.pop()
        if id(c) in seen:
            continue
        seen.add(id(c))
        if c.node is not None:
            nodes.add(c.node)
        stack.extend(c.parts)
    return nodes


@dataclass(frozen=True, eq=False)
class Exact:
    """A float value that is ``dequantize(expr)`` bit for bit."""

    expr: Expr
    params: QParams
    ttype: TensorType
    cell: _Cell | None


@dataclass(frozen=True, eq=False)
class Acc:
    """A float value equal to ``scale * expr`` (int32, zero point 0) up to
    float rounding and ``err`` (absolute, real units); ``|expr| <= bound``."""

    expr: Expr
    scale: np.ndarray      # float32, () or (C,) along axis
    axis: int | None
    bound: int
    err: float
    ttype: TensorType
    cell: _Cell | None

    def scale_at(self, ndim: int) -> np.ndarray:
        return _along(self.scale.astype(np.float64), ndim, self.axis)


Rep = Exact | Acc


@dataclass(frozen=True, eq=False)
class _QSite:
    """A quantize: ``node`` quantizes the float ``data`` with ``params``;
    ``interior`` are the other float nodes of a composite quantize and
    ``narrow`` its clip range when narrower than the dtype's."""

    node: Call
    data: Expr
    params: QParams
    interior: tuple[Expr, ...]
    narrow: tuple[int, int] | None
    ttype: TensorType


@dataclass(frozen=True, eq=False)
class _Core:
    """A core finished with a quantize's parameters."""

    expr: Expr
    err: float            # in steps of the quantize
    cell: _Cell | None


@dataclass(frozen=True, eq=False)
class _Plan:
    site: _QSite
    expr: Expr
    region: frozenset[Expr]
    err: float


# ====================================================================== small builders

def _call(name: str, *args: Expr, attrs: Attrs | None = None, like: Expr | None = None) -> Call:
    span = like.span if like is not None else None
    if attrs is None:
        return Call(op(name), tuple(args), span=span)
    return Call(op(name), tuple(args), attrs, span=span)


def _requantize(x: Expr, in_scale: np.ndarray, in_zp: np.ndarray, axis: int | None,
                out: QParams, like: Expr) -> Call:
    attrs = RequantizeAttrs(axis=-1 if axis is None else axis, rounding=Rounding.TONEAREST,
                            out_dtype=out.dtype)
    return _call("qnn.requantize", x, Constant(np.array(in_scale, np.float32)),
                 Constant(np.array(in_zp, np.int32)), out.scale_arg(), out.zero_point_arg(),
                 attrs=attrs, like=like)


def _tensor_type(e: Expr) -> TensorType | None:
    t = e.checked_type
    return t if isinstance(t, TensorType) and all(isinstance(d, int) for d in t.shape) else None


def _multiplier_ok(reals: np.ndarray) -> bool:
    """Every rescaling factor has a fixed-point multiplier."""
    try:
        for r in np.unique(np.asarray(reals, np.float64).reshape(-1)):
            quant.quantize_multiplier(float(r))
    except quant.QuantizationError:
        return False
    return True


def _rescale_ok(bound: float, reals: np.ndarray) -> bool:
    """``qnn.requantize`` of values up to ``bound`` by ``reals`` neither
    fails nor wraps."""
    return _multiplier_ok(reals) and bound * float(np.max(reals)) < _SAFE


# ====================================================================== patterns

_X, _Y, _W = wildcard(), wildcard(), wildcard()
_QD, _QS, _QZ = wildcard(), wildcard(), wildcard()

#: ``qnn.dequantize(q, scale, zero_point)``
DEQUANTIZE = is_op("qnn.dequantize")(_QD, _QS, _QZ)
#: ``qnn.quantize(x, scale, zero_point)``
QUANTIZE = is_op("qnn.quantize")(_QD, _QS, _QZ)
#: the ONNX importer's QuantizeLinear: ``cast(clip(round(x / s) [+ z]))``
_ONNX_DIV = is_op("divide")(_QD, _QS)
_ONNX_ROUND = is_op("round")(_ONNX_DIV)
_ONNX_ADD = is_op("add")(_ONNX_ROUND, _QZ)
_ONNX_CLIP = is_op("clip")(_ONNX_ROUND | _ONNX_ADD)
ONNX_QUANTIZE = is_op("cast")(_ONNX_CLIP)

Handler = Callable[["_Analysis", Call, dict], Rep | None]
_RULES: dict[str, list[tuple[DFPattern, Handler]]] = {}


def _rule(name: str, pattern: DFPattern) -> Callable[[Handler], Handler]:
    def wrap(fn: Handler) -> Handler:
        _RULES.setdefault(name, []).append((pattern, fn))
        return fn
    return wrap


# ====================================================================== analysis

class _Analysis:
    """Representations of the float nodes of one function, the quantize
    sites, and the plans that finish them."""

    def __init__(self, func: Function, mod: IRModule | None) -> None:
        self.matcher = DFPatternMatcher(func, mod)
        self.order = post_order(func)
        self.reps: dict[Expr, Rep] = {}
        self.closed: dict[Expr, bool] = {}
        self.users: dict[Expr, list[Expr]] = {}
        self.values: dict[Expr, np.ndarray | None] = {}
        self.evaluator = Interpreter(IRModule())

    # ------------------------------------------------------------ walk
    def run(self) -> list[_Plan]:
        plans = []
        for node in self.order:
            for c in children(node):
                self.users.setdefault(c, []).append(node)
            self.closed[node] = self._is_closed(node)
            if not (isinstance(node, Call) and isinstance(node.op, Op)):
                continue
            if _tensor_type(node) is None:
                continue
            rep = self._apply_rules(node)
            # a closed constant is better used as its value; only an Exact
            # form (a quantized weight) is worth keeping for it
            if rep is not None and not (isinstance(rep, Acc) and self.closed[node]):
                self.reps[node] = rep
            site = self._quantize_site(node)
            if site is not None:
                plan = self._finish(site)
                if plan is not None:
                    plans.append(plan)
        return plans

    def _is_closed(self, node: Expr) -> bool:
        if isinstance(node, (Constant, Op)):
            return True
        if isinstance(node, Call):
            return isinstance(node.op, Op) and all(self.closed.get(a, False) for a in node.args)
        if isinstance(node, Tuple):
            return all(self.closed.get(f, False) for f in node.fields)
        if isinstance(node, TupleGetItem):
            return self.closed.get(node.tuple_value, False)
        return False

    def _apply_rules(self, node: Call) -> Rep | None:
        for pattern, handler in _RULES.get(node.op.name, ()):  # type: ignore[union-attr]
            if self.matcher.match(pattern, node):
                rep = handler(self, node, self.matcher.node_map())
                if rep is not None:
                    return rep
        return None

    # ------------------------------------------------------------ services
    def value(self, e: Expr) -> np.ndarray | None:
        """The value of a closed constant sub-expression, or None."""
        if isinstance(e, Constant):
            return np.asarray(e.data)
        if not self.closed.get(e, False):
            return None
        if e not in self.values:
            try:
                v = self.evaluator.evaluate(e)
            except DiagnosticError:
                v = None
            self.values[e] = np.asarray(v) if isinstance(v, np.ndarray) else None
        return self.values[e]

    def float_value(self, e: Expr) -> np.ndarray | None:
        t = _tensor_type(e)
        v = self.value(e)
        if t is None or v is None or t.dtype is not DType.FLOAT32:
            return None
        return v

    def exact(self, e: Expr) -> Exact | None:
        r = self.reps.get(e)
        return r if isinstance(r, Exact) else None

    def acc(self, e: Expr) -> Acc | None:
        r = self.reps.get(e)
        return r if isinstance(r, Acc) else None

    # ------------------------------------------------------------ quantize sites
    def _quantize_site(self, node: Call) -> _QSite | None:
        name = node.op.name  # type: ignore[union-attr]
        if name == "qnn.quantize" and self.matcher.match(QUANTIZE, node):
            return self._qnn_site(node, self.matcher.node_map())
        if name == "cast" and self.matcher.match(ONNX_QUANTIZE, node):
            return self._onnx_site(node, self.matcher.node_map())
        return None

    def _qnn_site(self, node: Call, nm: dict) -> _QSite | None:
        data = nm[_QD][0]
        dt, t = _tensor_type(data), _tensor_type(node)
        s, z = self.value(nm[_QS][0]), self.value(nm[_QZ][0])
        if dt is None or t is None or s is None or z is None or dt.dtype is not DType.FLOAT32:
            return None
        ndim = len(dt.shape)
        axis = node.attrs.axis  # type: ignore[attr-defined]
        axis = (axis + ndim if axis < 0 else axis) if ndim else 0
        params = QParams.make(s, z, axis if ndim else None, t.dtype)
        if params is None:
            return None
        return _QSite(node, data, params, (), None, t)

    def _onnx_site(self, node: Call, nm: dict) -> _QSite | None:
        data = nm[_QD][0]
        dt, t = _tensor_type(data), _tensor_type(node)
        if dt is None or t is None or dt.dtype is not DType.FLOAT32 \
                or t.dtype not in _QUANT_DTYPES:
            return None
        s = self.float_value(nm[_QS][0])
        z_node = nm[_QZ][0] if _ONNX_ADD in nm else None
        z = np.zeros((), np.float32) if z_node is None else self.float_value(z_node)
        if s is None or z is None:
            return None
        ndim = len(dt.shape)
        s_axis, z_axis = _param_axis(s.shape, ndim), _param_axis(z.shape, ndim)
        if s_axis is False or z_axis is False or (None not in (s_axis, z_axis)
                                                  and s_axis != z_axis):
            return None
        axis = s_axis if s_axis is not None else z_axis
        params = QParams.make(s, z, axis, t.dtype)  # type: ignore[arg-type]
        if params is None:
            return None
        clip = nm[_ONNX_CLIP][0]
        lo, hi = clip.attrs.a_min, clip.attrs.a_max  # type: ignore[attr-defined]
        dlo, dhi = quant.dtype_range(t.dtype.np)
        if not (lo == math.floor(lo) and hi == math.floor(hi) and dlo <= lo <= hi <= dhi):
            return None
        narrow = None if (lo, hi) == (dlo, dhi) else (int(lo), int(hi))
        interior = [nm[_ONNX_DIV][0], nm[_ONNX_ROUND][0], clip]
        if z_node is not None:
            interior.append(nm[_ONNX_ADD][0])
        return _QSite(node, data, params, tuple(interior), narrow, t)

    def quantized(self, site: _QSite, value: float | np.ndarray) -> np.ndarray:
        """``Q(value)``: the site's own quantize evaluated on a constant.  A
        scalar ``value`` is given the parameters' shape (so a per-channel
        quantize gives one value per channel, shaped to broadcast)."""
        if isinstance(value, np.ndarray):
            data = value.astype(np.float32)
        else:
            shape: tuple[int, ...] = ()
            if not site.params.per_tensor:
                dims = [1] * len(site.ttype.shape)
                dims[site.params.axis] = site.params.scale.size  # type: ignore[index]
                shape = tuple(dims)
            data = np.full(shape, value, np.float32)
        sub = ExprMutator()
        sub.memo[site.data] = Constant(data)
        result = self.evaluator.evaluate(sub.visit(site.node))
        assert isinstance(result, np.ndarray)
        return np.asarray(result)

    # ------------------------------------------------------------ finishing
    def _finish(self, site: _QSite) -> _Plan | None:
        chain: list[Call] = []
        node = site.data
        while isinstance(node, Call) and isinstance(node.op, Op) and _is_tail(node.op.name) \
                and node.args and _tensor_type(node.args[0]) is not None:
            chain.append(node)
            node = node.args[0]
        valid = 0
        while valid < len(chain) and _tail_ok(chain[valid], site):
            valid += 1
        for k in range(len(chain), -1, -1):   # the deepest core first
            if k > valid:
                continue
            core_node = node if k == len(chain) else chain[k]
            core = self._core(core_node, site)
            if core is None:
                continue
            expr = core.expr
            for t in reversed(chain[:k]):
                expr = self._tail(t, expr, site)
            if site.narrow is not None:
                lo, hi = site.narrow
                expr = _call("clip", expr, attrs=ClipAttrs(float(lo), float(hi)), like=site.node)
            region = _flatten([core.cell]) | set(chain[:k]) | set(site.interior)
            return _Plan(site, expr, frozenset(region), core.err)
        return None

    def _tail(self, t: Call, x: Expr, site: _QSite) -> Expr:
        """``t`` applied after the quantize: relu is ``max(., Q(0))``, clip
        is ``clip(., Q(lo), Q(hi))``; a bound at the dtype's limit is
        dropped (the quantize already saturates there)."""
        name = t.op.name  # type: ignore[union-attr]
        dt = site.params.dtype
        dlo, dhi = quant.dtype_range(dt.np)
        if name in ("nn.relu", "clip"):
            lo_real = 0.0 if name == "nn.relu" else t.attrs.a_min  # type: ignore[attr-defined]
            hi_real = math.inf if name == "nn.relu" else t.attrs.a_max  # type: ignore
            lo, hi = self.quantized(site, lo_real), self.quantized(site, hi_real)
            need_lo, need_hi = bool(np.any(lo > dlo)), bool(np.any(hi < dhi))
            if site.params.per_tensor and need_lo and need_hi:
                return _call("clip", x, attrs=ClipAttrs(float(lo), float(hi)), like=t)
            if need_lo:
                x = _call("maximum", x, Constant(lo.astype(dt.np)), like=t)
            if need_hi:
                x = _call("minimum", x, Constant(hi.astype(dt.np)), like=t)
            return x
        return Call(t.op, (x,), t.attrs, span=t.span)

    def _core(self, node: Expr, site: _QSite) -> _Core | None:
        rep = self.reps.get(node)
        if isinstance(rep, Exact):
            return _finish_exact(rep, site)
        if isinstance(rep, Acc):
            return _finish_acc(rep, site)
        if isinstance(node, Call) and isinstance(node.op, Op):
            if node.op.name in ("add", "subtract", "multiply"):
                return self._binary(node, site)
            if node.op.name == "concatenate":
                return self._concatenate(node, site)
            if node.op.name in ("maximum", "minimum"):
                return self._extremum(node, site)
        return None

    # --- maximum, minimum
    def _extremum(self, node: Call, site: _QSite) -> _Core | None:
        """``Q(max(a, b)) = max(Q(a), Q(b))`` (``Q`` is non-decreasing):
        each Exact operand finished with ``Q``'s parameters, a constant
        quantized by ``Q`` itself."""
        parts: list[Expr] = []
        cells: list[_Cell | None] = []
        err = 0.0
        for arg in node.args:
            rep = self.exact(arg)
            if rep is not None:
                core = _finish_exact(rep, site)
                if core is None:
                    return None
                parts.append(core.expr)
                cells.append(core.cell)
                err = max(err, core.err)
                continue
            value = self.float_value(arg)
            if value is None or (value.size != 1 and not site.params.per_tensor):
                return None
            scalar = float(value.reshape(-1)[0]) if value.size == 1 else None
            q = self.quantized(site, scalar if scalar is not None else value)
            parts.append(Constant(q.astype(site.params.dtype.np), span=arg.span))
        if not cells:                 # only constants: nothing to finish
            return None
        name = node.op.name  # type: ignore[union-attr]
        return _Core(_call(name, *parts, like=node), err, _cell(node, *cells))

    # --- binary operators
    def _operand(self, e: Expr) -> Exact | np.ndarray | None:
        """An operand of a binary operator: its Exact representation, else
        its constant float value, else None."""
        rep = self.exact(e)
        if rep is not None:
            return rep
        return self.float_value(e)

    def _binary(self, node: Call, site: _QSite) -> _Core | None:
        """``add``/``subtract``/``multiply`` finished with the quantize's
        parameters: ``qnn.add``/``qnn.mul`` of Exact operands; a constant
        operand is represented in 8 bits (``x - c`` is ``x + (-c)``; ``x +
        0`` is ``x``).  ``qnn.subtract`` is not in the catalogue."""
        out = site.params
        if not out.per_tensor or out.dtype not in _BINARY:
            return None
        name = node.op.name  # type: ignore[union-attr]
        lhs, rhs = (self._operand(a) for a in node.args)
        if name == "subtract":
            if not isinstance(lhs, Exact) or not isinstance(rhs, np.ndarray):
                return None
            name, rhs = "add", -rhs
        if isinstance(rhs, Exact) and isinstance(lhs, np.ndarray):
            lhs, rhs = rhs, lhs                       # both operators commute
        if not isinstance(lhs, Exact) or rhs is None or lhs.params.dtype != out.dtype:
            return None
        if isinstance(rhs, Exact):
            if name == "add":
                return _qnn_add(node, lhs, 0.0, rhs, 0.0, site)
            return _qnn_mul(node, lhs, 0.0, rhs, 0.0, site)
        if name == "add" and not np.any(rhs):
            core = _finish_exact(lhs, site)
            return None if core is None else _Core(core.expr, core.err, _cell(node, lhs.cell))
        made = _constant_operand(rhs, out.dtype, node)
        if made is None:
            return None
        const, err = made
        if name == "add":
            return _qnn_add(node, lhs, 0.0, const, err, site)
        return _qnn_mul(node, lhs, 0.0, const, err, site)

    # --- concatenate
    def _concatenate(self, node: Call, site: _QSite) -> _Core | None:
        out = site.params
        tup = node.args[0]
        if not isinstance(tup, Tuple) or not out.per_tensor or out.dtype not in _CONCAT:
            return None
        reps = [self.exact(f) for f in tup.fields]
        if any(r is None or not r.params.per_tensor or r.params.dtype != out.dtype
               for r in reps):
            return None
        for r in reps:
            assert r is not None
            if not _rescale_ok(r.params.deviation, r.params.scale / out.scale):
                return None
        exprs = Tuple(tuple(r.expr for r in reps))  # type: ignore[union-attr]
        scales = Tuple(tuple(r.params.scale_arg() for r in reps))  # type: ignore[union-attr]
        zps = Tuple(tuple(r.params.zero_point_arg() for r in reps))  # type: ignore[union-attr]
        expr = _call("qnn.concatenate", exprs, scales, zps, out.scale_arg(), out.zero_point_arg(),
                     attrs=QnnConcatenateAttrs(axis=node.attrs.axis),  # type: ignore[attr-defined]
                     like=node)
        cell = _cell(node, _cell(tup, *(r.cell for r in reps)))  # type: ignore[union-attr]
        return _Core(expr, _REL_SLACK, cell)


def _is_tail(name: str) -> bool:
    return name in ("nn.relu", "clip", "nn.max_pool2d", "nn.global_max_pool2d") \
        or name in _LAYOUT_OPS


def _pool_channel_axis(attrs: Attrs) -> int | None:
    layout = attrs.layout  # type: ignore[attr-defined]
    out_layout = attrs.out_layout or layout  # type: ignore[attr-defined]
    if out_layout != layout or "C" not in layout:
        return None
    return layout.index("C")


def _tail_ok(t: Call, site: _QSite) -> bool:
    """Does ``Q(t(v)) == t'(Q(v))`` hold for this quantize?"""
    name = t.op.name  # type: ignore[union-attr]
    if name in ("nn.relu", "clip"):
        return True
    if name in ("nn.max_pool2d", "nn.global_max_pool2d"):
        c = _pool_channel_axis(t.attrs)
        return c is not None and (site.params.per_tensor or site.params.axis == c)
    return site.params.per_tensor


# ====================================================================== finishing a core

def _finish_exact(rep: Exact, site: _QSite) -> _Core | None:
    out = site.params
    if rep.params.same(out):
        return _Core(rep.expr, 0.0, rep.cell)
    if not out.per_tensor or rep.params.dtype not in _REQUANT_IN or out.dtype not in _REQUANT_OUT:
        return None
    if not _rescale_ok(rep.params.deviation, rep.params.scale / out.scale):
        return None
    expr = _requantize(rep.expr, rep.params.scale, rep.params.zero_point, rep.params.axis, out,
                       site.node)
    return _Core(expr, _REL_SLACK, rep.cell)


def _finish_acc(rep: Acc, site: _QSite) -> _Core | None:
    out = site.params
    if not out.per_tensor or out.dtype not in _REQUANT_OUT:
        return None
    err = rep.err / float(out.scale) + _REL_SLACK
    if err > BUDGET or not _rescale_ok(rep.bound, rep.scale.astype(np.float64) / float(out.scale)):
        return None
    expr = _requantize(rep.expr, rep.scale, np.zeros((), np.int32), rep.axis, out, site.node)
    return _Core(expr, err, rep.cell)


def _constant_operand(value: np.ndarray, dtype: DType, like: Expr) -> tuple[Exact, float] | None:
    """A float constant as an Exact 8-bit operand: a uniform constant
    ``v`` exactly (scale ``|v|``, integer +-1), any other with the
    symmetric scale ``max|c| / 127``; returns it and its largest
    representation error."""
    c = np.asarray(value, np.float32)
    if dtype not in _BINARY or c.size == 0 or not np.all(np.isfinite(c)):
        return None
    top = float(np.max(np.abs(c)))
    if top == 0.0:
        return None
    zp = 0 if dtype is _I8 else 128
    if np.all(c == c.reshape(-1)[0]):
        scale = np.float32(top)
        zp = 0 if dtype is _I8 else 1
        q = np.where(c > 0, 1, -1) + zp
    else:
        scale = np.float32(top / 127.0)
        if not (np.isfinite(scale) and scale > 0):
            return None
        q = np.clip(np.round(c.astype(np.float64) / float(scale)), -127, 127) + zp
    params = QParams.make(np.asarray(scale), np.asarray(zp), None, dtype)
    if params is None:
        return None
    data = q.astype(dtype.np)
    err = float(np.max(np.abs(params.dequantized(data).astype(np.float64)
                              - c.astype(np.float64))))
    t = TensorType(c.shape, dtype)
    return Exact(Constant(data, span=like.span), params, t, None), err


def _binary_args(a: Exact, b: Exact, out: QParams) -> tuple[Expr, ...]:
    return (a.expr, b.expr, a.params.scale_arg(), a.params.zero_point_arg(),
            b.params.scale_arg(), b.params.zero_point_arg(), out.scale_arg(),
            out.zero_point_arg())


def _binary_attrs(a: Exact, b: Exact) -> BroadcastAttrs:
    return BroadcastAttrs(lhs_axis=-1 if a.params.axis is None else a.params.axis,
                          rhs_axis=-1 if b.params.axis is None else b.params.axis)


def _qnn_add(node: Call, a: Exact, ea: float, b: Exact, eb: float, site: _QSite) -> _Core | None:
    """``qnn.add`` (TFLite's ADD): operands shifted left by 20 bits and
    rescaled (at most 1.125 units of 2**-20 * twice the larger scale each),
    the sum rescaled with double rounding (at most 1/4 of a step)."""
    out = site.params
    if a.params.dtype != out.dtype or b.params.dtype != out.dtype:
        return None
    big = max(float(np.max(a.params.scale)), float(np.max(b.params.scale)))
    real_out = 2.0 * big / (float(1 << 20) * float(out.scale))
    if not real_out < 0.5:
        return None
    err = 2.5 * real_out + 0.25 + (ea + eb) / float(out.scale) + _REL_SLACK
    if err > BUDGET:
        return None
    expr = _call("qnn.add", *_binary_args(a, b, out), attrs=_binary_attrs(a, b), like=node)
    return _Core(expr, err, _cell(node, a.cell, b.cell))


def _qnn_mul(node: Call, a: Exact, ea: float, b: Exact, eb: float, site: _QSite) -> _Core | None:
    """``qnn.mul`` (TFLite's MUL): the exact product of the shifted
    operands rescaled with double rounding (at most 1/4 of a step)."""
    out = site.params
    if a.params.dtype != out.dtype or b.params.dtype != out.dtype:
        return None
    reals = np.multiply.outer(a.params.scale.astype(np.float64).reshape(-1),
                              b.params.scale.astype(np.float64).reshape(-1)) / float(out.scale)
    product = a.params.deviation * b.params.deviation
    top = float(np.max(reals))
    if not _multiplier_ok(reals) or product * top >= _SAFE:
        return None
    shift = quant.quantize_multiplier(top).shift
    if product * (1 << max(shift, 0)) >= _SAFE:
        return None
    # a constant's error e scales with the other operand's largest value
    err = 0.25 + (ea * b.params.max_real + eb * a.params.max_real + ea * eb) \
        / float(out.scale) + _REL_SLACK
    if err > BUDGET:
        return None
    expr = _call("qnn.mul", *_binary_args(a, b, out), attrs=_binary_attrs(a, b), like=node)
    return _Core(expr, err, _cell(node, a.cell, b.cell))


# ====================================================================== rules: exact

@_rule("qnn.dequantize", DEQUANTIZE)
def _dequantize(an: _Analysis, node: Call, nm: dict) -> Rep | None:
    q = nm[_QD][0]
    qt, t = _tensor_type(q), _tensor_type(node)
    s, z = an.value(nm[_QS][0]), an.value(nm[_QZ][0])
    if qt is None or t is None or s is None or z is None or t.dtype is not DType.FLOAT32 \
            or qt.dtype not in _QUANT_DTYPES:
        return None
    ndim = len(qt.shape)
    axis = node.attrs.axis  # type: ignore[attr-defined]
    axis = (axis + ndim if axis < 0 else axis) if ndim else None
    params = QParams.make(s, z, axis, qt.dtype)
    if params is None:
        return None
    return Exact(q, params, t, None)


def _same_op(node: Call, *args: Expr) -> Call:
    return Call(node.op, tuple(args), node.attrs, span=node.span)


def _layout(an: _Analysis, node: Call, nm: dict) -> Rep | None:
    x = an.reps.get(nm[_X][0])
    t = _tensor_type(node)
    if x is None or t is None:
        return None
    if isinstance(x, Exact):
        params = x.params
        if not params.per_tensor:
            if node.op.name != "transpose":  # type: ignore[union-attr]
                return None
            ndim = len(t.shape)
            axes = node.attrs.axes  # type: ignore[attr-defined]
            perm = list(range(ndim))[::-1] if axes is None else [a % ndim for a in axes]
            params = QParams(params.scale, params.zero_point, perm.index(params.axis),
                             params.dtype)
        return Exact(_same_op(node, x.expr), params, t, _cell(node, x.cell))
    if x.axis is not None:
        return None
    return Acc(_same_op(node, x.expr), x.scale, None, x.bound, x.err, t, _cell(node, x.cell))


for _name in _LAYOUT_OPS:
    _rule(_name, is_op(_name)(_X))(_layout)


def _max_pool(an: _Analysis, node: Call, nm: dict) -> Rep | None:
    x = an.reps.get(nm[_X][0])
    t = _tensor_type(node)
    c = _pool_channel_axis(node.attrs)
    if x is None or t is None or c is None:
        return None
    axis = x.params.axis if isinstance(x, Exact) else x.axis
    if axis is not None and axis != c:
        return None
    if isinstance(x, Exact):
        return Exact(_same_op(node, x.expr), x.params, t, _cell(node, x.cell))
    return Acc(_same_op(node, x.expr), x.scale, x.axis, x.bound, x.err, t, _cell(node, x.cell))


_rule("nn.max_pool2d", is_op("nn.max_pool2d")(_X))(_max_pool)
_rule("nn.global_max_pool2d", is_op("nn.global_max_pool2d")(_X))(_max_pool)


@_rule("nn.relu", is_op("nn.relu")(_X))
def _relu(an: _Analysis, node: Call, nm: dict) -> Rep | None:
    x = an.reps.get(nm[_X][0])
    t = _tensor_type(node)
    if x is None or t is None:
        return None
    ndim = len(t.shape)
    if isinstance(x, Acc):
        zero = Constant(np.zeros((), np.int32))
        return Acc(_call("maximum", x.expr, zero, like=node), x.scale, x.axis, x.bound, x.err,
                   t, _cell(node, x.cell))
    lo, hi = quant.dtype_range(x.params.dtype.np)
    if np.any(x.params.zero_point < lo) or np.any(x.params.zero_point > hi):
        return None
    zp = Constant(x.params.zero_point_at(ndim).astype(x.params.dtype.np))
    return Exact(_call("maximum", x.expr, zp, like=node), x.params, t, _cell(node, x.cell))


def _grid_index(params: QParams, value: float, side: str) -> int | None:
    """The integer ``k`` of the dtype with ``dequantize(k) == value``, the
    dtype's bound when ``value`` is beyond every dequantized value on
    ``side`` ("low" or "high"), else None (the bound is off the grid)."""
    lo, hi = quant.dtype_range(params.dtype.np)
    if hi - lo > 1 << 16:
        return None
    ks = np.arange(lo, hi + 1, dtype=np.int64)
    reals = params.dequantized(ks)
    if side == "low" and value <= reals[0]:
        return lo
    if side == "high" and value >= reals[-1]:
        return hi
    hits = np.nonzero(reals == np.float32(value))[0]
    if hits.size == 0:
        return None
    return int(ks[hits[0]] if side == "low" else ks[hits[-1]])


@_rule("clip", is_op("clip")(_X))
def _clip(an: _Analysis, node: Call, nm: dict) -> Rep | None:
    x = an.exact(nm[_X][0])
    t = _tensor_type(node)
    if x is None or t is None or not x.params.per_tensor:
        return None
    k_lo = _grid_index(x.params, node.attrs.a_min, "low")  # type: ignore[attr-defined]
    k_hi = _grid_index(x.params, node.attrs.a_max, "high")  # type: ignore[attr-defined]
    if k_lo is None or k_hi is None or k_lo > k_hi:
        return None
    expr = _call("clip", x.expr, attrs=ClipAttrs(float(k_lo), float(k_hi)), like=node)
    return Exact(expr, x.params, t, _cell(node, x.cell))


def _extremum(an: _Analysis, node: Call, nm: dict) -> Rep | None:
    a, b = an.exact(nm[_X][0]), an.exact(nm[_Y][0])
    t = _tensor_type(node)
    if a is None or b is None or t is None or not a.params.same(b.params):
        return None
    ta, tb = _tensor_type(nm[_X][0]), _tensor_type(nm[_Y][0])
    if a.params.axis is not None and (ta is None or tb is None or ta.shape != tb.shape):
        return None
    return Exact(_same_op(node, a.expr, b.expr), a.params, t, _cell(node, a.cell, b.cell))


_rule("maximum", is_op("maximum")(_X, _Y))(_extremum)
_rule("minimum", is_op("minimum")(_X, _Y))(_extremum)


@_rule("concatenate", is_op("concatenate")(is_tuple(None)))
def _concat_exact(an: _Analysis, node: Call, nm: dict) -> Rep | None:
    tup = node.args[0]
    t = _tensor_type(node)
    assert isinstance(tup, Tuple)
    reps = [an.exact(f) for f in tup.fields]
    if t is None or not reps or any(r is None for r in reps):
        return None
    first = reps[0]
    assert first is not None
    if not first.params.per_tensor or not all(r.params.same(first.params)  # type: ignore
                                              for r in reps):
        return None
    inner = Tuple(tuple(r.expr for r in reps), span=tup.span)  # type: ignore[union-attr]
    cell = _cell(node, _cell(tup, *(r.cell for r in reps)))  # type: ignore[union-attr]
    return Exact(_same_op(node, inner), first.params, t, cell)


@_rule("nn.pad", is_op("nn.pad")(_X, _Y))
def _pad(an: _Analysis, node: Call, nm: dict) -> Rep | None:
    x = an.exact(nm[_X][0])
    t = _tensor_type(node)
    if x is None or t is None:
        return None
    constant_mode = node.attrs.pad_mode.value == "constant"  # type: ignore[attr-defined]
    if constant_mode:
        v = an.float_value(nm[_Y][0])
        if v is None or v.size != 1 or not x.params.per_tensor:
            return None
        k = _grid_index(x.params, float(v.reshape(())), "exact")
        if k is None:
            return None
    else:
        k = int(np.max(x.params.zero_point)) if x.params.per_tensor else 0
        lo, hi = quant.dtype_range(x.params.dtype.np)
        k = min(max(k, lo), hi)
    fill = Constant(np.array(k, dtype=x.params.dtype.np))
    return Exact(_same_op(node, x.expr, fill), x.params, t, _cell(node, x.cell))


# ====================================================================== rules: accumulators

def _weight_sums(an: _Analysis, w: Exact, out_axis: int) -> np.ndarray | None:
    """``sum |w - zw|`` per output channel of a constant weight, or None."""
    v = an.value(w.expr)
    if v is None:
        return None
    ndim = v.ndim
    z = w.params.zero_point_at(ndim)
    dev = np.abs(v.astype(np.int64) - z)
    other = tuple(i for i in range(ndim) if i != out_axis)
    return dev.sum(axis=other)


def _acc_bound(an: _Analysis, x: Exact, w: Exact, out_axis: int, taps: int) -> int:
    sums = _weight_sums(an, w, out_axis)
    per_channel = int(np.max(sums)) if sums is not None and sums.size else taps * w.params.deviation
    return x.params.deviation * per_channel


def _acc_scale(x: Exact, w: Exact) -> np.ndarray:
    """The accumulator's scales ``sx * sw`` (float32, one per channel of
    a per-channel weight)."""
    return (x.params.scale.astype(np.float64) * w.params.scale.astype(np.float64)) \
        .astype(np.float32)


@_rule("nn.conv2d", is_op("nn.conv2d")(_X, _W))
def _conv2d(an: _Analysis, node: Call, nm: dict) -> Rep | None:
    x, w = an.exact(nm[_X][0]), an.exact(nm[_W][0])
    t, wt = _tensor_type(node), _tensor_type(nm[_W][0])
    a = node.attrs
    assert isinstance(a, Conv2DAttrs)
    if x is None or w is None or t is None or wt is None or not x.params.per_tensor:
        return None
    if x.params.dtype not in _CONV_IN or w.params.dtype not in _CONV_IN \
            or a.out_dtype not in (None, DType.FLOAT32):
        return None
    if a.data_layout not in ("NCHW", "NHWC") or a.out_layout not in ("", "NCHW", "NHWC") \
            or a.kernel_layout not in ("OIHW", "HWIO", "HWOI", "OHWI"):
        return None
    o_axis = a.kernel_layout.index("O")
    if not w.params.per_tensor and w.params.axis != o_axis:
        return None
    taps = int(np.prod(wt.shape)) // int(wt.shape[o_axis])
    bound = _acc_bound(an, x, w, o_axis, taps)
    if bound >= _SAFE:
        return None
    attrs = QnnConv2DAttrs(strides=a.strides, padding=a.padding, dilation=a.dilation,
                           groups=a.groups, channels=a.channels, kernel_size=a.kernel_size,
                           data_layout=a.data_layout, kernel_layout=a.kernel_layout,
                           out_layout=a.out_layout, out_dtype=_I32)
    expr = _call("qnn.conv2d", x.expr, w.expr, x.params.zero_point_arg(),
                 w.params.zero_point_arg(), x.params.scale_arg(), w.params.scale_arg(),
                 attrs=attrs, like=node)
    axis = None if w.params.per_tensor else (a.out_layout or a.data_layout).index("C")
    return Acc(expr, _acc_scale(x, w), axis, bound, 0.0, t, _cell(node, x.cell, w.cell))


def _dense_acc(an: _Analysis, node: Call, x: Exact, w: Exact, w_expr: Expr,
               w_value: np.ndarray | None, t: TensorType, units: int | None) -> Rep | None:
    """``qnn.dense`` of ``x`` and the ``(units, K)`` weight ``w_expr``
    (values ``w_value`` when constant) whose quantization ``w`` is per
    tensor or per row (axis 0)."""
    if not x.params.per_tensor or x.params.dtype not in _DENSE_DATA \
            or w.params.dtype not in _DENSE_WEIGHT:
        return None
    if not w.params.per_tensor and w.params.axis != 0:
        return None
    k = int(t.shape[-1]) if w_value is None else int(w_value.shape[1])
    if w_value is None:
        bound = x.params.deviation * k * w.params.deviation
    else:
        dev = np.abs(w_value.astype(np.int64) - w.params.zero_point_at(2))
        bound = x.params.deviation * int(np.max(dev.sum(axis=1)))
    if bound >= _SAFE:
        return None
    expr = _call("qnn.dense", x.expr, w_expr, x.params.zero_point_arg(),
                 w.params.zero_point_arg(), x.params.scale_arg(), w.params.scale_arg(),
                 attrs=QnnDenseAttrs(units=units, out_dtype=_I32), like=node)
    axis = None if w.params.per_tensor else len(t.shape) - 1
    return Acc(expr, _acc_scale(x, w), axis, bound, 0.0, t, _cell(node, x.cell, w.cell))


@_rule("nn.dense", is_op("nn.dense")(_X, _W))
def _dense(an: _Analysis, node: Call, nm: dict) -> Rep | None:
    x, w = an.exact(nm[_X][0]), an.exact(nm[_W][0])
    t = _tensor_type(node)
    if x is None or w is None or t is None \
            or node.attrs.out_dtype not in (None, DType.FLOAT32):  # type: ignore[attr-defined]
        return None
    wt = _tensor_type(w.expr)
    if wt is None or len(wt.shape) != 2:
        return None
    units = node.attrs.units  # type: ignore[attr-defined]
    return _dense_acc(an, node, x, w, w.expr, an.value(w.expr), t, units)


@_rule("nn.matmul", is_op("nn.matmul")(_X, _W))
def _matmul(an: _Analysis, node: Call, nm: dict) -> Rep | None:
    """``x @ w`` with a constant 2-D ``w``: ``qnn.dense`` of the weight
    transposed at compile time."""
    x, w = an.exact(nm[_X][0]), an.exact(nm[_W][0])
    t = _tensor_type(node)
    a = node.attrs
    if x is None or w is None or t is None or a.transpose_a \
            or a.out_dtype not in (None, DType.FLOAT32):  # type: ignore[attr-defined]
        return None
    v = an.value(w.expr)
    if v is None or v.ndim != 2:
        return None
    params = w.params
    if not a.transpose_b:  # type: ignore[attr-defined]
        v = v.T
        if not params.per_tensor:
            if params.axis != 1:
                return None
            params = QParams(params.scale, params.zero_point, 0, params.dtype)
    v = np.ascontiguousarray(v)
    weight = Constant(v, span=w.expr.span)
    return _dense_acc(an, node, x, Exact(w.expr, params, w.ttype, w.cell), weight, v, t, None)


def _with_constant(an: _Analysis, node: Call, acc: Acc, b: np.ndarray) -> Rep | None:
    """``acc + b`` for a float constant ``b`` (broadcasting against the
    accumulator): ``b`` rounded to the accumulator's scales, its rounding
    added to ``err``."""
    t = _tensor_type(node)
    if t is None:
        return None
    ndim = len(t.shape)
    scale = acc.scale_at(ndim)
    with np.errstate(all="ignore"):
        b_int = np.round(b.astype(np.float64) / scale)
    if not np.all(np.isfinite(b_int)):
        return None
    try:
        if np.broadcast_shapes(tuple(t.shape), b_int.shape) != tuple(t.shape):
            return None
    except ValueError:
        return None
    top = float(np.max(np.abs(b_int))) if b_int.size else 0.0
    if acc.bound + top >= _SAFE:
        return None
    err = float(np.max(np.abs(b_int * scale - b.astype(np.float64)))) if b_int.size else 0.0
    const = Constant(b_int.astype(np.int32))
    return Acc(_call("add", acc.expr, const, like=node), acc.scale, acc.axis,
               acc.bound + int(top), acc.err + err, t, _cell(node, acc.cell))


@_rule("nn.bias_add", is_op("nn.bias_add")(_X, _Y))
def _bias_add(an: _Analysis, node: Call, nm: dict) -> Rep | None:
    acc = an.acc(nm[_X][0])
    b = an.float_value(nm[_Y][0])
    t = _tensor_type(node)
    if acc is None or b is None or t is None or b.ndim != 1:
        return None
    ndim = len(t.shape)
    axis = node.attrs.axis % ndim  # type: ignore[attr-defined]
    return _with_constant(an, node, acc, _along(b, ndim, axis))


#: the bits an Exact operand is shifted left by when it becomes an
#: accumulator (:func:`_widen`): fine enough that a constant added at the
#: new scale rounds by at most 2**-(bits+1) of the operand's step
_WIDEN_BITS = 24


def _widen(x: Exact, ndim: int, like: Call, factors: np.ndarray | None = None,
           axis: int | None = None) -> Acc:
    """An Exact value as an accumulator: ``(int32(q) - z) * m`` with
    ``m = sign(f) * 2**k`` and scales ``s * |f| / 2**k`` (``f``: one
    factor, default 1, or one per index of ``axis``, which is then ``x``'s
    channel axis if it has one), so that constants added later are
    represented finely; ``k`` keeps ``|acc| < 2**24``."""
    dev = x.params.deviation
    k = max(0, _WIDEN_BITS - dev.bit_length())
    f = np.ones(()) if factors is None else factors
    mult = np.where(f < 0, -1, np.where(f > 0, 1, 0)) * (1 << k)
    magnitude = np.where(f == 0, 1.0, np.abs(f))
    scale = (x.params.scale.astype(np.float64) * magnitude / (1 << k)).astype(np.float32)
    if f.size == 1:
        axis = x.params.axis
    return _scaled_ints(x, ndim, like, mult, scale, axis, dev << k)


def _scaled_ints(x: Exact, ndim: int, like: Call, mult: np.ndarray, scale: np.ndarray,
                 axis: int | None, bound: int) -> Acc:
    ints: Expr = _call("cast", x.expr, attrs=CastAttrs(dtype=_I32), like=like)
    if np.any(x.params.zero_point):
        zp = Constant(x.params.zero_point_at(ndim).astype(np.int32))
        ints = _call("subtract", ints, zp, like=like)
    if np.any(mult != 1):
        ints = _call("multiply", ints, Constant(_along(mult.astype(np.int32), ndim, axis)),
                     like=like)
    if scale.size == 1:
        scale, axis = scale.reshape(()), None
    return Acc(ints, scale, axis, bound, 0.0, x.ttype, x.cell)


def _channel_factors(c: np.ndarray, ndim: int, axis: int | None) -> tuple[np.ndarray, int | None] | None:
    """A constant factor as (values, axis): one value, or one per index of
    a single axis, which must agree with the operand's channel ``axis``."""
    c_axis = _param_axis(c.shape, ndim)
    if c_axis is False:
        return None
    values = c.astype(np.float64).reshape(-1)
    if c_axis is None:
        return values[:1].reshape(()), axis
    if axis is not None and axis != c_axis:
        return None
    return values, c_axis  # type: ignore[return-value]


def _split_constant(an: _Analysis, nm: dict) -> tuple[Expr, Rep, np.ndarray] | None:
    """The operand with a representation and the other's constant value
    (an operand that is not itself a constant preferred)."""
    lhs, rhs = nm[_X][0], nm[_Y][0]
    found = []
    for x, c in ((lhs, rhs), (rhs, lhs)):
        rep, value = an.reps.get(x), an.float_value(c)
        if rep is not None and value is not None:
            found.append((an.closed.get(x, False), x, rep, value))
    if not found:
        return None
    _, x, rep, value = min(found, key=lambda f: f[0])
    return x, rep, value


@_rule("multiply", is_op("multiply")(_X, _Y))
@_rule("divide", is_op("divide")(_X, _Y))
def _rescale(an: _Analysis, node: Call, nm: dict) -> Rep | None:
    """``x * c`` or ``x / c`` for a constant ``c`` per tensor or per
    channel (a batch normalisation after SimplifyInference): an
    accumulator whose scales absorb ``|c|`` and whose integers carry its
    sign (and, from an Exact ``x``, a shift, :func:`_widen`)."""
    split = _split_constant(an, nm)
    t = _tensor_type(node)
    if split is None or t is None:
        return None
    x_node, x, c = split
    name = node.op.name  # type: ignore[union-attr]
    if name == "divide" and x_node is not nm[_X][0]:
        return None                                   # c / x is not linear
    if _tensor_type(x_node) is None or _tensor_type(x_node).shape != t.shape:  # type: ignore
        return None
    ndim = len(t.shape)
    x_axis = x.params.axis if isinstance(x, Exact) else x.axis
    got = _channel_factors(c, ndim, x_axis)
    if got is None:
        return None
    factors, axis = got
    if name == "divide":
        if np.any(factors == 0):
            return None
        factors = 1.0 / factors
    if not np.all(np.isfinite(factors)):
        return None
    if isinstance(x, Exact):
        acc = _widen(x, ndim, node, factors, axis)
        acc = Acc(acc.expr, acc.scale, acc.axis if acc.scale.ndim else None, acc.bound, 0.0, t,
                  _cell(node, x.cell))
    else:
        mult = np.where(factors < 0, -1, np.where(factors > 0, 1, 0))
        magnitude = np.where(factors == 0, 1.0, np.abs(factors))
        scale = (x.scale.astype(np.float64) * magnitude).astype(np.float32)
        expr = x.expr
        if np.any(mult != 1):
            expr = _call("multiply", expr, Constant(_along(mult.astype(np.int32), ndim, axis)),
                         like=node)
        if scale.size == 1:
            scale, axis = scale.reshape(()), None
        acc = Acc(expr, scale, axis, x.bound, x.err * float(np.max(magnitude)), t,
                  _cell(node, x.cell))
    if not np.all(np.isfinite(acc.scale)) or np.any(acc.scale <= 0):
        return None
    return acc


@_rule("add", is_op("add")(_X, _Y))
def _add_acc(an: _Analysis, node: Call, nm: dict) -> Rep | None:
    """``acc + acc`` with equal scales; ``acc + c`` and ``x + c`` for an
    Exact ``x`` (widened first) and a constant ``c``."""
    lhs, rhs = nm[_X][0], nm[_Y][0]
    a, b = an.acc(lhs), an.acc(rhs)
    t = _tensor_type(node)
    if t is None:
        return None
    if a is not None and b is not None:
        same = a.axis == b.axis and a.scale.shape == b.scale.shape \
            and bool(np.all(a.scale == b.scale))
        if not same or a.bound + b.bound >= _SAFE or a.ttype.shape != b.ttype.shape:
            return None
        return Acc(_call("add", a.expr, b.expr, like=node), a.scale, a.axis, a.bound + b.bound,
                   a.err + b.err, t, _cell(node, a.cell, b.cell))
    return _plus_constant(an, node, nm, 1.0)


@_rule("subtract", is_op("subtract")(_X, _Y))
def _subtract_acc(an: _Analysis, node: Call, nm: dict) -> Rep | None:
    """``x - c`` for a constant ``c``."""
    return _plus_constant(an, node, nm, -1.0)


def _plus_constant(an: _Analysis, node: Call, nm: dict, sign: float) -> Rep | None:
    split = _split_constant(an, nm)
    t = _tensor_type(node)
    if split is None or t is None or (sign < 0 and split[0] is not nm[_X][0]):
        return None
    _, x, c = split
    acc = _widen(x, len(t.shape), node) if isinstance(x, Exact) else x
    return _with_constant(an, node, acc, sign * c.astype(np.float64))


def _sum_of_shifted(x: Exact, ndim: int, attrs: ReduceAttrs, like: Call) -> Call:
    """``sum(int32(q) - z)`` with the reduction's attributes."""
    shifted: Expr = _call("cast", x.expr, attrs=CastAttrs(dtype=_I32), like=like)
    if np.any(x.params.zero_point):
        zp = Constant(x.params.zero_point_at(ndim).astype(np.int32))
        shifted = _call("subtract", shifted, zp, like=like)
    return _call("sum", shifted, attrs=attrs, like=like)


def _mean_acc(an: _Analysis, node: Call, x: Exact, axes: set[int], attrs: ReduceAttrs,
              xt: TensorType) -> Rep | None:
    t = _tensor_type(node)
    ndim = len(xt.shape)
    if t is None or not axes or (x.params.axis is not None and x.params.axis in axes):
        return None
    n = int(np.prod([xt.shape[i] for i in axes]))
    bound = n * x.params.deviation
    if bound >= _SAFE:
        return None
    axis = x.params.axis
    if axis is not None and not attrs.keepdims:
        axis -= sum(1 for i in axes if i < axis)
    scale = (x.params.scale.astype(np.float64) / n).astype(np.float32)
    return Acc(_sum_of_shifted(x, ndim, attrs, node), scale, axis, bound, 0.0, t,
               _cell(node, x.cell))


@_rule("mean", is_op("mean")(_X))
def _mean(an: _Analysis, node: Call, nm: dict) -> Rep | None:
    x = an.exact(nm[_X][0])
    xt = _tensor_type(nm[_X][0])
    a = node.attrs
    if x is None or xt is None or not isinstance(a, ReduceAttrs):
        return None
    ndim = len(xt.shape)
    chosen = set(range(ndim)) if a.axis is None else {i % ndim for i in a.axis}
    axes = set(range(ndim)) - chosen if a.exclude else chosen
    return _mean_acc(an, node, x, axes, a, xt)


@_rule("nn.global_avg_pool2d", is_op("nn.global_avg_pool2d")(_X))
def _global_avg_pool(an: _Analysis, node: Call, nm: dict) -> Rep | None:
    x = an.exact(nm[_X][0])
    xt = _tensor_type(nm[_X][0])
    a = node.attrs
    assert isinstance(a, GlobalPool2DAttrs)
    if x is None or xt is None or _pool_channel_axis(a) is None:
        return None
    axes = {a.layout.index("H"), a.layout.index("W")}
    attrs = ReduceAttrs(axis=tuple(sorted(axes)), keepdims=True)
    return _mean_acc(an, node, x, axes, attrs, xt)


@_rule("nn.avg_pool2d", is_op("nn.avg_pool2d")(_X))
def _avg_pool(an: _Analysis, node: Call, nm: dict) -> Rep | None:
    """A window average with a fixed divisor (no padding, or padding
    counted) as a depthwise ``qnn.conv2d`` with unit weights: the exact
    window sum, scale ``s / taps``."""
    x = an.exact(nm[_X][0])
    xt, t = _tensor_type(nm[_X][0]), _tensor_type(node)
    a = node.attrs
    assert isinstance(a, AvgPool2DAttrs)
    if x is None or xt is None or t is None or not x.params.per_tensor \
            or x.params.dtype not in _CONV_IN or _pool_channel_axis(a) is None \
            or a.layout not in ("NCHW", "NHWC") or a.ceil_mode:
        return None
    if any(a.padding) and not a.count_include_pad:
        return None
    kh, kw = pair(a.pool_size)
    channels = int(xt.shape[a.layout.index("C")])
    taps = kh * kw
    bound = taps * x.params.deviation
    ones = Constant(np.ones((channels, 1, kh, kw), np.int8))
    attrs = QnnConv2DAttrs(strides=a.strides, padding=a.padding, dilation=a.dilation,
                           groups=channels, channels=channels, kernel_size=(kh, kw),
                           data_layout=a.layout, kernel_layout="OIHW", out_dtype=_I32)
    expr = _call("qnn.conv2d", x.expr, ones, x.params.zero_point_arg(),
                 Constant(np.zeros((), np.int32)), x.params.scale_arg(),
                 Constant(np.ones((), np.float32)), attrs=attrs, like=node)
    scale = (x.params.scale.astype(np.float64) / taps).astype(np.float32)
    return Acc(expr, scale, None, bound, 0.0, t, _cell(node, x.cell))


# ====================================================================== choosing and rewriting

def _choose(plans: list[_Plan], an: _Analysis) -> dict[Expr, _Plan]:
    """The plans whose replaced float nodes are used only inside rewritten
    regions (else the float node would stay for its other user and be
    computed twice), to a fixed point."""
    chosen = {p.site.node: p for p in plans}
    while chosen:
        covered: set[Expr] = set(chosen)
        for p in chosen.values():
            covered |= p.region
        dropped = [q for q, p in chosen.items()
                   if any(u not in covered for n in p.region for u in an.users.get(n, ()))]
        if not dropped:
            break
        for q in dropped:
            del chosen[q]
    return chosen


class _Rewriter(ExprMutator):
    """Replaces each chosen quantize by its integer expression, whose
    leaves (nodes of the original function) map to their rewritten
    versions through the shared memo, so integer values shared by several
    regions are built once."""

    def __init__(self, plans: dict[Expr, _Plan]) -> None:
        super().__init__()
        self.plans = plans

    def visit_call(self, node: Call) -> Visit:
        new = yield from super().visit_call(node)
        plan = self.plans.get(node)
        if plan is None:
            return new
        sub = ExprMutator()
        sub.memo = self.memo
        return sub.visit(plan.expr)


def _rewrite_function(func: Function, mod: IRModule) -> Function:
    an = _Analysis(func, mod)
    plans = _choose(an.run(), an)
    if not plans:
        return func
    out = _Rewriter(plans).visit(func)
    assert isinstance(out, Function)
    return out


def rewrite_plans(func: Function, mod: IRModule) -> list[_Plan]:
    """The regions the pass would rewrite in ``func`` (for tests and
    diagnostics): each quantize node, its integer expression, the float
    nodes it replaces and its static error bound in steps."""
    an = _Analysis(func, mod)
    return list(_choose(an.run(), an).values())


@register_pass("FakeQuantizationToInteger", opt_level=4)
def fake_quantization_to_integer(mod: IRModule) -> IRModule:
    """Rewrite QDQ regions (dequantize -> float operators -> quantize) into
    integer qnn operators (qnn.conv2d, qnn.dense, qnn.requantize, qnn.add,
    qnn.mul, qnn.concatenate, integer pooling/clip/layout), within one
    quantization step of the float program, exactly where the integer
    operators are exact.

    Level 4: only when required (it changes results by up to one step)."""
    from .type_infer import infer_types
    typed = mod if mod.is_typed else infer_types(mod)
    out = typed.copy()
    changed = False
    for gv, func in typed.functions.items():
        new = _rewrite_function(func, typed)
        if new is not func:
            out.add(gv, new)
            changed = True
    return infer_types(out) if changed else typed
