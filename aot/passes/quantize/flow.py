"""``aot.quantize``: Relay's quantization flow, end to end.

    prerequisites (InferType, ToGraphNormalForm, SimplifyInference,
                   FoldConstant, FoldScaleAxis, FoldConstant)
    -> QuantizeAnnotate -> QuantizeCalibrate -> QuantizeRealize

as Relay's ``relay.quantize.quantize`` (``prerequisite_optimize``, then
annotate, calibrate, realize): batch normalisations are folded into the
convolutions' weights before their weights are quantized.  The result is a
float-in, float-out QDQ program (README, "Quantizing a float model").

Calibration samples are checked before anything runs: each must be a list
of arrays, one per parameter of ``@main``, of the parameter's shape and
dtype; a sample that is not gets a diagnostic naming it.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from ...diagnostics import DiagnosticError
from ...interpreter import check_arguments
from ...ir.module import IRModule
from ...ir.types import TensorType
from ..manager import PassContext, current, run_pass
from .config import QConfig, make_config

__all__ = ["quantize", "check_samples", "load_calibration", "PREREQUISITES"]

PREREQUISITES = ("InferType", "ToGraphNormalForm", "SimplifyInference", "FoldConstant",
                 "FoldScaleAxis", "FoldConstant")


def _describe(x: Any) -> str:
    if isinstance(x, np.ndarray):
        return f"a {x.dtype} array of shape {x.shape}"
    return f"a {type(x).__name__}"


def check_samples(mod: IRModule, samples: Any) -> list[tuple[Any, ...]]:
    """The calibration samples as tuples of arguments of ``@main``;
    DiagnosticError on anything that is not."""
    if isinstance(samples, (np.ndarray, str, bytes)) or not isinstance(samples, Iterable):
        raise DiagnosticError("quantize: calibration_inputs must be an iterable of argument "
                              f"lists (one array per parameter of @main), not {_describe(samples)}")
    fn = mod["main"]
    names = ", ".join("%" + p.name_hint for p in fn.params)
    out = []
    for i, sample in enumerate(samples):
        if isinstance(sample, (np.ndarray, str, bytes)) or not isinstance(sample, Sequence):
            raise DiagnosticError(f"quantize: calibration sample {i} must be a list of arrays, "
                                  f"one per parameter of @main ({names}), not {_describe(sample)}")
        for param, arg in zip(fn.params, sample):
            t = param.checked_type or param.type_annotation
            if isinstance(t, TensorType) and isinstance(arg, np.ndarray) \
                    and arg.dtype != t.dtype.np:
                raise DiagnosticError(f"quantize: calibration sample {i}: %{param.name_hint} is "
                                      f"{t}, got {_describe(arg)}")
        try:
            check_arguments(fn, list(sample))
        except DiagnosticError as exc:
            raise DiagnosticError(f"quantize: calibration sample {i}: "
                                  f"{exc.diagnostics[0].message}") from None
        out.append(tuple(sample))
    return out


def load_calibration(path: str, mod: IRModule) -> list[tuple[np.ndarray, ...]]:
    """The samples of a calibration ``.npz``: one array per parameter of
    ``@main``, named as the parameter, whose first axis counts the samples
    (``arrays[name][k]`` is the ``k``-th sample's argument)."""
    try:
        with np.load(path, allow_pickle=False) as npz:
            arrays = {k: npz[k] for k in npz.files}
    except (OSError, ValueError, EOFError) as exc:
        raise DiagnosticError(f"{path}: not a readable .npz file ({exc})") from None
    params = [p.name_hint for p in mod["main"].params]
    missing = [n for n in params if n not in arrays]
    extra = sorted(set(arrays) - set(params))
    if missing or extra:
        what = []
        if missing:
            what.append("no array for parameter " + ", ".join(f"'{n}'" for n in missing))
        if extra:
            what.append("arrays that name no parameter: " + ", ".join(f"'{n}'" for n in extra))
        raise DiagnosticError(f"{path}: {'; '.join(what)} (the arrays must be named as @main's "
                              f"parameters: {', '.join(params)}; arrays found: "
                              f"{', '.join(sorted(arrays)) or 'none'})")
    counts = set()
    for p in mod["main"].params:
        arr = arrays[p.name_hint]
        t = p.checked_type or p.type_annotation
        if arr.ndim == 0 or (isinstance(t, TensorType) and arr.ndim != len(t.shape) + 1):
            raise DiagnosticError(f"{path}: array '{p.name_hint}' has shape {arr.shape}; "
                                  f"%{p.name_hint} is {t}, so the array must be (samples, "
                                  f"{', '.join(str(d) for d in getattr(t, 'shape', ()))})")
        counts.add(arr.shape[0])
    if len(counts) > 1:
        raise DiagnosticError(f"{path}: the arrays hold different numbers of samples "
                              f"({', '.join(str(c) for c in sorted(counts))})")
    n = counts.pop() if counts else 0
    return [tuple(arrays[name][k] for name in params) for k in range(n)]


def quantize(mod: IRModule, calibration_inputs: Iterable[Sequence[Any]],
             config: QConfig | Mapping[str, Any] | None = None) -> IRModule:
    """The QDQ program of ``mod``'s ``@main`` quantized with ``config``
    and scales calibrated on ``calibration_inputs``."""
    if not isinstance(mod, IRModule):
        raise DiagnosticError(f"quantize: expected an IRModule, not {type(mod).__name__}")
    cfg = make_config(config)
    if "main" not in mod:
        raise DiagnosticError("quantize: the module has no @main")
    ctx = current()
    with PassContext(opt_level=3, verify=ctx.verify, instruments=ctx.instruments) as inner:
        for name in PREREQUISITES:
            mod = run_pass(name, mod, inner)
        samples = check_samples(mod, calibration_inputs)
        if not samples and cfg.calibrate_mode != "global_scale":
            raise DiagnosticError(f"quantize: calibrate_mode {cfg.calibrate_mode!r} needs at "
                                  "least one calibration sample (none given)")
        mod = run_pass("QuantizeAnnotate", mod, inner.replace(options={
            "QuantizeAnnotate": {f: getattr(cfg, f) for f in cfg.__dataclass_fields__}}))
        mod = run_pass("QuantizeCalibrate", mod, inner.replace(options={
            "QuantizeCalibrate": {"config": cfg, "dataset": tuple(samples)}}))
        return run_pass("QuantizeRealize", mod, inner)
