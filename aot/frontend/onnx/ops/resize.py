"""Resize (versions 11, 13, 18, 19).

(Upsample is deprecated from opset 10 on and refused by onnxruntime at
opset 11+, the importer's range; ``onnx.version_converter`` turns an older
model's Upsample into Resize.)

Resize maps onto ``image.resize2d`` on NCHW tensors whose N and C are not
resized; a 3-D NCW tensor (``nn.Upsample`` / ``F.interpolate`` on 1-D
signals, which both torch exporters write as a Resize of rank 3) is resized
as NC1W, its unit H axis kept: every mode and coordinate transformation
maps an axis of length 1 kept at 1 onto itself (source coordinate 0), so
the result is the 1-D resize.  The IR's resize derives source coordinates from the ratio of the
integer sizes (exactly, as fractions), whereas ONNX uses the ``scales``
value when scales are given; the two agree when ``in * scale`` is the
output size exactly, and other scales are refused.  ``sizes`` always agree.

Attribute mapping: ``mode`` nearest/linear/cubic -> nearest_neighbor/
linear/cubic; ``coordinate_transformation_mode`` half_pixel,
pytorch_half_pixel, align_corners, asymmetric, tf_half_pixel_for_nn and
tf_crop_and_resize (with ``roi`` and ``extrapolation_value``) map to the
modes of the same names (half_pixel_symmetric, added in 19, is refused);
``nearest_mode`` round_prefer_floor/round_prefer_ceil/floor/ceil to the
rounding methods of the same names; ``cubic_coeff_a`` and
``exclude_outside`` to ``cubic_alpha``/``cubic_exclude``.  Version 18's
``axes`` may name only H and W; linear and cubic resizing of integer
tensors are refused (ONNX leaves their rounding open and onnxruntime's is
not reproducible from the float result); ``keep_aspect_ratio_policy`` must be
``stretch`` when sizes are given; ``antialias`` is accepted where it has no
effect (no axis shrinks).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from ....ir.expr import Expr
from ..graph import Node
from ..registry import converter
from .util import normalize_axis

_COORD = {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
          "tf_half_pixel_for_nn", "tf_crop_and_resize"}
_NEAREST = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}
_METHOD = {"nearest": "nearest_neighbor", "linear": "linear", "cubic": "cubic"}


def _check_spatial(node: Node, shape: tuple[int, ...], out: list[int]) -> None:
    if len(shape) not in (3, 4):
        raise node.error(f"only 3-d (NCW) and 4-d (NCHW) inputs are supported, "
                         f"got {list(shape)}")
    if out[0] != shape[0] or out[1] != shape[1]:
        raise node.error(f"resizing the batch or channel axis is not supported "
                         f"({list(shape)} -> {out})")
    if any(o < 1 for o in out):
        raise node.error(f"the output size {out} is empty")


def _sizes_from_scales(node: Node, shape: tuple[int, ...], scales: list[float]) -> list[int]:
    out = []
    for d, s in zip(shape, scales):
        if s <= 0:
            raise node.error(f"scales={scales} must be positive")
        o = int(np.floor(np.float32(d) * np.float32(s)))
        if Fraction(o) != Fraction(d) * Fraction(float(np.float32(s))):
            raise node.error(f"scales={scales}: a scale whose output size is not input * scale "
                             f"exactly ({d} * {s}) is not supported; give sizes instead")
        out.append(o)
    return out


def _expand_axes(node: Node, rank: int, values: list, fill: object) -> list:
    """Values given for version 18's ``axes`` only, spread over all axes."""
    axes = node.attr("axes")
    if axes is None:
        if len(values) != rank:
            raise node.error(f"{values} needs one value per axis ({rank})")
        return values
    axes = [normalize_axis(node, int(a), rank, "axes") for a in axes]
    if len(axes) != len(values):
        raise node.error(f"{values} needs one value per listed axis {axes}")
    full = [fill] * rank
    for a, v in zip(axes, values):
        full[a] = v
    return full


