"""How close aot.quantize's programs stay to the float models.

For each MLPerf Tiny model of ``examples/mlperf_tiny/models.py`` (float,
seeded random weights): ``aot.from_onnx``, then ``aot.quantize`` with
``--calibration`` seeded standard-normal inputs (seeds 10000 on) and the
qconfig of each ``--modes`` entry (``calibrate_mode``; the other knobs at
their defaults: int8 everywhere, per-channel ``max`` weight scales), then
over ``--eval`` other inputs (seeds 0 on, distinct from the calibration):

* the float program's output (the reference interpreter);
* the quantized program run by the interpreter (its QDQ form) and, unless
  ``--no-c``, compiled by ``aot.compile`` to integer C (FakeQuantizationToInteger:
  int8 tables, int32 accumulators) and run through cffi;
* for the three classifiers, **top-1 agreement** (the quantized argmax
  equals the float one) and the cosine similarity of the probability
  vectors; for the autoencoder the cosine and the relative error
  ``||q - f|| / ||f||`` of the 640 reconstructions;
* the top-1 margin of the float program (median gap between its two
  largest probabilities): with random weights the classifiers' outputs are
  nearly flat, so agreement is a strict test;
* unless ``--no-ort``, the same figures for onnxruntime's own static
  quantizer (``quantize_static``, QDQ, int8, per-channel weights, the same
  calibration inputs) run by onnxruntime, as a yardstick.

Writes JSON (``--json``, default bench/quantize_agreement.json) and prints
a table.  Usage::

    python3 bench/quantize_agreement.py [--models ds_cnn,resnet8] [--eval 200]
        [--calibration 32] [--modes max,percentile,kl_divergence]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
MODELS_PY = ROOT / "examples" / "mlperf_tiny" / "models.py"

try:
    import aot
except ImportError:  # a clean checkout, not installed: use the tree this file is in
    sys.path.insert(0, str(ROOT))
    import aot

CLASSIFIERS = ("ds_cnn", "resnet8", "mobilenet_v1_025")


def machine() -> str:
    """The CPU's model name and core count (Linux), else the architecture."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return f"{line.split(':', 1)[1].strip()}, {os.cpu_count()} cores"
    except OSError:
        pass
    return platform.machine()


def load_models() -> Any:
    spec = importlib.util.spec_from_file_location("mlperf_tiny_models", MODELS_PY)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def normal_inputs(shape: tuple[int, ...], first_seed: int, count: int) -> list[np.ndarray]:
    return [np.random.default_rng(first_seed + i).standard_normal(shape).astype(np.float32)
            for i in range(count)]


def agreement(name: str, want: list[np.ndarray], got: list[np.ndarray]) -> dict[str, float]:
    """Top-1 agreement (classifiers), cosine and relative error of ``got``
    against ``want``."""
    w = np.stack([np.asarray(a, np.float64).ravel() for a in want])
    g = np.stack([np.asarray(a, np.float64).ravel() for a in got])
    cos = (w * g).sum(1) / np.linalg.norm(w, axis=1) / np.linalg.norm(g, axis=1)
    rel = np.linalg.norm(g - w, axis=1) / np.linalg.norm(w, axis=1)
    out = {"cosine_mean": float(cos.mean()), "cosine_min": float(cos.min()),
           "rel_error_mean": float(rel.mean()), "rel_error_max": float(rel.max())}
    if name in CLASSIFIERS:
        out["top1_agreement"] = float((w.argmax(1) == g.argmax(1)).mean())
    return out


def margin(outputs: list[np.ndarray]) -> float:
    top2 = [np.sort(np.asarray(o).ravel())[-2:] for o in outputs]
    return float(np.median([t[1] - t[0] for t in top2]))


def ort_figures(models: Any, name: str, model: Any, calibration: list[np.ndarray],
                evaluation: list[np.ndarray], floats: list[np.ndarray],
                tmp: Path) -> dict[str, float]:
    import onnx
    import onnxruntime as ort
    from onnxruntime import quantization
    from onnxruntime.quantization.shape_inference import quant_pre_process

    feed = model.graph.input[0].name

    class Reader(quantization.CalibrationDataReader):
        def __init__(self) -> None:
            self.batches = iter([{feed: x} for x in calibration])

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self.batches, None)

    f, p, q = (str(tmp / f"{name}_{s}.onnx") for s in ("f", "p", "q"))
    onnx.save(model, f)
    quant_pre_process(f, p, skip_symbolic_shape=True)
    quantization.quantize_static(p, q, Reader(), quant_format=quantization.QuantFormat.QDQ,
                                 per_channel=True,
                                 activation_type=quantization.QuantType.QInt8,
                                 weight_type=quantization.QuantType.QInt8)
    session = ort.InferenceSession(q, providers=["CPUExecutionProvider"])
    got = [session.run(None, {feed: x})[0] for x in evaluation]
    return agreement(name, floats, got)


