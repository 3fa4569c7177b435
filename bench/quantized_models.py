"""The MLPerf Tiny models in int8 against float32: flash, arena, Cortex-M4
instructions, and agreement with the reference runtime.

For each model of ``examples/mlperf_tiny/models.py`` this builds the float32
ONNX model and its int8 form (``models.quantize_int8``: onnxruntime's
``quantize_static``, QDQ, per-channel int8 weights -- the int8 model a user
brings from onnxruntime's tooling) and measures, in one run:

* **flash and RAM on a Cortex-M4F**: both compiled with default options and
  built by ``examples/embedded`` (``make size count``: arm-none-eabi-gcc
  -O2, the firmware owns the arena): the model's constants and code (its own
  symbols in the linked image), its arena, and instructions per inference
  counted by the project's QEMU plugin (exact; the difference between one
  and three inferences, halved).  Needs arm-none-eabi-gcc and
  qemu-system-arm (``make deps``); without them these columns are empty;
* **agreement with onnxruntime's integer kernels**: the int8 C (``aot.load``
  of the default compile) against onnxruntime's default session of the int8
  model (``ORT_ENABLE_ALL``: QLinearConv, QGemm, QLinearSoftmax, ...) on
  ``--inputs`` seeded standard-normal inputs (seeds from 1000; the
  quantizer calibrated on seeds 0-3): the fraction of output elements that
  are equal and the largest difference in output quantization steps (the
  scale of the model's last DequantizeLinear);
* **int8 against float32**: top-1 agreement of the int8 C with the float C
  (classifiers) and the cosine similarity of the two outputs (all models;
  for the autoencoder, whose output is a reconstruction, that is the
  figure), with onnxruntime's own int8-vs-float figures beside them for
  comparison: the quantizer's loss, not ours.

Usage::

    python3 bench/quantized_models.py [--models ds_cnn,resnet8] [--inputs 100]
                                      [--json bench/quantized_models.json]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

import aot

ROOT = Path(__file__).resolve().parents[1]
EMBEDDED = ROOT / "examples" / "embedded"
sys.path.insert(0, str(Path(__file__).resolve().parent))

from onnx_models import load_models_module, machine  # noqa: E402

INPUT_SEED = 1000


def ort_session(model: Any) -> Any:
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), options,
                                providers=["CPUExecutionProvider"])


def output_step(qmodel: Any) -> float:
    """The quantization step of the int8 model's output: the scale of its
    last DequantizeLinear."""
    from onnx import numpy_helper
    inits = {t.name: numpy_helper.to_array(t) for t in qmodel.graph.initializer}
    last = [n for n in qmodel.graph.node if n.op_type == "DequantizeLinear"][-1]
    return float(inits[last.input[1]])


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    den = np.linalg.norm(a) * np.linalg.norm(b)
    return float(a @ b / den) if den else float(np.array_equal(a, b))


def m4_figures(name: str, model_file: Path, build: Path, python: str) -> dict[str, Any]:
    """``make size count`` of examples/embedded for one model file."""
    if not (shutil.which("arm-none-eabi-gcc") and shutil.which("qemu-system-arm")):
        return {"error": "arm-none-eabi-gcc or qemu-system-arm not found (make deps)"}
    cmd = ["make", "--no-print-directory", "-C", str(EMBEDDED), f"MODEL={name}",
           f"MODEL_FILE={model_file}", f"BUILD={build}", f"PYTHON={python}",
           "REFERENCE=compiled", "size", "count"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        return {"error": (done.stdout + done.stderr).strip().splitlines()[-1]}
    arm = build / name / "arm-O2"
    size = json.loads((arm / "size.json").read_text())
    count = json.loads((arm / "count.json").read_text())
    return {"constant_bytes": size["model_symbols"]["const"],
            "code_bytes": size["model_symbols"]["code"],
            "arena_bytes": size["arena_bytes"], "stack_bytes": count["stack_bytes"],
            "insns_per_inference": count["insns_per_inference"],
            "insns_per_mac": count["insns_per_mac"]}


def measure(name: str, models: Any, work: Path, args: argparse.Namespace) -> dict[str, Any]:
    import onnx
    fmodel = models.build(name)
    qmodel = models.quantize_int8(fmodel)
    shape = models.input_shape(fmodel)
    # top-1 means something for the classifiers (their graph ends in a softmax)
    classifier = fmodel.graph.node[-1].op_type == "Softmax"
    row: dict[str, Any] = {"model": name, "macs": models.macs(fmodel), "classifier": classifier}
    libs, sessions = {}, {}
    for kind, model in (("float32", fmodel), ("int8", qmodel)):
        path = work / f"{name}_{kind}.onnx"
        onnx.save(model, path)
        # the firmware's loop nests (what --no-build writes): the constants and
        # arena in the table are the microcontroller's, and the agreement is
        # that of the C the Cortex-M4F runs
        art = aot.compile(aot.from_onnx(str(path)), work / f"{name}_{kind}", name=f"{name}_{kind}",
                          tuning="scalar")
        meta = art.metadata
        row[kind] = {"constant_bytes": meta["constant_bytes"], "arena_bytes": meta["arena_bytes"],
                     "kernels": len(meta["kernels"])}
        if not args.no_m4:
            row[kind]["m4"] = m4_figures(f"{name}_{kind}", path, work / "embedded", sys.executable)
        libs[kind], sessions[kind] = aot.load(art), ort_session(model)

    step = output_step(qmodel)
    feed = fmodel.graph.input[0].name
    exact = total = 0
    max_steps = 0.0
    top1 = top1_ort = 0
    cos, cos_ort = [], []
    for k in range(args.inputs):
        x = np.random.default_rng(INPUT_SEED + k).standard_normal(shape).astype(np.float32)
        ours_q, ours_f = libs["int8"](x), libs["float32"](x)
        ort_q = sessions["int8"].run(None, {feed: x})[0]
        ort_f = sessions["float32"].run(None, {feed: x})[0]
        steps = np.abs(ours_q.astype(np.float64) - ort_q) / step
        exact += int((steps < 1e-3).sum())
        total += steps.size
        max_steps = max(max_steps, float(steps.max()))
        top1 += int(np.argmax(ours_q) == np.argmax(ours_f))
        top1_ort += int(np.argmax(ort_q) == np.argmax(ort_f))
        cos.append(cosine(ours_q, ours_f))
        cos_ort.append(cosine(ort_q, ort_f))
    row["inputs"] = args.inputs
    row["vs_onnxruntime_int8"] = {"exact_fraction": exact / total,
                                  "max_steps": round(max_steps, 3)}
    row["int8_vs_float32"] = {"cosine_mean": float(np.mean(cos)),
                              "cosine_min": float(np.min(cos)),
                              "ort_cosine_mean": float(np.mean(cos_ort))}
    if classifier:
        row["int8_vs_float32"].update(top1_agreement=top1 / args.inputs,
                                      ort_top1_agreement=top1_ort / args.inputs)
    return row


def fmt_m4(m4: dict[str, Any], key: str, scale: float = 1.0, digits: int = 0) -> str:
    if "error" in m4 or key not in m4 or m4[key] is None:
        return "-"
    value = m4[key] / scale
    return f"{value:,.{digits}f}"


def print_table(rows: list[dict[str, Any]]) -> None:
    print("| model | dtype | constants B | arena B | M4 code B | M4 instructions | per MAC "
          "| vs ORT int8: exact, max steps | int8 vs float32: top-1, cosine (ORT's) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        for kind in ("float32", "int8"):
            v = r[kind]
            m4 = v.get("m4", {})
            agree = cmp = ""
            if kind == "int8":
                a, c = r["vs_onnxruntime_int8"], r["int8_vs_float32"]
                agree = f"{a['exact_fraction']:.2%}, {a['max_steps']:g}"
                top1 = (f"{c['top1_agreement']:.0%}", f"{c['ort_top1_agreement']:.0%}, ") \
                    if r["classifier"] else ("-", "")
                cmp = f"{top1[0]}, {c['cosine_mean']:.4f} ({top1[1]}{c['ort_cosine_mean']:.4f})"
            print(f"| {r['model']} | {kind} | {v['constant_bytes']:,} | {v['arena_bytes']:,} | "
                  f"{fmt_m4(m4, 'code_bytes')} | {fmt_m4(m4, 'insns_per_inference')} | "
                  f"{fmt_m4(m4, 'insns_per_mac', digits=2)} | {agree} | {cmp} |")
    for r in rows:
        for kind in ("float32", "int8"):
            if "error" in r[kind].get("m4", {}):
                print(f"{r['model']} {kind}: M4: {r[kind]['m4']['error']}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    models = load_models_module()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default=",".join(models.MODELS),
                    help="comma-separated (default: all)")
    ap.add_argument("--inputs", type=int, default=100, help="inputs for the agreement figures")
    ap.add_argument("--no-m4", action="store_true", help="skip the Cortex-M4 build and count")
    ap.add_argument("--json", type=Path,
                    default=Path(__file__).resolve().parent / "quantized_models.json")
    ap.add_argument("--build-dir", type=Path, help="keep the build here (default: a temp dir)")
    args = ap.parse_args(argv)
    logging.getLogger().setLevel(logging.ERROR)     # the quantizer's per-weight chatter
    names = [n for n in args.models.split(",") if n]
    unknown = [n for n in names if n not in models.MODELS]
    if unknown:
        ap.error(f"unknown model(s) {', '.join(unknown)}; known: {', '.join(models.MODELS)}")
    if args.inputs < 1:
        ap.error("--inputs must be at least 1")
    report: dict[str, Any] = {"machine": machine(), "inputs": args.inputs,
                              "loadavg_before": list(os.getloadavg())}
    rows = []
    with tempfile.TemporaryDirectory(prefix="aot-bench-q-") as tmp:
        work = args.build_dir or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        for name in names:
            print(f"[{name}] ...", file=sys.stderr, flush=True)
            rows.append(measure(name, models, work, args))
    report["models"] = rows
    args.json.write_text(json.dumps(report, indent=2) + "\n")
    print_table(rows)
    print(f"\nwritten: {args.json}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
