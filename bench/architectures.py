"""Real architectures through aot: compiled to C and compared with onnxruntime.

For each model of ``examples/architectures/models.py`` (torchvision and
torch.nn architectures as PyTorch's exporters write them, seeded random
weights): ``aot.from_onnx``, ``aot.compile`` (C for the host, built with
the host compiler), load, run on three seeded standard-normal inputs and
compare with onnxruntime.  Prints one row per model: the ONNX operators,
parameters, MACs, constants and arena bytes from ``metadata.json`` (for a
model the whole-language backend compiles, the object pool's bytes, marked
``pool``), the largest absolute error against onnxruntime relative to the
output's magnitude, and the compile time (import + compile + cc, wall
seconds, with an empty build cache).  A model whose pool the compiler
cannot size gets a 1 MB pool and its RAM is the pool's high water over
the runs, marked.  A model that does not compile gets
its diagnostic instead.  Usage::

    python bench/architectures.py [--models mobilenet_v2,kws_gru] [--json out.json]
                                  [--markdown]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
MODELS_PY = ROOT / "examples" / "architectures" / "models.py"
try:
    import aot
except ImportError:
    sys.path.insert(0, str(ROOT))
    import aot


#: the pool given to a program whose pool the compiler cannot size
UNSIZED_POOL_BYTES = 1024 * 1024


def compile_sized(mod, out: Path, name: str, row: dict):
    """``aot.compile``; a program whose pool use the compiler's simulation
    cannot bound gets :data:`UNSIZED_POOL_BYTES`, as the diagnostic says,
    and ``row["pool_given"]`` reports that it was given."""
    try:
        return aot.compile(mod, out, name=name)
    except aot.DiagnosticError as e:
        if "cannot size the object pool" not in str(e):
            raise
        row["pool_given"] = UNSIZED_POOL_BYTES
        return aot.compile(mod, out, name=name, pool_bytes=UNSIZED_POOL_BYTES)


def architectures():
    spec = importlib.util.spec_from_file_location("architectures_models", MODELS_PY)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def ops_of(model) -> str:
    ops: dict[str, None] = {}
    for node in model.graph.node:
        ops.setdefault(node.op_type)
    return ", ".join(sorted(ops))


def measure(models, name: str, work: Path, seeds=(0, 1, 2)) -> dict:
    import onnxruntime as ort
    model = models.MODELS[name]()
    row: dict = {"model": name, "opset": model.opset_import[0].version,
                 "ops": ops_of(model), "params": models.param_count(model),
                 "macs": models.macs(model)}
    start = time.perf_counter()
    try:
        art = compile_sized(aot.from_onnx(model), work / name, name, row)
        fn = aot.load(art)
    except aot.DiagnosticError as e:
        row["error"] = str(e).splitlines()[0]
        return row
    row["compile_s"] = time.perf_counter() - start
    meta = art.metadata
    row["constant_bytes"] = meta["constant_bytes"]
    row["backend"] = meta.get("backend", "dataflow")
    row["ram_bytes"] = meta["pool_bytes"] if row["backend"] == "program" else meta["arena_bytes"]
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    worst = 0.0
    for seed in seeds:
        x = np.random.default_rng(seed).standard_normal(models.input_shape(model))
        x = x.astype(np.float32)
        want = session.run(None, {session.get_inputs()[0].name: x})[0]
        got = np.asarray(fn(x))
        worst = max(worst, float(np.max(np.abs(got - want)) / max(1.0, np.max(np.abs(want)))))
    row["max_error"] = worst
    if "pool_given" in row:      # what the runs used of the pool given
        row["ram_bytes"] = fn.pool_high_water()
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    models = architectures()
    ap.add_argument("--models", default=",".join(models.MODELS))
    ap.add_argument("--json", type=Path)
    ap.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = ap.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(prefix="aot-architectures-") as tmp:
        os.environ.setdefault("AOT_CACHE_DIR", str(Path(tmp) / "cache"))
        for name in args.models.split(","):
            print(f"[{name}] ...", file=sys.stderr, flush=True)
            rows.append(measure(models, name, Path(tmp)))
    if args.markdown:
        print("| architecture | opset | parameters | MACs | constants B | RAM B | "
              "max error | compile s |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for r in rows:
            if "error" in r:
                print(f"| {r['model']} | {r['opset']} | {r['params']:,} | {r['macs']:,} | "
                      f"refused: {r['error']} ||||")
                continue
            ram = f"{r['ram_bytes']:,}" + (" (pool)" if r["backend"] == "program" else "")
            if "pool_given" in r:
                ram += " (high water; pool not sized)"
            print(f"| {r['model']} | {r['opset']} | {r['params']:,} | {r['macs']:,} | "
                  f"{r['constant_bytes']:,} | {ram} | {r['max_error']:.1e} | "
                  f"{r['compile_s']:.1f} |")
        print()
        for r in rows:
            print(f"* {r['model']}: {r['ops']}")
    else:
        head = (f"{'model':<27} {'opset':>5} {'params':>10} {'MACs':>12} {'const B':>10} "
                f"{'RAM B':>15} {'max err':>8} {'compile s':>9}")
        print(head)
        print("-" * len(head))
        for r in rows:
            if "error" in r:
                print(f"{r['model']:<27} {r['opset']:>5} {r['params']:>10,} {r['macs']:>12,} "
                      f"refused: {r['error']}")
                continue
            ram = f"{r['ram_bytes']:,}" + (" pool" if r["backend"] == "program" else "")
            ram += "*" if "pool_given" in r else ""
            print(f"{r['model']:<27} {r['opset']:>5} {r['params']:>10,} {r['macs']:>12,} "
                  f"{r['constant_bytes']:>10,} {ram:>15} {r['max_error']:>8.1e} "
                  f"{r['compile_s']:>9.1f}")
        for r in rows:
            print(f"{r['model']}: {r['ops']}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
