"""QuantizeCalibrate: choose each quantize point's scale from data.

Design note
-----------
Relay's ``calibrate`` (``python/tvm/relay/quantize/_calibrate.py``).  The
annotated program (:mod:`.annotate`) has a free scale parameter
``qscale_<kind>_<n>`` per quantize point; this pass binds each to
``threshold / 2**(nbit - 1)`` (Relay's ``dom_scale = scale / valid_range``,
symmetric, zero point 0), where the threshold is:

* for a weight, from the constant itself (``weight_scale``): ``max`` is
  ``max |w|`` (per output channel when ``per_channel``), ``power2`` that
  rounded up to a power of two (so the scale is one too);
* for an input or activation point, from the calibration data
  (``calibrate_mode``): ``global_scale`` is the configured constant for
  every point (no data needed); ``max`` is ``max |x|`` over every
  calibration run; ``percentile`` the ``percentile`` quantile of ``|x|``
  (Relay's ``np.partition`` at ``int(n * p)``); ``kl_divergence`` the
  threshold minimising the KL divergence (:mod:`.kl_divergence`).  Both
  of the last are at most ``max``.

A threshold of 0 (a tensor that is always zero) becomes 1.0, as Relay's
``power2`` does, so every scale is positive.

Statistics, as Relay's ``CreateStatsCollector``: a copy of ``@main`` in
which every quantize point is the identity (the float program) returns the
tuple of the values entering the input and activation points; the
reference interpreter runs it once per calibration sample.  ``max`` keeps
a running maximum; the other modes keep the values (float32).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from ...interpreter import Interpreter, check_arguments
from ...ir.expr import Call, Constant, Expr, Function, Op, Tuple, Var
from ...ir.module import IRModule
from ...ir.type_infer import infer_types
from ...ir.visitor import ExprMutator, Visit, post_order
from ..bind_params import bind_params
from ..manager import register_pass
from .annotate import WEIGHT, point_kind
from .config import QConfig
from .kl_divergence import kl_threshold

__all__ = ["quantize_calibrate", "CalibrateOptions", "Point", "find_points"]


@dataclass(frozen=True)
class CalibrateOptions:
    """The configuration and the calibration samples (each a tuple of
    arrays, one per original parameter of ``@main``)."""

    config: QConfig = field(default_factory=QConfig)
    dataset: tuple = ()


@dataclass(frozen=True)
class Point:
    """One quantize point: its scale parameter, kind, the value it
    quantizes and (weights) the quantization axis."""

    scale: Var
    kind: str
    data: Expr
    axis: int


def _is(e: Expr, name: str) -> bool:
    return isinstance(e, Call) and isinstance(e.op, Op) and e.op.name == name


def _point_of(e: Expr, scales: set[Var]) -> Point | None:
    """The point whose dequantize is ``e`` (None: ``e`` is none)."""
    if not (_is(e, "qnn.dequantize") and e.args[1] in scales):   # type: ignore[attr-defined]
        return None
    q = e.args[0]                                                 # type: ignore[attr-defined]
    if _is(q, "clip"):
        q = q.args[0]                                             # type: ignore[attr-defined]
    assert _is(q, "qnn.quantize"), q
    scale = e.args[1]                                             # type: ignore[attr-defined]
    kind = point_kind(scale)
    assert kind is not None
    return Point(scale, kind, q.args[0], q.attrs.axis)            # type: ignore[attr-defined]


def find_points(fn: Function) -> list[Point]:
    """The quantize points of an annotated ``@main``, in parameter order."""
    scales = {p for p in fn.params if point_kind(p) is not None}
    found = {}
    for node in post_order(fn.body):
        point = _point_of(node, scales)
        if point is not None:
            found[point.scale] = point
    return [found[p] for p in fn.params if p in found]


class _Identity(ExprMutator):
    """Every quantize point replaced by the value it quantizes."""

    def __init__(self, scales: set[Var]) -> None:
        super().__init__()
        self.scales = scales

    def visit_call(self, node: Call) -> Visit:
        point = _point_of(node, self.scales)
        if point is not None:
            return (yield point.data)
        return (yield from super().visit_call(node))


def _statistics(mod: IRModule, points: list[Point], dataset: Sequence[Sequence[Any]],
                mode: str) -> list[np.ndarray]:
    """Per activation/input point: the max |x| (mode ``max``) or every value."""
    fn = mod["main"]
    data_params = tuple(p for p in fn.params if point_kind(p) is None)
    identity = _Identity({p for p in fn.params if point_kind(p) is not None})
    outs = Tuple(tuple(identity.visit(p.data) for p in points))
    stats = mod.copy()
    stats.add(mod.global_var("main"), Function(data_params, outs, None, fn.type_params))
    stats = infer_types(stats)
    interp = Interpreter(stats)
    running: list[Any] = [0.0 if mode == "max" else [] for _ in points]
    for sample in dataset:
        values = interp.call("main", check_arguments(stats["main"], list(sample)))
        for i, v in enumerate(values):
            arr = np.asarray(v, np.float32)
            if mode == "max":
                running[i] = max(running[i], float(np.max(np.abs(arr))) if arr.size else 0.0)
            else:
                running[i].append(arr.ravel())
    if mode == "max":
        return [np.array(r) for r in running]
    return [np.concatenate(r) if r else np.zeros(0, np.float32) for r in running]


def percentile_threshold(values: np.ndarray, percentile: float) -> float:
    """Relay's ``_find_scale_by_percentile``."""
    x = np.abs(values)
    if x.size == 0:
        return 0.0
    k = min(int(x.size * percentile), x.size - 1)
    return float(np.partition(x, k)[k])


