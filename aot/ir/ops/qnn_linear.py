"""qnn.dense and qnn.conv2d: the integer accumulator of a quantized matrix
product or convolution (part of the qnn family, see :mod:`aot.ir.ops.qnn`).

Both return ``sum((data - input_zero_point) * (weight - kernel_zero_point))``
exactly, as Relay's qnn lowering does: the result has ``out_dtype`` (int32
by default) and stands for reals with scale ``input_scale * kernel_scale``
and zero point 0; a following ``qnn.requantize`` brings it back to 8 bits.
The scales are checked (float32; ``kernel_scale`` scalar or one value per
output channel) but do not take part in the computation.
``kernel_zero_point`` may also be per output channel.  The accumulation is
exact (int64 here); the result is truncated (wrapped) to ``out_dtype``, which
is what int32 accumulation wrapping modulo 2**32 gives.

qnn.conv2d: padding positions hold the input zero point (they contribute
nothing), as Relay pads quantized data with it.  Layouts: data ``NCHW`` or
``NHWC``, kernel ``OIHW``, ``HWIO``, ``HWOI`` or ``OHWI`` (those of Relay's
qnn lowering); ``out_layout`` is ``""`` (the data layout), ``NCHW`` or
``NHWC``.  Grouped convolution is the general one: output channel ``o``
belongs to group ``o // (O / groups)`` and reads input channels
``g * I .. g * I + I - 1`` where ``I`` is the kernel's input-channel extent
(so ``C_in == groups * I``).  A depthwise convolution is ``groups == C_in``
with ``I == 1`` (channel multiplier ``O / C_in``).  ``padding`` takes 1, 2
or 4 values (all sides; top/bottom and left/right; top, left, bottom,
right), as Relay.  The reference is the grouped convolution of
:mod:`aot.ir.ops.nn_conv` accumulated in int64 -- not a float convolution.
"""

from __future__ import annotations

from typing import ClassVar, Sequence

from ..attrs import attrs_class
from ..registry import Solved
from ..types import Dim, Type
from .common import (ANY, Attrs, DType, PatternKind, RelationError, TensorType, as_array,
                     defop, np, out_tensor_type, tensor_arg)
from .nn_util import compatible, dilated_extent, padding_2d, pair, to_canonical, window_count
from .nn_conv import conv2d_nchw
from .qnn_common import kernel_params, scales, with_params, zero_points

FAMILY = "qnn"

_DENSE_DATA = (DType.INT8, DType.UINT8, DType.INT16, DType.UINT16)
_DENSE_WEIGHT = (DType.INT8, DType.UINT8)
_DENSE_OUT = (DType.INT32, DType.INT64)
_CONV_IN = (DType.INT8, DType.UINT8, DType.INT16)
_CONV_OUT = (DType.INT16, DType.INT32, DType.INT64)
_DATA_LAYOUTS = ("NCHW", "NHWC")
_KERNEL_LAYOUTS = ("OIHW", "HWIO", "HWOI", "OHWI")


def _names(dtypes: Sequence[DType]) -> str:
    return ", ".join(str(d) for d in dtypes)


@attrs_class
class QnnDenseAttrs(Attrs):
    """Relay's ``DenseAttrs`` as qnn.dense uses them; ``out_dtype=None``
    means int32 (the Python API's default)."""

    type_key: ClassVar[str] = "DenseAttrs"
    units: int | None = None
    out_dtype: DType | None = None

    def __post_init__(self) -> None:
        if self.units is not None and self.units < 1:
            raise ValueError(f"qnn.dense units must be positive, got {self.units}")
        if self.out_dtype is not None and self.out_dtype not in _DENSE_OUT:
            raise ValueError(f"qnn.dense out_dtype must be one of {_names(_DENSE_OUT)}, "
                             f"got {self.out_dtype}")

    @property
    def result_dtype(self) -> DType:
        return self.out_dtype or DType.INT32


