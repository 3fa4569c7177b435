"""Quantization parameters and the integer representations of float
values -- :class:`Exact` and :class:`Acc` -- with the records and small
builders shared by the rules (see the design note of
:mod:`aot.passes.fake_quantization_to_integer`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ...ir import quant
from ...ir.attrs import Attrs
from ...ir.dtype import DType
from ...ir.expr import Call, Constant, Expr, op
from ...ir.ops.qnn import RequantizeAttrs, Rounding
from ...ir.types import TensorType

#: the largest deviation, in steps of the final quantize, that the integer
#: program may add before its final rounding (see the rule)
BUDGET = 0.375
#: integer intermediates are kept below this bound (no int32 wrap-around,
#: with room for zero points and rounding)
SAFE = 1 << 30
#: slack for relative errors (float32 scale products, fixed-point multipliers)
REL_SLACK = 2.0 ** -6

I8, U8, I16, U16, I32 = DType.INT8, DType.UINT8, DType.INT16, DType.UINT16, DType.INT32
QUANT_DTYPES = (I8, U8, I16, U16, I32)
REQUANT_IN = (I8, U8, I16, I32)
REQUANT_OUT = (I8, U8, I16, I32)
CONV_IN = (I8, U8, I16)
DENSE_DATA = (I8, U8, I16, U16)
DENSE_WEIGHT = (I8, U8)
BINARY = (I8, U8)
CONCAT = (I8, U8, I16, I32)
#: data dtypes of qnn.avg_pool2d
POOL = (I8, U8, I16)
#: one-input operators that only move, repeat or select elements (max/min
#: reductions select one): they commute with every non-decreasing
#: elementwise map, so with dequantize and quantize of one set of parameters
LAYOUT_OPS = ("reshape", "transpose", "squeeze", "expand_dims", "nn.batch_flatten",
              "strided_slice", "reverse", "tile", "repeat", "broadcast_to",
              "layout_transform", "max", "min")


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
                or np.any(np.abs(zf) >= SAFE):
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
        return along(self.scale.astype(np.float64), ndim, self.axis)

    def zero_point_at(self, ndim: int) -> np.ndarray:
        return along(self.zero_point, ndim, self.axis)

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


def along(values: np.ndarray, ndim: int, axis: int | None) -> np.ndarray:
    if axis is None or values.ndim == 0:
        return values.reshape(())
    shape = [1] * ndim
    shape[axis] = values.size
    return values.reshape(shape)


def param_axis(shape: tuple[int, ...], ndim: int) -> int | None | bool:
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
class Cell:
    """A persistent set of the float nodes an integer value replaces: one
    node and the cells of its operands (shared, so long chains cost
    O(1) per node)."""

    node: Expr | None
    parts: tuple[Cell, ...] = ()


def acc_scale(x: Exact, w: Exact) -> np.ndarray:
    """The accumulator's scales ``sx * sw`` of a product of two exact
    operands (float32, one per channel of a per-channel weight)."""
    return (x.params.scale.astype(np.float64) * w.params.scale.astype(np.float64)) \
        .astype(np.float32)


def make_cell(node: Expr, *parts: Cell | None) -> Cell:
    return Cell(node, tuple(p for p in parts if p is not None))


def flatten_cells(cells: Sequence[Cell | None]) -> set[Expr]:
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
    cell: Cell | None


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
    cell: Cell | None

    def scale_at(self, ndim: int) -> np.ndarray:
        return along(self.scale.astype(np.float64), ndim, self.axis)


Rep = Exact | Acc


@dataclass(frozen=True, eq=False)
class QSite:
    """A quantize: ``node`` quantizes the float ``data`` with ``params``;
    ``interior`` are the other float nodes of a composite quantize,
    ``narrow`` its clip range when narrower than the dtype's and
    ``ties_even`` whether it rounds ties to even (ONNX's QuantizeLinear)
    rather than away from zero (``qnn.quantize``)."""

    node: Call
    data: Expr
    params: QParams
    interior: tuple[Expr, ...]
    narrow: tuple[int, int] | None
    ttype: TensorType
    ties_even: bool = False


@dataclass(frozen=True, eq=False)
class Core:
    """A core finished with a quantize's parameters."""

    expr: Expr
    err: float            # in steps of the quantize
    cell: Cell | None


@dataclass(frozen=True, eq=False)
class Plan:
    site: QSite
    expr: Expr
    region: frozenset[Expr]
    err: float


# ====================================================================== small builders

def make_call(name: str, *args: Expr, attrs: Attrs | None = None, like: Expr | None = None) -> Call:
    span = like.span if like is not None else None
    if attrs is None:
        return Call(op(name), tuple(args), span=span)
    return Call(op(name), tuple(args), attrs, span=span)


def make_requantize(x: Expr, in_scale: np.ndarray, in_zp: np.ndarray, axis: int | None,
                    out: QParams, like: Expr) -> Call:
    attrs = RequantizeAttrs(axis=-1 if axis is None else axis, rounding=Rounding.TONEAREST,
                            out_dtype=out.dtype)
    return make_call("qnn.requantize", x, Constant(np.array(in_scale, np.float32)),
                     Constant(np.array(in_zp, np.int32)), out.scale_arg(), out.zero_point_arg(),
                     attrs=attrs, like=like)


def tensor_type(e: Expr) -> TensorType | None:
    t = e.checked_type
    return t if isinstance(t, TensorType) and all(isinstance(d, int) for d in t.shape) else None


def multiplier_ok(reals: np.ndarray) -> bool:
    """Every rescaling factor has a fixed-point multiplier."""
    try:
        for r in np.unique(np.asarray(reals, np.float64).reshape(-1)):
            quant.quantize_multiplier(float(r))
    except quant.QuantizationError:
        return False
    return True


def rescale_ok(bound: float, reals: np.ndarray) -> bool:
    """``qnn.requantize`` of values up to ``bound`` by ``reals`` neither
    fails nor wraps."""
    return multiplier_ok(reals) and bound * float(np.max(reals)) < SAFE



def pool_channel_axis(attrs: Attrs) -> int | None:
    layout = attrs.layout  # type: ignore[attr-defined]
    out_layout = attrs.out_layout or layout  # type: ignore[attr-defined]
    if out_layout != layout or "C" not in layout:
        return None
    return layout.index("C")