def _weight_threshold(w: np.ndarray, axis: int | None, cfg: QConfig) -> np.ndarray:
    mags = np.abs(w.astype(np.float64))
    if axis is None:
        thr = np.array(mags.max() if mags.size else 0.0)
    else:
        thr = np.moveaxis(mags, axis, 0).reshape(w.shape[axis], -1).max(axis=1)
    if cfg.weight_scale == "power2":
        thr = np.where(thr > 0, 2.0 ** np.ceil(np.log2(np.where(thr > 0, thr, 1.0))), 1.0)
    return thr


def _scale(threshold: np.ndarray | float, nbit: int) -> np.ndarray:
    thr = np.asarray(threshold, np.float64)
    thr = np.where(thr > 0, thr, 1.0)
    return (thr / 2.0 ** (nbit - 1)).astype(np.float32)


def activation_thresholds(mod: IRModule, points: list[Point], cfg: QConfig,
                          dataset: Sequence[Sequence[Any]]) -> list[float]:
    """The threshold of each (input or activation) point."""
    mode = cfg.calibrate_mode
    if mode == "global_scale":
        return [float(cfg.global_scale)] * len(points)
    stats = _statistics(mod, points, dataset, mode)
    if mode == "max":
        return [float(s) for s in stats]
    if mode == "percentile":
        return [percentile_threshold(s, cfg.percentile) for s in stats]
    return [kl_threshold(s) for s in stats]


def quantize_calibrate(mod: IRModule, opts: CalibrateOptions) -> IRModule:
    """Bind every ``qscale_*`` parameter of an annotated ``@main`` to the
    scale its kind's rule gives (weights from the constant, inputs and
    activations from running the calibration samples)."""
    cfg = opts.config
    points = find_points(mod["main"])
    values: dict[str, Any] = {}
    data_points = [p for p in points if p.kind != WEIGHT]
    for p in points:
        if p.kind == WEIGHT:
            assert isinstance(p.data, Constant)
            axis = p.axis % p.data.data.ndim if cfg.per_channel else None
            values[p.scale.name_hint] = _scale(_weight_threshold(p.data.data, axis, cfg),
                                               cfg.nbit_weight)
    for p, thr in zip(data_points, activation_thresholds(mod, data_points, cfg, opts.dataset)):
        values[p.scale.name_hint] = _scale(thr, cfg.nbit(p.kind))
    for param in mod["main"].params:    # a point no longer used: any scale
        if point_kind(param) is not None and param.name_hint not in values:
            shape = getattr(param.type_annotation, "shape", ())
            values[param.name_hint] = np.ones(shape, np.float32)
    return infer_types(bind_params(mod, values))


register_pass("QuantizeCalibrate", opt_level=0, options=CalibrateOptions)(quantize_calibrate)
