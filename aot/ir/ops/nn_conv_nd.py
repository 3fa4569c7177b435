"""Operator family: nn convolutions beyond :mod:`aot.ir.ops.nn_conv` —
``nn.conv1d_transpose``, ``nn.conv3d`` and ``nn.conv3d_transpose``
(Relay's names and attributes).

``nn.conv1d_transpose`` is ``nn.conv2d_transpose`` of height 1: data
``NCW``, weight ``IOW`` (``(in_channels, channels / groups, k)``), output
width ``(in - 1) * stride + dilated_kernel - pad_left - pad_right +
output_padding``.  ``nn.conv3d`` is the forward convolution over ``D H
W``: data ``NCDHW``, weight ``OIDHW``, ``padding`` with 1, 3 or 6 values
(``[front, top, left, back, bottom, right]``).  ``nn.conv3d_transpose``
is its transpose: weight ``IODHW``, padding as ``nn.conv3d``'s,
``output_padding`` with 1 or 3 values (``D H W``).  Both transposed
convolutions compute with :func:`~aot.ir.ops.nn_conv.conv_transpose_nd`,
the one reference for every rank.  Layouts may be any
permutation of those letters; the relations, grouping, dtypes and
``out_dtype`` are those of the 2-d convolutions (see that module's design
note: integers exact in int64 and wrapped, floats in float64 rounded
once, a tap in the padding skipped rather than multiplied by zero).
"""

from __future__ import annotations

from typing import ClassVar, Sequence

from numpy.lib.stride_tricks import sliding_window_view

from ..attrs import attrs_class
from ..registry import RelResult
from ..types import Type
from .common import DType, PatternKind, defop, np, out_tensor_type
from .nn_conv import ConvSpec, check_conv_attrs, conv_pads, conv_rel, conv_transpose_nd
from .nn_util import (NNAttrs, accumulator, array_from_canonical, array_to_canonical,
                      cast_result, check_padding, dilated_extent,
                      expand)

FAMILY = "nn"
FUSABLE = PatternKind.OUT_ELEMWISE_FUSABLE


@attrs_class
class Conv1DTransposeAttrs(NNAttrs):
    type_key: ClassVar[str] = "Conv1DTransposeAttrs"
    channels: int | None = None
    kernel_size: tuple[int, ...] | None = None
    strides: tuple[int, ...] = (1,)
    padding: tuple[int, ...] = (0,)
    output_padding: tuple[int, ...] = (0,)
    dilation: tuple[int, ...] = (1,)
    groups: int = 1
    data_layout: str = "NCW"
    kernel_layout: str = "IOW"
    out_layout: str = ""
    out_dtype: DType | None = None

    def __post_init__(self) -> None:
        check_conv_attrs(self, 1, "NCW", "IOW")
        check_padding(self.output_padding, "output_padding", (1,))


@attrs_class
class Conv3DAttrs(NNAttrs):
    type_key: ClassVar[str] = "Conv3DAttrs"
    strides: tuple[int, ...] = (1, 1, 1)
    padding: tuple[int, ...] = (0, 0, 0)
    dilation: tuple[int, ...] = (1, 1, 1)
    groups: int = 1
    channels: int | None = None
    kernel_size: tuple[int, ...] | None = None
    data_layout: str = "NCDHW"
    kernel_layout: str = "OIDHW"
    out_layout: str = ""
    out_dtype: DType | None = None

    def __post_init__(self) -> None:
        check_conv_attrs(self, 3, "NCDHW", "OIDHW")


@attrs_class
class Conv3DTransposeAttrs(NNAttrs):
    type_key: ClassVar[str] = "Conv3DTransposeAttrs"
    channels: int | None = None
    kernel_size: tuple[int, ...] | None = None
    strides: tuple[int, ...] = (1, 1, 1)
    padding: tuple[int, ...] = (0, 0, 0)
    output_padding: tuple[int, ...] = (0, 0, 0)
    dilation: tuple[int, ...] = (1, 1, 1)
    groups: int = 1
    data_layout: str = "NCDHW"
    kernel_layout: str = "IODHW"
    out_layout: str = ""
    out_dtype: DType | None = None

    def __post_init__(self) -> None:
        check_conv_attrs(self, 3, "NCDHW", "IODHW")
        check_padding(self.output_padding, "output_padding", (1, 3))


_CONV1D_T = ConvSpec(1, "NCW", "IOW", True)
_CONV3D = ConvSpec(3, "NCDHW", "OIDHW", False)
_CONV3D_T = ConvSpec(3, "NCDHW", "IODHW", True)


def _conv1d_transpose_rel(args: Sequence[Type], attrs: Conv1DTransposeAttrs) -> RelResult:
    return conv_rel(_CONV1D_T, args, attrs)  # type: ignore[arg-type]


def _conv3d_rel(args: Sequence[Type], attrs: Conv3DAttrs) -> RelResult:
    return conv_rel(_CONV3D, args, attrs)  # type: ignore[arg-type]


def _conv3d_transpose_rel(args: Sequence[Type], attrs: Conv3DTransposeAttrs) -> RelResult:
    return conv_rel(_CONV3D_T, args, attrs)  # type: ignore[arg-type]


