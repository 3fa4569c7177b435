"""Operator family: nn convolutions — ``nn.conv1d``, ``nn.conv2d``,
``nn.conv2d_transpose``.

Design note
-----------
Every convolution is handled in a canonical layout: data ``NCW``/``NCHW``,
kernel ``OIW``/``OIHW`` (``IOHW`` for the transposed convolution), output
like the data.  ``data_layout``, ``kernel_layout`` and ``out_layout`` may be
any permutation of those letters (``NHWC`` with ``HWIO``, ``HWOI`` or
``OHWI`` ...): the relation maps shapes to canonical order and back, the
reference transposes the arrays.  ``nn.conv1d`` is computed as a conv2d of
height 1.

Type relations follow Relay's Conv1DRel/Conv2DRel/Conv2DTransposeRel:

* when ``channels`` and ``kernel_size`` are both given they determine the
  weight — ``(channels, in_channels / groups, kh, kw)`` in OIHW,
  ``(in_channels, channels / groups, kh, kw)`` in IOHW — and a weight that
  is still a hole receives that type (``Solved``);
* otherwise the weight's type must be known and the output channels come
  from it;
* ``padding`` has 1, 2 or 4 values (``[top, left, bottom, right]``) for 2-d
  and 1 or 2 for 1-d, normalised as Relay does.  A tap that falls in the
  padding contributes nothing: it is skipped, not multiplied by a zero
  (which differs only for a NaN or infinite weight, where ``0 * inf`` would
  give NaN); compiled kernels never touch the padding at all;
* a spatial output dimension is ``?`` when its input dimension (or the
  kernel's) is ``?``.

Grouped convolution is the standard definition (PyTorch/ONNX): group ``g``
convolves input channels ``[g*C/G, (g+1)*C/G)`` with output channels
``[g*O/G, (g+1)*O/G)``; a depthwise convolution is ``groups = C`` (weight
``(C*m, 1, kh, kw)`` in OIHW, ``(kh, kw, C*m, 1)`` in HWOI).  Unlike Relay
we also infer the weight of a grouped convolution from the attributes.
Relay's alternative depthwise reading of an OIHW weight ``(C, m, kh, kw)``
with ``channels = C*m`` is not supported (its ``m = 1`` case is the same
as ours).  The transposed convolution supports ``groups`` and
``dilation`` with the same meaning as PyTorch's ``ConvTranspose2d``; its
output channels are ``weight.shape[1] * groups`` when ``channels`` is not
given.

Arithmetic: see :mod:`aot.ir.ops.nn` (integers exact in int64 and wrapped
to ``out_dtype``, floats in float64 rounded once).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..attrs import attrs_class
from typing import Any, ClassVar, Sequence

from ..registry import RelResult, Solved
from ..types import Dim, Type
from .common import (ANY, DType, PatternKind, RelationError, TensorType, defop, fmt_shape, np,
                     out_tensor_type, tensor_arg)
from .nn_util import (NNAttrs, accumulator, array_from_canonical, array_to_canonical, cast_result,
                      check_layout, check_out_dtype, check_padding, check_positive,
                      check_product_dtypes, check_rank, compatible, dilated_extent, div_dim,
                      expand, from_canonical, padding_1d, padding_2d, pair, strided_windows,
                      to_canonical, window_count)
from ..dtype import np_kind

FAMILY = "nn"
FUSABLE = PatternKind.OUT_ELEMWISE_FUSABLE


# ------------------------------------------------------------------ attrs

@attrs_class
class Conv2DAttrs(NNAttrs):
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
        check_conv_attrs(self, 2, "NCHW", "OIHW")


@attrs_class
class Conv1DAttrs(NNAttrs):
    type_key: ClassVar[str] = "Conv1DAttrs"
    strides: tuple[int, ...] = (1,)
    padding: tuple[int, ...] = (0, 0)
    dilation: tuple[int, ...] = (1,)
    groups: int = 1
    channels: int | None = None
    kernel_size: tuple[int, ...] | None = None
    data_layout: str = "NCW"
    kernel_layout: str = "OIW"
    out_layout: str = ""
    out_dtype: DType | None = None

    def __post_init__(self) -> None:
        check_conv_attrs(self, 1, "NCW", "OIW")


@attrs_class
class Conv2DTransposeAttrs(NNAttrs):
    type_key: ClassVar[str] = "Conv2DTransposeAttrs"
    channels: int | None = None
    kernel_size: tuple[int, ...] | None = None
    strides: tuple[int, ...] = (1, 1)
    padding: tuple[int, ...] = (0, 0)
    output_padding: tuple[int, ...] = (0, 0)
    dilation: tuple[int, ...] = (1, 1)
    groups: int = 1
    data_layout: str = "NCHW"
    kernel_layout: str = "IOHW"
    out_layout: str = ""
    out_dtype: DType | None = None

    def __post_init__(self) -> None:
        check_conv_attrs(self, 2, "NCHW", "IOHW")
        check_padding(self.output_padding, "output_padding", (1, 2))


def check_conv_attrs(a: Any, rank: int, data_canon: str, kernel_canon: str) -> None:
    """The attributes every convolution of ``rank`` spatial axes shares."""
    counts = (1,) if rank == 1 else (1, rank)
    check_positive(a.strides, "strides", counts)
    check_positive(a.dilation, "dilation", counts)
    check_padding(a.padding, "padding", tuple(sorted({1, rank, 2 * rank})))
    if a.kernel_size is not None:
        check_positive(a.kernel_size, "kernel_size", counts)
    if a.groups < 1:
        raise ValueError(f"groups must be >= 1, got {a.groups}")
    if a.channels is not None:
        if a.channels < 1:
            raise ValueError(f"channels must be >= 1, got {a.channels}")
        if a.channels % a.groups:
            raise ValueError(f"channels={a.channels} is not divisible by groups={a.groups}")
    check_layout(a.data_layout, data_canon, "data_layout")
    check_layout(a.kernel_layout, kernel_canon, "kernel_layout")
    check_layout(a.out_layout, data_canon, "out_layout", allow_empty=True)


@dataclass(frozen=True, slots=True)
class ConvSpec:
    """What distinguishes the three convolutions in the shared relation."""

    rank: int
    data_canon: str
    kernel_canon: str
    transpose: bool


_CONV1D = ConvSpec(1, "NCW", "OIW", False)
_CONV2D = ConvSpec(2, "NCHW", "OIHW", False)
_CONV2D_T = ConvSpec(2, "NCHW", "IOHW", True)


def conv_pads(attrs: Conv2DAttrs | Conv1DAttrs | Conv2DTransposeAttrs,
          rank: int) -> tuple[tuple[int, int], ...]:
    """(before, after) per spatial axis."""
    if rank == 1:
        return (padding_1d(attrs.padding),)
    if rank == 3:
        p = tuple(attrs.padding)
        p = p * 6 if len(p) == 1 else p * 2 if len(p) == 3 else p
        return ((p[0], p[3]), (p[1], p[4]), (p[2], p[5]))
    return _pads_2d(attrs)


def _pads_2d(attrs: Conv2DAttrs | Conv1DAttrs | Conv2DTransposeAttrs
             ) -> tuple[tuple[int, int], tuple[int, int]]:
    top, left, bottom, right = padding_2d(attrs.padding)
    return ((top, bottom), (left, right))


# --------------------------------------------------------------- relation

def _spatial_out(spec: ConvSpec, attrs: Conv2DAttrs | Conv1DAttrs | Conv2DTransposeAttrs,
                 in_dims: Sequence[Dim], k_dims: Sequence[Dim]) -> tuple[Dim, ...]:
    strides = expand(attrs.strides, spec.rank)
    dilation = expand(attrs.dilation, spec.rank)
    out_pad = expand(getattr(attrs, "output_padding", (0,)), spec.rank)
    out: list[Dim] = []
    for axis, (d, k, s, dl, (p0, p1), op) in enumerate(
            zip(in_dims, k_dims, strides, dilation, conv_pads(attrs, spec.rank), out_pad)):
        if d is ANY or k is ANY:
            out.append(ANY)
            continue
        dk = dilated_extent(k, dl)  # type: ignore[arg-type]
        if spec.transpose:
            o = (d - 1) * s + dk - p0 - p1 + op  # type: ignore[operator]
        else:
            o = window_count(d + p0 + p1, dk, s)  # type: ignore[operator]
        if o < 1:
            axis_name = spec.data_canon[2 + axis]
            raise RelationError(f"the output would be empty along {axis_name}: input size {d}, "
                                f"kernel {k} (dilated {dk}), padding {[p0, p1]}, stride {s}")
        out.append(o)
    return tuple(out)


def conv_rel(spec: ConvSpec, args: Sequence[Type],
              attrs: Conv2DAttrs | Conv1DAttrs | Conv2DTransposeAttrs) -> RelResult:
    data = tensor_arg(args, 0, "data")
    if data is None:
        return None
    check_rank(data, attrs.data_layout, "the data", "data_layout")
    n, c, *spatial = to_canonical(data.shape, attrs.data_layout, spec.data_canon)
    g = attrs.groups
    if c is not ANY and c % g:
        raise RelationError(f"the data's {c} input channels are not divisible by groups={g}")
    weight = tensor_arg(args, 1, "weight")
    refined: TensorType | None = None
    if attrs.channels is not None and attrs.kernel_size is not None:
        ks = expand(attrs.kernel_size, spec.rank)
        if spec.transpose:
            w_canon: tuple[Dim, ...] = (c, attrs.channels // g, *ks)
        else:
            w_canon = (attrs.channels, div_dim(c, g), *ks)
        w_shape = from_canonical(w_canon, attrs.kernel_layout, spec.kernel_canon)
        if weight is None:
            refined = TensorType(w_shape, data.dtype)
        elif weight.ndim != len(w_shape) or not all(
                compatible(a, b) for a, b in zip(weight.shape, w_shape)):
            raise RelationError(
                f"the weight must have shape {fmt_shape(w_shape)} ({attrs.kernel_layout}) for "
                f"channels={attrs.channels}, kernel_size={list(attrs.kernel_size)}, groups={g} "
                f"and data {fmt_shape(data.shape)} ({attrs.data_layout}), "
                f"got {fmt_shape(weight.shape)}")
        out_channels: Dim = attrs.channels
        k_dims: Sequence[Dim] = ks
    else:
        if weight is None:
            return None
        check_rank(weight, attrs.kernel_layout, "the weight", "kernel_layout")
        w0, w1, *k_dims = to_canonical(weight.shape, attrs.kernel_layout, spec.kernel_canon)
        if attrs.kernel_size is not None:
            ks = expand(attrs.kernel_size, spec.rank)
            if not all(compatible(a, b) for a, b in zip(k_dims, ks)):
                raise RelationError(f"kernel_size={list(attrs.kernel_size)} does not match the "
                                    f"weight {fmt_shape(weight.shape)} ({attrs.kernel_layout})")
        if spec.transpose:
            in_w, per_group = w0, w1
            if not compatible(c, in_w):
                raise RelationError(f"the data has {c} input channels but the weight "
                                    f"{fmt_shape(weight.shape)} ({attrs.kernel_layout}) has {in_w}")
            out_channels = ANY if per_group is ANY else per_group * g
        else:
            out_channels, per_group = w0, w1
            if not compatible(div_dim(c, g), per_group):
                raise RelationError(
                    f"the data's {c} input channels divided by groups={g} must match the "
                    f"weight's {per_group} input channels (weight {fmt_shape(weight.shape)}, "
                    f"{attrs.kernel_layout})")
            if out_channels is not ANY and out_channels % g:
                raise RelationError(f"the weight's {out_channels} output channels are not "
                                    f"divisible by groups={g}")
        if attrs.channels is not None and not compatible(attrs.channels, out_channels):
            raise RelationError(f"channels={attrs.channels} does not match the weight "
                                f"{fmt_shape(weight.shape)} ({attrs.kernel_layout}), which "
                                f"gives {out_channels} output channels")
    w_dtype = weight.dtype if weight is not None else data.dtype
    check_product_dtypes(data.dtype, w_dtype, "the data", "the weight")
    out_dtype = attrs.out_dtype or data.dtype
    check_out_dtype(out_dtype, data.dtype)
    o_canon = (n, out_channels, *_spatial_out(spec, attrs, spatial, k_dims))
    out_layout = attrs.out_layout or attrs.data_layout
    out = TensorType(from_canonical(o_canon, out_layout, spec.data_canon), out_dtype)
    return Solved(out, (None, refined)) if refined is not None else out


def _conv1d_rel(args: Sequence[Type], attrs: Conv1DAttrs) -> RelResult:
    return conv_rel(_CONV1D, args, attrs)


def _conv2d_rel(args: Sequence[Type], attrs: Conv2DAttrs) -> RelResult:
    return conv_rel(_CONV2D, args, attrs)


def _conv2d_transpose_rel(args: Sequence[Type], attrs: Conv2DTransposeAttrs) -> RelResult:
    return conv_rel(_CONV2D_T, args, attrs)


# ---------------------------------------------------------------- compute

def conv2d_nchw(x: np.ndarray, w: np.ndarray, strides: tuple[int, int],
                pads: tuple[tuple[int, int], tuple[int, int]], dilation: tuple[int, int],
                groups: int, acc: type) -> np.ndarray:
    """Grouped 2-d convolution of NCHW ``x`` with OIHW ``w`` in dtype
    ``acc``, by im2col: one matrix product per group."""
    n, c, _, _ = x.shape
    o, cg, kh, kw = w.shape
    g = groups
    og = o // g
    xp = np.pad(x.astype(acc), ((0, 0), (0, 0), pads[0], pads[1]))
    win = strided_windows(xp, (kh, kw), strides, dilation)  # (N, C, OH, OW, KH, KW)
    oh, ow = win.shape[2], win.shape[3]
    # columns per group: (G, N*OH*OW, Cg*KH*KW)
    cols = win.reshape(n, g, cg, oh, ow, kh, kw).transpose(1, 0, 3, 4, 2, 5, 6)
    cols = cols.reshape(g, n * oh * ow, cg * kh * kw)
    wmat = w.astype(acc).reshape(g, og, cg * kh * kw).transpose(0, 2, 1)
    finite = np.isfinite(wmat) if np_kind(wmat.dtype) == "f" else None
    if finite is None or finite.all() or not any(p for pair_ in pads for p in pair_):
        res = np.matmul(cols, wmat)  # (G, N*OH*OW, Og)
    else:
        res = _skip_padding_taps(x, cols, wmat, finite, (kh, kw), strides, pads, dilation, g)
    return res.reshape(g, n, oh, ow, og).transpose(1, 0, 4, 2, 3).reshape(n, o, oh, ow)


def _skip_padding_taps(x: np.ndarray, cols: np.ndarray, wmat: np.ndarray, finite: np.ndarray,
                       kernel: tuple[int, int], strides: tuple[int, int],
                       pads: tuple[tuple[int, int], tuple[int, int]],
                       dilation: tuple[int, int], g: int) -> np.ndarray:
    """The convolution when some weights are NaN or infinite: a tap in the
    padding contributes nothing (it is skipped, not multiplied by zero:
    ``0 * inf`` would be NaN), which is what the C kernels do.  Finite
    weights go through the matrix product; each non-finite weight adds its
    products over the real (unpadded) taps only."""
    n, c = x.shape[0], x.shape[1]
    cg = c // g
    real = np.pad(np.ones((n, c) + x.shape[2:], dtype=bool), ((0, 0), (0, 0), pads[0], pads[1]))
    mwin = strided_windows(real, kernel, strides, dilation)
    oh, ow = mwin.shape[2], mwin.shape[3]
    mcols = mwin.reshape(n, g, cg, oh, ow, *kernel).transpose(1, 0, 3, 4, 2, 5, 6)
    mcols = mcols.reshape(cols.shape)
    res = np.matmul(cols, np.where(finite, wmat, 0))
    with np.errstate(invalid="ignore", over="ignore"):
        for gi, t, j in zip(*np.nonzero(~finite)):
            res[gi, :, j] += np.where(mcols[gi, :, t], cols[gi, :, t] * wmat[gi, t, j], 0)
    return res


def conv_transpose_nd(x: np.ndarray, w: np.ndarray, strides: Sequence[int],
                      pads: Sequence[tuple[int, int]], output_padding: Sequence[int],
                      dilation: Sequence[int], groups: int, acc: type) -> np.ndarray:
    """Grouped transposed convolution of ``N C *S`` ``x`` with ``I O *K``
    ``w``, any number of spatial axes: every input position scatters ``w``
    into the full output, one kernel tap at a time (a matrix product over
    the group's input channels per tap), which is then cropped by the
    padding (``output_padding`` extends each axis's end)."""
    n, c, *size = x.shape
    _, og, *kernel = w.shape
    g = groups
    cg = c // g
    rank = len(size)
    full = [(s - 1) * st + dilated_extent(k, d) + op
            for s, st, k, d, op in zip(size, strides, kernel, dilation, output_padding)]
    res = np.zeros((n, g, og, *full), dtype=acc)
    # rows: (G, N*prod(S), Cg)
    perm = (1, 0, *range(3, 3 + rank), 2)
    rows = x.astype(acc).reshape(n, g, cg, *size).transpose(perm).reshape(g, -1, cg)
    wg = w.astype(acc).reshape(g, cg, og, *kernel)
    back = (1, 0, 2 + rank, *range(2, 2 + rank))
    for tap in np.ndindex(*kernel):
        contrib = np.matmul(rows, wg[(slice(None),) * 3 + tap])  # (G, N*prod(S), Og)
        contrib = contrib.reshape(g, n, *size, og).transpose(back)
        at = tuple(slice(t * d, t * d + (s - 1) * st + 1, st)
                   for t, d, s, st in zip(tap, dilation, size, strides))
        res[(slice(None),) * 3 + at] += contrib
    crop = tuple(slice(b, f - e) for (b, e), f in zip(pads, full))
    out = res[(slice(None),) * 3 + crop]
    return out.reshape(n, g * og, *out.shape[3:])


def conv2d_transpose_nchw(x: np.ndarray, w: np.ndarray, strides: tuple[int, int],
                          pads: tuple[tuple[int, int], tuple[int, int]],
                          output_padding: tuple[int, int], dilation: tuple[int, int],
                          groups: int, acc: type) -> np.ndarray:
    """:func:`conv_transpose_nd` of NCHW ``x`` with IOHW ``w``."""
    return conv_transpose_nd(x, w, strides, pads, output_padding, dilation, groups, acc)


def _conv2d(args: Sequence[np.ndarray], attrs: Conv2DAttrs, out: Type) -> np.ndarray:
    x, w = args
    dtype = out_tensor_type(out).dtype
    xc = array_to_canonical(x, attrs.data_layout, "NCHW")
    wc = array_to_canonical(w, attrs.kernel_layout, "OIHW")
    res = conv2d_nchw(xc, wc, pair(attrs.strides), _pads_2d(attrs), pair(attrs.dilation),
                      attrs.groups, accumulator(dtype))
    res = array_from_canonical(res, attrs.out_layout or attrs.data_layout, "NCHW")
    return cast_result(res, dtype)


def _conv1d(args: Sequence[np.ndarray], attrs: Conv1DAttrs, out: Type) -> np.ndarray:
    x, w = args
    dtype = out_tensor_type(out).dtype
    xc = array_to_canonical(x, attrs.data_layout, "NCW")[:, :, None, :]
    wc = array_to_canonical(w, attrs.kernel_layout, "OIW")[:, :, None, :]
    res = conv2d_nchw(xc, wc, (1, attrs.strides[0]), ((0, 0), padding_1d(attrs.padding)),
                      (1, attrs.dilation[0]), attrs.groups, accumulator(dtype))[:, :, 0, :]
    res = array_from_canonical(res, attrs.out_layout or attrs.data_layout, "NCW")
    return cast_result(res, dtype)


def _conv2d_transpose(args: Sequence[np.ndarray], attrs: Conv2DTransposeAttrs,
                      out: Type) -> np.ndarray:
    x, w = args
    dtype = out_tensor_type(out).dtype
    xc = array_to_canonical(x, attrs.data_layout, "NCHW")
    wc = array_to_canonical(w, attrs.kernel_layout, "IOHW")
    res = conv2d_transpose_nchw(xc, wc, pair(attrs.strides), _pads_2d(attrs),
                                pair(attrs.output_padding), pair(attrs.dilation), attrs.groups,
                                accumulator(dtype))
    res = array_from_canonical(res, attrs.out_layout or attrs.data_layout, "NCHW")
    return cast_result(res, dtype)


defop("nn.conv1d", arity=2, rel=_conv1d_rel, pattern=FUSABLE, compute=_conv1d,
      doc="1-d convolution (strides, padding, dilation, groups, layouts)", attrs=Conv1DAttrs,
      family=FAMILY, contraction=True)
defop("nn.conv2d", arity=2, rel=_conv2d_rel, pattern=FUSABLE, compute=_conv2d,
      doc="2-d convolution (strides, padding, dilation, groups, layouts)", attrs=Conv2DAttrs,
      family=FAMILY, contraction=True)
defop("nn.conv2d_transpose", arity=2, rel=_conv2d_transpose_rel, pattern=FUSABLE,
      compute=_conv2d_transpose, doc="2-d transposed convolution (weight IOHW by default)",
      attrs=Conv2DTransposeAttrs, family=FAMILY, contraction=True)

__all__ = ["Conv1DAttrs", "Conv2DAttrs", "Conv2DTransposeAttrs", "conv2d_nchw",
           "conv2d_transpose_nchw", "conv_transpose_nd", "ConvSpec", "conv_rel", "conv_pads"]