def measure(models: Any, name: str, modes: list[str], args: argparse.Namespace,
            tmp: Path) -> dict[str, Any]:
    model = models.build(name)
    shape = tuple(models.input_shape(model))
    mod = aot.from_onnx(model)
    calibration = normal_inputs(shape, 10_000, args.calibration)
    evaluation = normal_inputs(shape, 0, args.eval)
    floats = [np.asarray(aot.interpret(mod, x)) for x in evaluation]
    row: dict[str, Any] = {"model": name, "float_top1_margin_median": margin(floats),
                           "modes": {}}
    for mode in modes:
        start = time.perf_counter()
        qmod = aot.quantize(mod, [[x] for x in calibration], {"calibrate_mode": mode})
        seconds = time.perf_counter() - start
        entry: dict[str, Any] = {"quantize_s": round(seconds, 2)}
        entry["interpreter"] = agreement(
            name, floats, [np.asarray(aot.interpret(qmod, x)) for x in evaluation])
        if not args.no_c:
            art = aot.compile(qmod, tmp / f"{name}_{mode}", name=f"q_{name}")
            anchors = [k["anchor"] for k in art.metadata["kernels"]]
            entry["c_kernels"] = anchors
            entry["c_constant_dtypes"] = sorted({c["dtype"] for c in art.metadata["constants"]})
            run = aot.load(art)
            entry["c"] = agreement(name, floats, [run(x) for x in evaluation])
        row["modes"][mode] = entry
        shown = {k: v for k, v in entry.items() if k != "c_kernels"}
        print(f"  {name} {mode}: {json.dumps(shown)}", flush=True)
    if not args.no_ort:
        row["onnxruntime_quantize_static"] = ort_figures(models, name, model, calibration,
                                                         evaluation, floats, tmp)
    return row


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| model | mode | runs on | top-1 agreement | cosine mean / min | "
             "rel. error mean / max |", "|---|---|---|---|---|---|"]

    def line(model: str, mode: str, where: str, fig: dict[str, float]) -> str:
        top1 = f"{100 * fig['top1_agreement']:.1f}%" if "top1_agreement" in fig else "-"
        return (f"| {model} | {mode} | {where} | {top1} | {fig['cosine_mean']:.5f} / "
                f"{fig['cosine_min']:.5f} | {fig['rel_error_mean']:.4f} / "
                f"{fig['rel_error_max']:.4f} |")
    for row in rows:
        for mode, entry in row["modes"].items():
            lines.append(line(row["model"], mode, "interpreter", entry["interpreter"]))
            if "c" in entry:
                lines.append(line(row["model"], mode, "integer C", entry["c"]))
        if "onnxruntime_quantize_static" in row:
            lines.append(line(row["model"], "ORT quantize_static", "onnxruntime",
                              row["onnxruntime_quantize_static"]))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    models = load_models()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default=",".join(models.MODELS))
    ap.add_argument("--modes", default="max", help="calibrate modes, comma-separated")
    ap.add_argument("--calibration", type=int, default=32, help="calibration inputs")
    ap.add_argument("--eval", type=int, default=200, help="evaluation inputs")
    ap.add_argument("--no-c", action="store_true", help="the interpreter only")
    ap.add_argument("--no-ort", action="store_true", help="no onnxruntime yardstick")
    ap.add_argument("--json", default=str(Path(__file__).resolve().parent /
                                          "quantize_agreement.json"))
    args = ap.parse_args(argv)
    modes = [m for m in args.modes.split(",") if m]
    rows = []
    with tempfile.TemporaryDirectory(prefix="aot-quantize-") as tmp:
        for name in [m for m in args.models.split(",") if m]:
            rows.append(measure(models, name, modes, args, Path(tmp)))
    result = {"machine": machine(), "load_average": os.getloadavg(),
              "platform": platform.platform(), "calibration_inputs": args.calibration,
              "evaluation_inputs": args.eval, "rows": rows}
    Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