def _transpose(spec: ConvSpec, args: Sequence[np.ndarray],
               attrs: Conv1DTransposeAttrs | Conv3DTransposeAttrs, out: Type) -> np.ndarray:
    x, w = args
    dtype = out_tensor_type(out).dtype
    r = spec.rank
    xc = array_to_canonical(x, attrs.data_layout, spec.data_canon)
    wc = array_to_canonical(w, attrs.kernel_layout, spec.kernel_canon)
    res = conv_transpose_nd(xc, wc, expand(attrs.strides, r),
                            conv_pads(attrs, r),  # type: ignore[arg-type]
                            expand(attrs.output_padding, r), expand(attrs.dilation, r),
                            attrs.groups, accumulator(dtype))
    res = array_from_canonical(res, attrs.out_layout or attrs.data_layout, spec.data_canon)
    return cast_result(res, dtype)


def _conv1d_transpose(args: Sequence[np.ndarray], attrs: Conv1DTransposeAttrs,
                      out: Type) -> np.ndarray:
    return _transpose(_CONV1D_T, args, attrs, out)


def _conv3d_transpose(args: Sequence[np.ndarray], attrs: Conv3DTransposeAttrs,
                      out: Type) -> np.ndarray:
    return _transpose(_CONV3D_T, args, attrs, out)


def conv3d_ncdhw(x: np.ndarray, w: np.ndarray, strides: Sequence[int],
                 pads: Sequence[tuple[int, int]], dilation: Sequence[int], groups: int,
                 acc: type) -> np.ndarray:
    """Grouped 3-d convolution of NCDHW ``x`` with OIDHW ``w``, one kernel
    tap at a time: each tap's products are summed over the group's input
    channels and added where the tap lies inside the input (a tap in the
    padding is skipped, so a non-finite weight never meets a padded 0)."""
    n, c = x.shape[:2]
    o, cg = w.shape[:2]
    kernel = w.shape[2:]
    g = groups
    og = o // g
    xp: np.ndarray = np.pad(x.astype(acc), ((0, 0), (0, 0), *pads))
    real = np.pad(np.ones(x.shape[2:], dtype=bool), pads)
    ext = [dilated_extent(k, d) for k, d in zip(kernel, dilation)]
    win = sliding_window_view(xp, ext, axis=(2, 3, 4))
    mwin = sliding_window_view(real, ext)
    outs = [(xp.shape[2 + i] - ext[i]) // strides[i] + 1 for i in range(3)]
    sel = tuple(slice(0, (outs[i] - 1) * strides[i] + 1, strides[i]) for i in range(3))
    win, mwin = win[(slice(None), slice(None)) + sel], mwin[sel]
    wg: np.ndarray = w.astype(acc).reshape(g, og, cg, *kernel)
    res = np.zeros((n, g, og, *outs), dtype=acc)
    with np.errstate(invalid="ignore", over="ignore"):
        for t in np.ndindex(*kernel):
            tap = tuple(k * d for k, d in zip(t, dilation))
            xs = win[(Ellipsis,) + tap].reshape(n, g, cg, *outs)
            part = np.einsum("ngcdhw,goc->ngodhw", xs, wg[(Ellipsis,) + t])
            res += np.where(mwin[(Ellipsis,) + tap], part, 0)
    return res.reshape(n, o, *outs)


def _conv3d(args: Sequence[np.ndarray], attrs: Conv3DAttrs, out: Type) -> np.ndarray:
    x, w = args
    dtype = out_tensor_type(out).dtype
    xc = array_to_canonical(x, attrs.data_layout, "NCDHW")
    wc = array_to_canonical(w, attrs.kernel_layout, "OIDHW")
    res = conv3d_ncdhw(xc, wc, expand(attrs.strides, 3), conv_pads(attrs, 3),  # type: ignore
                       expand(attrs.dilation, 3), attrs.groups, accumulator(dtype))
    res = array_from_canonical(res, attrs.out_layout or attrs.data_layout, "NCDHW")
    return cast_result(res, dtype)


defop("nn.conv1d_transpose", arity=2, rel=_conv1d_transpose_rel, pattern=FUSABLE,
      compute=_conv1d_transpose, doc="1-d transposed convolution (weight IOW by default)",
      attrs=Conv1DTransposeAttrs, family=FAMILY, contraction=True)
defop("nn.conv3d", arity=2, rel=_conv3d_rel, pattern=FUSABLE, compute=_conv3d,
      doc="3-d convolution (strides, padding, dilation, groups, layouts)", attrs=Conv3DAttrs,
      family=FAMILY, contraction=True)
defop("nn.conv3d_transpose", arity=2, rel=_conv3d_transpose_rel, pattern=FUSABLE,
      compute=_conv3d_transpose, doc="3-d transposed convolution (weight IODHW by default)",
      attrs=Conv3DTransposeAttrs, family=FAMILY, contraction=True)

__all__ = ["Conv1DTransposeAttrs", "Conv3DAttrs", "Conv3DTransposeAttrs", "conv3d_ncdhw"]