def _resize(node: Node, x: Expr, out: list[int], method: str, coord: str, rounding: str,
            roi: tuple[float, ...] = ()) -> Expr:
    extra = {}
    if method == "cubic":
        extra = {"cubic_alpha": float(node.attr("cubic_coeff_a", -0.75)),
                 "cubic_exclude": int(node.attr("exclude_outside", 0))}
    elif node.attr("exclude_outside", 0):
        raise node.unsupported("exclude_outside", why="is only supported with mode=cubic")
    return node.call("image.resize2d", [x], size=(out[2], out[3]), roi=roi, method=method,
                     coordinate_transformation_mode=coord, rounding_method=rounding,
                     extrapolation_value=float(node.attr("extrapolation_value", 0.0)),
                     **extra)


@converter("Resize", (11, 13, 18, 19))
def convert_resize(node: Node) -> list[Expr]:
    x = node.input(0)
    shape = node.shape(x)
    rank = len(shape)
    mode = node.attr("mode", "nearest")
    if mode not in _METHOD:
        raise node.unsupported("mode")
    if mode != "nearest" and not node.dtype(x).is_float:
        raise node.unsupported("mode", why=f"on {node.dtype(x)} tensors is not supported (ONNX "
                               "does not say how interpolated integers round)")
    coord = node.attr("coordinate_transformation_mode", "half_pixel")
    if coord not in _COORD or (coord == "tf_half_pixel_for_nn" and node.version >= 13):
        raise node.unsupported("coordinate_transformation_mode")
    nearest = node.attr("nearest_mode", "round_prefer_floor")
    if nearest not in _NEAREST:
        raise node.unsupported("nearest_mode")
    scales = node.const(2, "scales").astype(np.float64).tolist() \
        if node.has(2) and node.shape(node.input(2)) != (0,) else None
    sizes = node.const_ints(3, "sizes") if node.has(3) else None
    if sizes is not None:
        if node.attr("keep_aspect_ratio_policy", "stretch") != "stretch":
            raise node.unsupported("keep_aspect_ratio_policy")
        given = _expand_axes(node, rank, sizes, None)
        out = [d if o is None else int(o) for d, o in zip(shape, given)]
    elif scales is not None:
        full = _expand_axes(node, rank, scales, 1.0)
        out = _sizes_from_scales(node, shape, full)
    else:
        raise node.error("one of scales and sizes is required")
    _check_spatial(node, shape, out)
    if rank == 3:       # NCW as NC1W (see the module's note)
        shape, out = (shape[0], shape[1], 1, shape[2]), [out[0], out[1], 1, out[2]]
    if node.attr("antialias", 0) and (out[2] < shape[2] or out[3] < shape[3]):
        raise node.unsupported("antialias", why="when downsampling is not supported")
    roi: tuple[float, ...] = ()
    if coord == "tf_crop_and_resize":
        if not node.has(1):
            raise node.error("tf_crop_and_resize needs the roi input")
        r = [float(v) for v in node.const(1, "roi").reshape(-1)]
        if node.attr("axes") is not None:
            half = len(r) // 2
            starts = _expand_axes(node, rank, r[:half], 0.0)
            ends = _expand_axes(node, rank, r[half:], 1.0)
        else:
            if len(r) != 2 * rank:
                raise node.error(f"roi={r} needs {2 * rank} values")
            starts, ends = r[:rank], r[rank:]
        if starts[:2] != [0.0, 0.0] or ends[:2] != [1.0, 1.0]:
            raise node.error(f"roi={r} crops the batch or channel axis")
        if rank == 3:
            starts, ends = starts[:2] + [0.0] + starts[2:], ends[:2] + [1.0] + ends[2:]
        roi = (starts[2], starts[3], ends[2], ends[3])
    if rank == 3:
        x4 = node.call("reshape", [x], newshape=shape)
        y = _resize(node, x4, out, _METHOD[mode], coord, nearest, roi)
        return [node.call("reshape", [y], newshape=(out[0], out[1], out[3]))]
    return [_resize(node, x, out, _METHOD[mode], coord, nearest, roi)]