@attrs_class
class QnnConv2DAttrs(Attrs):
    """Relay's ``Conv2DAttrs`` as qnn.conv2d uses them; ``out_dtype=None``
    means int32."""

    type_key: ClassVar[str] = "Conv2DAttrs"
    strides: tuple[int, ...] = (1, 1)
    padding: tuple[int, ...] = (0, 0)
    dilation: tuple[int, ...] = (1, 1)
    groups: int = 1
    channels: int | None = None
    kernel_size: tuple[int, ...] | None = None
    data_layout: str = "NCHW"
    kernel_layout: str = "OIHW"
    out_layout: str = ""
    out_dtype: DType | None = None

    def __post_init__(self) -> None:
        for name in ("strides", "dilation"):
            value = getattr(self, name)
            if len(value) != 2 or any(v < 1 for v in value):
                raise ValueError(f"qnn.conv2d {name} must be two positive integers, "
                                 f"got {list(value)}")
        if len(self.padding) not in (1, 2, 4) or any(p < 0 for p in self.padding):
            raise ValueError(f"qnn.conv2d padding must be 1, 2 or 4 non-negative integers, "
                             f"got {list(self.padding)}")
        if self.groups < 1:
            raise ValueError(f"qnn.conv2d groups must be positive, got {self.groups}")
        if self.channels is not None and self.channels < 1:
            raise ValueError(f"qnn.conv2d channels must be positive, got {self.channels}")
        if self.kernel_size is not None and (len(self.kernel_size) != 2
                                             or any(k < 1 for k in self.kernel_size)):
            raise ValueError(f"qnn.conv2d kernel_size must be two positive integers, "
                             f"got {list(self.kernel_size)}")
        if self.data_layout not in _DATA_LAYOUTS:
            raise ValueError(f"qnn.conv2d data_layout must be one of "
                             f"{', '.join(_DATA_LAYOUTS)}, got {self.data_layout!r}")
        if self.kernel_layout not in _KERNEL_LAYOUTS:
            raise ValueError(f"qnn.conv2d kernel_layout must be one of "
                             f"{', '.join(_KERNEL_LAYOUTS)}, got {self.kernel_layout!r}")
        if self.out_layout not in ("",) + _DATA_LAYOUTS:
            raise ValueError(f"qnn.conv2d out_layout must be empty, NCHW or NHWC, "
                             f"got {self.out_layout!r}")
        if self.out_dtype is not None and self.out_dtype not in _CONV_OUT:
            raise ValueError(f"qnn.conv2d out_dtype must be one of {_names(_CONV_OUT)}, "
                             f"got {self.out_dtype}")

    @property
    def result_dtype(self) -> DType:
        return self.out_dtype or DType.INT32

    @property
    def pads(self) -> tuple[int, int, int, int]:
        """(top, left, bottom, right)"""
        return padding_2d(self.padding)

    @property
    def result_layout(self) -> str:
        return self.out_layout or self.data_layout


def _operand(args: Sequence[Type], i: int, what: str,
             allowed: Sequence[DType]) -> TensorType | None:
    t = tensor_arg(args, i, what)
    if t is not None and t.dtype not in allowed:
        raise RelationError(f"{what} must be {_names(allowed)}, got {t}")
    return t


# -------------------------------------------------------------------- dense

def _dense_rel(args: Sequence[Type], attrs: QnnDenseAttrs) -> Type | Solved | None:
    data = _operand(args, 0, "data", _DENSE_DATA)
    weight = _operand(args, 1, "weight", _DENSE_WEIGHT)
    if data is None or weight is None:
        return None
    if len(data.shape) < 1:
        raise RelationError(f"data must have rank >= 1, got {data}")
    if len(weight.shape) != 2:
        raise RelationError(f"weight must be 2-D (units, input_dim), got {weight}")
    units, k = weight.shape
    if not compatible(data.shape[-1], k):
        raise RelationError(f"the data's last dimension {data.shape[-1]} does not match the "
                            f"weight's input dimension {k} (data {data}, weight {weight})")
    if attrs.units is not None and not compatible(units, attrs.units):
        raise RelationError(f"units={attrs.units} does not match the weight {weight}")
    if units is ANY and attrs.units is not None:
        units = attrs.units
    params = kernel_params(args, units)
    if params is None:
        return None
    return with_params(TensorType(data.shape[:-1] + (units,), attrs.result_dtype), params)


def _per_channel(value: np.ndarray, n: int) -> np.ndarray:
    """A kernel zero point as an (n,) vector, one per output channel."""
    v = np.asarray(value)
    return np.broadcast_to(v.reshape(()), (n,)) if v.size == 1 else v.reshape(n)


def _dense(args: Sequence[np.ndarray], attrs: QnnDenseAttrs, out: Type) -> np.ndarray:
    data, weight, in_zp, k_zp, in_scale, k_scale = args
    scales(in_scale, "input_scale")
    scales(k_scale, "kernel_scale")
    w = np.asarray(weight).astype(np.int64)
    x = np.asarray(data).astype(np.int64) - zero_points(in_zp).reshape(())
    w = w - _per_channel(zero_points(k_zp), w.shape[0])[:, None]
    acc = np.matmul(x, w.T)
    return as_array(acc, out_tensor_type(out).dtype)


# ------------------------------------------------------------------- conv2d

def _conv_out_dim(size: Dim, pad: int, kernel: Dim, dilation: int, stride: int,
                  what: str) -> Dim:
    if size is ANY or kernel is ANY:
        return ANY
    extent = dilated_extent(kernel, dilation)  # type: ignore[arg-type]
    padded = size + pad
    if padded < extent:
        raise RelationError(f"the dilated kernel {what} {extent} is larger than the padded "
                            f"input {what} {padded}")
    return window_count(padded, extent, stride)


