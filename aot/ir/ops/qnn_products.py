"""qnn.batch_matmul and qnn.conv2d_transpose: the integer accumulators of a
quantized batched matrix product and transposed convolution (part of the
qnn family, see :mod:`aot.ir.ops.qnn` and :mod:`aot.ir.ops.qnn_linear`,
whose qnn.dense and qnn.conv2d they follow).

Both return ``sum((a - a_zero_point) * (b - b_zero_point))`` exactly over
the products the float operator would form: the result has ``out_dtype``
(int32 when ``None``) and stands for reals with scale ``a_scale * b_scale``
and zero point 0; a following ``qnn.requantize`` brings it back to 8 (or
16) bits.  The scales are checked (positive, finite float32) but do not take
part in the computation.  Accumulation is exact (int64 here) and the result
wraps to ``out_dtype``, as int32 accumulation modulo 2**32 does.

``qnn.batch_matmul(x, y, x_zero_point, y_zero_point, x_scale, y_scale)``
    Relay's operator with its attributes (``BatchMatmulAttrs``):
    ``x`` is ``(B, M, K)`` (``(B, K, M)`` with ``transpose_a``), ``y`` is
    ``(B, K, N)`` (``(B, N, K)`` with ``transpose_b``, the Python builder's
    default as in Relay); a batch of 1 broadcasts.  Zero points and scales
    are scalars (per tensor), as in Relay.  Operands: ``x`` int8, uint8 or
    int16, ``y`` int8 or uint8 (Relay accepts only 8 bits and only
    ``transpose_b=True``; both are extensions).
``qnn.conv2d_transpose(data, weight, input_zero_point, kernel_zero_point,
input_scale, kernel_scale)``
    Relay's operator with ``Conv2DTransposeAttrs`` (kernel ``IOHW`` by
    default; any layout ``nn.conv2d_transpose`` accepts).  The kernel's zero
    point and scale are scalars or one value per *output* channel (TFLite's
    per-channel TRANSPOSE_CONV).  The reference is
    :func:`~aot.ir.ops.nn_conv.conv2d_transpose_nchw` of the zero-point
    shifted operands in int64: every input pixel scatters its products; the
    output cropped by the padding never sees a padding value, so there is no
    padding value to choose.  Operands: data int8, uint8 or int16; weight
    int8 or uint8.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from ..registry import Solved, lookup
from ..types import Type
from .common import (DType, PatternKind, RelationError, TensorType, as_array, defop, np,
                     out_tensor_type, tensor_arg)
from .nn import BatchMatmulAttrs
from .nn_conv import Conv2DTransposeAttrs, conv2d_transpose_nchw
from .nn_util import array_from_canonical, array_to_canonical, padding_2d, pair
from .qnn_common import (SCALE, ZERO_POINT, Params, kernel_params, scales, with_params,
                          zero_points)

FAMILY = "qnn"

_DATA = (DType.INT8, DType.UINT8, DType.INT16)
_WEIGHT = (DType.INT8, DType.UINT8)
_OUT = (DType.INT32, DType.INT64)


def _names(dtypes: Sequence[DType]) -> str:
    return ", ".join(str(d) for d in dtypes)


def _operand(args: Sequence[Type], i: int, what: str,
             allowed: Sequence[DType]) -> TensorType | None:
    t = tensor_arg(args, i, what)
    if t is not None and t.dtype not in allowed:
        raise RelationError(f"{what} must be {_names(allowed)}, got {t}")
    return t


def _out_dtype(out_dtype: DType | None) -> DType:
    dtype = out_dtype or DType.INT32
    if dtype not in _OUT:
        raise RelationError(f"out_dtype must be {_names(_OUT)}, got {dtype}")
    return dtype


def _float_shape(rel_name: str, args: Sequence[TensorType], attrs: object) -> TensorType:
    """The shape the float operator gives operands of these shapes (its
    relation checks the shapes and attributes and names what is wrong)."""
    op = lookup(rel_name)
    assert op is not None
    shadow = [TensorType(t.shape, DType.INT32) for t in args]
    result = op.rel(shadow, attrs)
    if isinstance(result, Solved):
        result = result.out
    assert isinstance(result, TensorType)
    return result


# ------------------------------------------------------------ batch_matmul

def _batch_matmul_rel(args: Sequence[Type], attrs: BatchMatmulAttrs) -> Type | Solved | None:
    x = _operand(args, 0, "x", _DATA)
    y = _operand(args, 1, "y", _WEIGHT)
    if x is None or y is None:
        return None
    dtype = _out_dtype(attrs.out_dtype)
    shape = _float_shape("nn.batch_matmul", [x, y], replace(attrs, out_dtype=None)).shape
    params = Params(args)
    params.scalar(2, "x_zero_point", ZERO_POINT)
    params.scalar(3, "y_zero_point", ZERO_POINT)
    params.scalar(4, "x_scale", SCALE)
    params.scalar(5, "y_scale", SCALE)
    return with_params(TensorType(shape, dtype), params)


def _batch_matmul(args: Sequence[np.ndarray], attrs: BatchMatmulAttrs, out: Type) -> np.ndarray:
    x, y, x_zp, y_zp, x_scale, y_scale = args
    scales(x_scale, "x_scale")
    scales(y_scale, "y_scale")
    a = np.asarray(x).astype(np.int64) - zero_points(x_zp).reshape(())
    b = np.asarray(y).astype(np.int64) - zero_points(y_zp).reshape(())
    if attrs.transpose_a:
        a = np.swapaxes(a, 1, 2)
    if attrs.transpose_b:
        b = np.swapaxes(b, 1, 2)
    return as_array(np.matmul(a, b), out_tensor_type(out).dtype)


# -------------------------------------------------------- conv2d_transpose

def _conv2d_transpose_rel(args: Sequence[Type],
                          attrs: Conv2DTransposeAttrs) -> Type | Solved | None:
    data = _operand(args, 0, "data", _DATA)
    weight = _operand(args, 1, "weight", _WEIGHT)
    if data is None or weight is None:
        return None
    dtype = _out_dtype(attrs.out_dtype)
    out = _float_shape("nn.conv2d_transpose", [data, weight], replace(attrs, out_dtype=None))
    layout = attrs.out_layout or attrs.data_layout
    channels = out.shape[layout.index("C")]
    params = kernel_params(args, channels)
    if params is None:
        return None
    return with_params(TensorType(out.shape, dtype), params)


def _per_output_channel(value: np.ndarray, n: int) -> np.ndarray:
    v = zero_points(value)
    return np.broadcast_to(v.reshape(()), (n,)) if v.size == 1 else v.reshape(n)


def _conv2d_transpose(args: Sequence[np.ndarray], attrs: Conv2DTransposeAttrs,
                      out: Type) -> np.ndarray:
    data, weight, in_zp, k_zp, in_scale, k_scale = args
    scales(in_scale, "input_scale")
    scales(k_scale, "kernel_scale")
    x = array_to_canonical(np.asarray(data).astype(np.int64), attrs.data_layout, "NCHW")
    x = x - zero_points(in_zp).reshape(())
    w = array_to_canonical(np.asarray(weight).astype(np.int64), attrs.kernel_layout, "IOHW")
    g = attrs.groups
    i, og = w.shape[0], w.shape[1]
    # output channel of w[i, o] is (i // (I / g)) * og + o
    zp = _per_output_channel(k_zp, og * g).reshape(g, 1, og, 1, 1)
    w = (w.reshape(g, i // g, og, *w.shape[2:]) - zp).reshape(w.shape)
    top, left, bottom, right = padding_2d(attrs.padding)
    acc = conv2d_transpose_nchw(x, w, pair(attrs.strides), ((top, bottom), (left, right)),
                                pair(attrs.output_padding), pair(attrs.dilation), g, np.int64)
    acc = array_from_canonical(acc, attrs.out_layout or attrs.data_layout, "NCHW")
    return as_array(acc, out_tensor_type(out).dtype)


OUT_FUSABLE = PatternKind.OUT_ELEMWISE_FUSABLE

defop("qnn.batch_matmul", arity=6, rel=_batch_matmul_rel, pattern=OUT_FUSABLE,
      compute=_batch_matmul,
      doc="quantized batched matrix product: int32 sum of (x - x_zp) * (y - y_zp)",
      attrs=BatchMatmulAttrs, family=FAMILY, contraction=True,
      api_defaults=BatchMatmulAttrs(transpose_b=True, out_dtype=DType.INT32))
defop("qnn.conv2d_transpose", arity=6, rel=_conv2d_transpose_rel, pattern=OUT_FUSABLE,
      compute=_conv2d_transpose,
      doc="quantized 2-D transposed convolution: int32 accumulator with zero points subtracted",
      attrs=Conv2DTransposeAttrs, family=FAMILY, contraction=True,
      api_defaults=Conv2DTransposeAttrs(out_dtype=DType.INT32))

__all__: list[str] = []