def _conv2d_rel(args: Sequence[Type], attrs: QnnConv2DAttrs) -> Type | Solved | None:
    data = _operand(args, 0, "data", _CONV_IN)
    weight = _operand(args, 1, "weight", _CONV_IN)
    if data is None or weight is None:
        return None
    if len(data.shape) != 4:
        raise RelationError(f"data must be 4-D ({attrs.data_layout}), got {data}")
    if len(weight.shape) != 4:
        raise RelationError(f"weight must be 4-D ({attrs.kernel_layout}), got {weight}")
    n, c, h, w = to_canonical(data.shape, attrs.data_layout, "NCHW")
    o, i, kh, kw = to_canonical(weight.shape, attrs.kernel_layout, "OIHW")
    g = attrs.groups
    if c is not ANY and c % g != 0:
        raise RelationError(f"input channels {c} are not divisible by groups={g}")
    if c is not ANY and i is not ANY and c // g != i:
        raise RelationError(f"input channels {c} do not match the weight's {i} per group "
                            f"(groups={g}; weight {weight} in {attrs.kernel_layout})")
    if o is not ANY and o % g != 0:
        raise RelationError(f"output channels {o} of the weight {weight} are not divisible "
                            f"by groups={g}")
    if attrs.channels is not None and not compatible(o, attrs.channels):
        raise RelationError(f"channels={attrs.channels} does not match the weight's "
                            f"{o} output channels ({weight} in {attrs.kernel_layout})")
    if attrs.kernel_size is not None and not (compatible(kh, attrs.kernel_size[0])
                                              and compatible(kw, attrs.kernel_size[1])):
        raise RelationError(f"kernel_size={list(attrs.kernel_size)} does not match the "
                            f"weight {weight} in {attrs.kernel_layout}")
    if o is ANY and attrs.channels is not None:
        o = attrs.channels
    top, left, bottom, right = attrs.pads
    oh = _conv_out_dim(h, top + bottom, kh, attrs.dilation[0], attrs.strides[0], "height")
    ow = _conv_out_dim(w, left + right, kw, attrs.dilation[1], attrs.strides[1], "width")
    params = kernel_params(args, o)
    if params is None:
        return None
    dims = {"N": n, "C": o, "H": oh, "W": ow}
    shape = tuple(dims[a] for a in attrs.result_layout)
    return with_params(TensorType(shape, attrs.result_dtype), params)


def conv2d_accumulate(x: np.ndarray, w: np.ndarray, strides: tuple[int, ...],
                      pads: tuple[int, int, int, int], dilation: tuple[int, ...],
                      groups: int) -> np.ndarray:
    """Exact int64 grouped convolution of zero-point-shifted NCHW data with
    an OIHW kernel; padding contributes zero.  The grouped convolution of
    :func:`~aot.ir.ops.nn_conv.conv2d_nchw` accumulated in int64 (which
    wraps exactly as any order of int64 sums does)."""
    top, left, bottom, right = pads
    return conv2d_nchw(x, w, pair(strides), ((top, bottom), (left, right)), pair(dilation),
                       groups, np.int64)


def _conv2d(args: Sequence[np.ndarray], attrs: QnnConv2DAttrs, out: Type) -> np.ndarray:
    data, weight, in_zp, k_zp, in_scale, k_scale = args
    scales(in_scale, "input_scale")
    scales(k_scale, "kernel_scale")
    x = np.asarray(data).astype(np.int64)
    if attrs.data_layout == "NHWC":
        x = x.transpose(0, 3, 1, 2)
    x = x - zero_points(in_zp).reshape(())
    perm = [attrs.kernel_layout.index(a) for a in "OIHW"]
    w = np.asarray(weight).astype(np.int64).transpose(perm)
    w = w - _per_channel(zero_points(k_zp), w.shape[0]).reshape(-1, 1, 1, 1)
    acc = conv2d_accumulate(x, w, attrs.strides, attrs.pads, attrs.dilation, attrs.groups)
    if attrs.result_layout == "NHWC":
        acc = acc.transpose(0, 2, 3, 1)
    return as_array(acc, out_tensor_type(out).dtype)


OUT_FUSABLE = PatternKind.OUT_ELEMWISE_FUSABLE

defop("qnn.dense", arity=6, rel=_dense_rel, pattern=OUT_FUSABLE, compute=_dense,
      doc="quantized dense: int32 sum of (data - zp) * (weight - kernel zp)", attrs=QnnDenseAttrs,
      family=FAMILY, contraction=True, api_defaults=QnnDenseAttrs(out_dtype=DType.INT32))
defop("qnn.conv2d", arity=6, rel=_conv2d_rel, pattern=OUT_FUSABLE, compute=_conv2d,
      doc="quantized 2-D convolution: int32 accumulator with zero points subtracted",
      attrs=QnnConv2DAttrs, family=FAMILY, contraction=True,
      api_defaults=QnnConv2DAttrs(out_dtype=DType.INT32))   # relay.qnn.op.conv2d's out_dtype

__all__ = ["QnnDenseAttrs", "QnnConv2DAttrs", "conv2d_accumulate"]
