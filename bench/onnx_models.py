"""The MLPerf Tiny models: aot's generated C against onnxruntime.

For each model of ``examples/mlperf_tiny/models.py`` (built into a build
directory, never committed) this measures, in one run and on the same seeded
input:

* **latency of the generated C**: ``aot.from_onnx`` + ``aot.compile`` write
  the artifact (``tuning="simd"`` unless ``--tuning`` says otherwise: the
  loop nests shaped for a host with SIMD units); its sources (listed in
  ``metadata.json``) are compiled with
  ``gcc -O3 -march=native`` plus the flags the artifact requires
  (``-std=c99 -ffp-contract=off -fno-strict-aliasing``) and linked with
  ``bench/timing_driver.c``, which is generic over the model through a
  generated ``bench_model.h``.  The driver warms up, then times every call
  with ``clock_gettime(CLOCK_MONOTONIC)`` in C, one thread, and prints JSON
  (median, min, p90, mean);
* **latency of onnxruntime**: ``SessionOptions`` with one intra-op and one
  inter-op thread, sequential execution, ``ORT_ENABLE_ALL``; warm-up, then
  every ``session.run`` timed with ``time.perf_counter_ns``.  These times
  include the Python binding's per-call overhead, which is measured on a
  one-node Identity model and reported as ``ort_call_overhead_us``;
* the ratio ours / onnxruntime (medians), and the largest absolute
  difference between the two outputs for the benchmark input;
* memory: the arena against its liveness lower bound (outputs written over
  dying inputs where the kernels' loop nests allow it) and against the
  liveness bound of whole tensors (the bound before such overlaps),
  constant bytes (all from ``metadata.json``) and code bytes (the ``.text`` sections of the
  model's objects, from ``size -A``; constants live in ``.rodata``);
* compile time: ``from_onnx`` + ``compile`` (rendering the C, without
  building it) and the C build (compiles + link) separately;
* MACs (Conv/Gemm, from ONNX shape inference) and the achieved GMAC/s,
  against a rough single-thread peak from ``bench/peak.c``, with fused
  multiply-add and without (aot's C is compiled with ``-ffp-contract=off``;
  its convolution and dense MACs are explicit ``fmaf`` calls, fused).

``--config`` chooses what "our C" is (both by default, one table each):

* ``fastest``: the configuration above (``--tuning``, ``--opt``, the timing
  driver), the fastest one documented;
* ``default``: what a user gets from ``aot.compile(mod, dir)`` then
  ``aot.load(dir)`` with no options: the library aot builds for the host
  (its own flags and tuning, see aot/emit/build/targets.py), called through
  the loaded Python callable and timed around that call with
  ``time.perf_counter_ns``, exactly as onnxruntime's ``session.run`` is (so
  both figures include a Python call; ours also allocates the output and a
  poisoned arena per call).

``--repeats N`` measures everything N times and reports each ratio's median
and range over the repeats.

``--profile`` adds a ``perf`` profile of the generated C: the share of time
of each kernel, with the IR it came from.

Numbers on a machine shared with other jobs are noisy; the load average
before and after is written into the JSON.  Usage::

    python3 bench/onnx_models.py [--models ds_cnn,resnet8] [--runs 200]
                                 [--config fastest,default] [--repeats 3]
                                 [--json bench/onnx_models.json]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import re
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DRIVER = Path(__file__).resolve().parent / "timing_driver.c"
PEAK = Path(__file__).resolve().parent / "peak.c"
MODELS_PY = ROOT / "examples" / "mlperf_tiny" / "models.py"
DEFAULT_OPT = "-O3 -march=native"

try:
    import aot
except ImportError:  # a clean checkout, not installed: use the tree this file is in
    sys.path.insert(0, str(ROOT))
    import aot


def load_models_module():
    spec = importlib.util.spec_from_file_location("mlperf_tiny_models", MODELS_PY)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# -- our C ---------------------------------------------------------------------

@dataclass(frozen=True)
class CBuild:
    executable: Path
    objects: tuple[Path, ...]
    build_s: float
    commands: tuple[str, ...]


def write_bench_header(bench_dir: Path, meta: dict[str, Any]) -> Path:
    """``bench_model.h``: the model's header plus the macros the driver uses."""
    name = meta["name"]
    if len(meta["inputs"]) != 1 or len(meta["outputs"]) != 1 or \
            meta["inputs"][0]["dtype"] != "float32" or meta["outputs"][0]["dtype"] != "float32":
        raise SystemExit(f"{name}: the timing driver handles one float32 input and output")
    prefix = meta["status_codes"][0]["macro"].removesuffix("_OK")
    entry = meta["entry"]["name"]
    text = "\n".join([
        f"/* Generated by bench/onnx_models.py for model `{name}`. */",
        f'#include "{name}.h"',
        f'#define BENCH_MODEL_NAME "{name}"',
        f"#define BENCH_RUN(in, out, arena) {entry}((in), (out), (arena))",
        f"#define BENCH_INPUT_SIZE {prefix}_INPUT_0_SIZE",
        f"#define BENCH_OUTPUT_SIZE {prefix}_OUTPUT_0_SIZE",
        f"#define BENCH_ARENA_BYTES {prefix}_ARENA_BYTES",
        f"#define BENCH_ARENA_ALIGN {prefix}_ARENA_ALIGN",
        ""])
    path = bench_dir / "bench_model.h"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    return path


def build_driver(root: Path, meta: dict[str, Any], cc: str, opt: list[str],
                 subdir: str = "bench") -> CBuild:
    """Compile the artifact's sources with ``opt`` and link the driver, in
    ``root/subdir``."""
    bench_dir = write_bench_header(root / subdir, meta).parent
    includes = [f"-I{root / 'include'}", f"-I{root / 'runtime_c'}", f"-I{bench_dir}"]
    flags = [*meta["c_flags"], *opt]
    start = time.perf_counter()
    objects, commands = [], []
    for src in meta["files"]["sources"]:
        obj = bench_dir / (Path(src).stem + ".o")
        cmd = [cc, *flags, *includes, "-c", str(root / src), "-o", str(obj)]
        commands.append(shlex.join(cmd))
        subprocess.run(cmd, check=True)
        objects.append(obj)
    exe = bench_dir / "timing_driver"
    cmd = [cc, "-std=c99", "-Wall", "-Wextra", "-O2", *includes, str(DRIVER),
           *map(str, objects), "-o", str(exe), "-lm"]
    commands.append(shlex.join(cmd))
    subprocess.run(cmd, check=True)
    return CBuild(exe, tuple(objects), time.perf_counter() - start, tuple(commands))


def text_bytes(objects: tuple[Path, ...]) -> int:
    """Bytes of the ``.text*`` sections (``size -A``; constants are in ``.rodata``)."""
    total = 0
    for obj in objects:
        out = subprocess.run(["size", "-A", str(obj)], check=True, capture_output=True,
                             text=True).stdout
        for line in out.splitlines():
            parts = line.split()
            if len(parts) >= 2 and parts[0].startswith(".text") and parts[1].isdigit():
                total += int(parts[1])
    return total


def time_c(build: CBuild, x: np.ndarray, out_shape: tuple[int, ...], runs: int,
           warmup: int) -> tuple[np.ndarray, np.ndarray]:
    """Every call's time in ns (timed inside C) and the output."""
    work = build.executable.parent
    x.astype(np.float32).tofile(work / "input.bin")
    subprocess.run([str(build.executable), str(work / "input.bin"), str(work / "output.bin"),
                    str(runs), str(warmup), str(work / "times.bin")],
                   check=True, capture_output=True, text=True)
    times = np.fromfile(work / "times.bin", dtype=np.int64)
    y = np.fromfile(work / "output.bin", dtype=np.float32).reshape(out_shape)
    return times, y


#: Extra flags of the profiling build: kernels (plain ``static`` functions)
#: stay out of line, so perf can tell them apart, while the runtime's
#: ``static inline`` helpers are still inlined.
PROFILE_FLAGS = ("-fno-inline-functions", "-fno-inline-small-functions",
                 "-fno-inline-functions-called-once")


def profile_c(root: Path, meta: dict[str, Any], args, x: np.ndarray,
              runs: int) -> list[dict[str, Any]]:
    """Where the generated C spends its time: ``perf record`` over ``runs``
    calls of a build that keeps kernels out of line; one row per symbol
    with at least 0.5 % of the samples, each kernel with the operators it
    came from (gcc's clone suffixes such as ``.constprop.0`` removed)."""
    build = build_driver(root, meta, args.cc, [*shlex.split(args.opt), *PROFILE_FLAGS],
                         subdir="bench_profile")
    work = build.executable.parent
    x.astype(np.float32).tofile(work / "input.bin")
    data = work / "perf.data"
    subprocess.run(["perf", "record", "-q", "-o", str(data), "--", str(build.executable),
                    str(work / "input.bin"), str(work / "output.bin"), str(runs), "0"],
                   check=True, capture_output=True)
    report = subprocess.run(["perf", "report", "-i", str(data), "--stdio", "--no-children",
                             "--sort", "symbol", "--percent-limit", "0.5", "-q"],
                            check=True, capture_output=True, text=True).stdout
    kernels = {k["name"]: k for k in meta["kernels"]}
    rows = []
    for line in report.splitlines():
        found = re.match(r"\s*([\d.]+)%\s+\[[.k]\]\s+(\S+)", line)
        if found:
            symbol = found.group(2).split(".")[0]
            kernel = kernels.get(symbol, {})
            first = kernel.get("source", "").split("\n")[0]
            rows.append({"symbol": symbol, "percent": float(found.group(1)),
                         "ops": kernel.get("ops", []), "first_ir": first})
    return rows


def print_profile(row: dict[str, Any]) -> None:
    print(f"\n{row['model']}: time by symbol (perf, {' '.join(PROFILE_FLAGS)})")
    for p in row["profile"]:
        print(f"  {p['percent']:6.2f}%  {p['symbol']:<24} {' + '.join(p['ops'])}")
        if p["first_ir"]:
            print(f"  {'':32} {p['first_ir']}")


def peak_gmacs(cc: str, opt: list[str], work: Path) -> dict[str, float]:
    """The machine's rough single-thread float32 MAC peak (bench/peak.c),
    with fused multiply-add and without (``-ffp-contract=off``, as aot's C)."""
    peaks = {}
    for label, contract in (("fma", "fast"), ("no_fma", "off")):
        exe = work / f"peak_{label}"
        subprocess.run([cc, "-std=gnu99", *opt, f"-ffp-contract={contract}", str(PEAK),
                        "-o", str(exe)], check=True)
        out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
        peaks[label] = json.loads(out)["gmacs"]
    return peaks


# -- onnxruntime ---------------------------------------------------------------

def ort_session(model_bytes: bytes):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(model_bytes, so, providers=["CPUExecutionProvider"])


def time_ort(session, feeds: dict[str, np.ndarray], runs: int,
             warmup: int) -> tuple[np.ndarray, np.ndarray]:
    """Every ``session.run``'s time in ns and the output."""
    for _ in range(warmup):
        session.run(None, feeds)
    times = np.empty(runs, dtype=np.int64)
    for i in range(runs):
        start = time.perf_counter_ns()
        y = session.run(None, feeds)[0]
        times[i] = time.perf_counter_ns() - start
    return times, y


def time_loaded(fn, x: np.ndarray, runs: int, warmup: int) -> tuple[np.ndarray, np.ndarray]:
    """Every call's time in ns of an ``aot.load`` callable and the output."""
    for _ in range(warmup):
        fn(x)
    times = np.empty(runs, dtype=np.int64)
    for i in range(runs):
        start = time.perf_counter_ns()
        y = fn(x)
        times[i] = time.perf_counter_ns() - start
    return times, y


def summarise(times: list[np.ndarray]) -> dict[str, Any]:
    """Statistics over all rounds' samples, computed as the driver computes
    them (upper median)."""
    t = np.sort(np.concatenate(times))
    n = len(t)
    return {"runs": n, "median_ns": int(t[n // 2]), "min_ns": int(t[0]),
            "p90_ns": int(t[min(n * 9 // 10, n - 1)]), "mean_ns": float(t.mean()),
            "round_medians_ns": [int(np.median(r)) for r in times]}


def ort_call_overhead_ns(runs: int) -> int:
    """Median time of ``session.run`` on a one-element Identity model."""
    from onnx import TensorProto, helper
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "identity",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    times, _ = time_ort(ort_session(model.SerializeToString()),
                        {"x": np.zeros(1, np.float32)}, runs, 20)
    return summarise([times])["median_ns"]


# -- one model -----------------------------------------------------------------

def measure(name: str, models, work: Path, args, config: str = "fastest") -> dict[str, Any]:
    import onnx
    model = models.build(name)
    path = work / f"{name}.onnx"
    onnx.save(model, path)
    shape = models.input_shape(model)
    x = np.random.default_rng(args.seed).standard_normal(shape).astype(np.float32)
    out_shape = tuple(d.dim_value for d in model.graph.output[0].type.tensor_type.shape.dim)
    row: dict[str, Any] = {"model": name, "input_shape": list(shape),
                           "params": models.param_count(model), "macs": models.macs(model)}

    session = ort_session(model.SerializeToString())
    feeds = {session.get_inputs()[0].name: x}
    row["config"] = config
    default = config == "default"
    try:
        start = time.perf_counter()
        mod = aot.from_onnx(str(path))
        row["import_s"] = time.perf_counter() - start
        if default:    # the user's path: no options at all
            art = aot.compile(mod, work / f"{name}-default", name=name)
        else:
            art = aot.compile(mod, work / name, name=name, build=False, tuning=args.tuning)
        row["compile_s"] = time.perf_counter() - start
        if default:
            start = time.perf_counter()
            fn = aot.load(art)
            row["load_s"] = time.perf_counter() - start
    except Exception as err:  # recorded in the table and JSON; the other models still run
        row["error"] = f"aot: {type(err).__name__}: {err}"
        row["ort"] = summarise([time_ort(session, feeds, args.runs, args.warmup)[0]])
        return row
    meta = dict(art.metadata)
    if default:
        build = None
        row["build_s"] = float("nan")     # inside compile_s: aot.compile builds the library
    else:
        build = build_driver(art.root, meta, args.cc, shlex.split(args.opt))
        row["build_s"] = build.build_s
        row["build_commands"] = list(build.commands)

    # Alternate the two runtimes in rounds so that load from other jobs
    # (a shared machine) falls on both alike.
    ours_t, ort_t = [], []
    for k in range(args.rounds):
        n = args.runs // args.rounds + (k < args.runs % args.rounds)
        if build is None:
            t, y_ours = time_loaded(fn, x, n, args.warmup)
        else:
            t, y_ours = time_c(build, x, out_shape, n, args.warmup)
        ours_t.append(t)
        t, y_ort = time_ort(session, feeds, n, args.warmup)
        ort_t.append(t)
    ours, ort_stats = summarise(ours_t), summarise(ort_t)
    row["ours"], row["ort"] = ours, ort_stats
    row["ratio"] = ours["median_ns"] / ort_stats["median_ns"]
    row["ratio_min"] = ours["min_ns"] / ort_stats["min_ns"]
    row["max_abs_diff"] = float(np.max(np.abs(y_ours.astype(np.float64) - y_ort)))
    row["gmacs_ours"] = row["macs"] / ours["median_ns"]
    row["gmacs_ort"] = row["macs"] / ort_stats["median_ns"]
    if args.profile and build is not None:
        try:
            # about a second of calls: enough samples at perf's default rate
            runs = int(np.clip(1e9 / ours["median_ns"], 50, 20000))
            row["profile"] = profile_c(art.root, meta, args, x, runs)
        except (OSError, subprocess.CalledProcessError) as err:
            row["profile_error"] = str(err)
    row["arena_bytes"] = meta["arena_bytes"]
    row["arena_lower_bound_bytes"] = meta["arena_lower_bound_bytes"]
    row["arena_whole_tensor_bound_bytes"] = meta["arena_whole_tensor_bound_bytes"]
    row["constant_bytes"] = meta["constant_bytes"]
    row["code_bytes"] = text_bytes(build.objects if build is not None else
                                   (art.layout.library,))
    row["kernels"] = len(meta["kernels"])
    return row


# -- report --------------------------------------------------------------------

def machine() -> dict[str, Any]:
    import onnxruntime as ort
    cpu = ""
    try:
        found = re.search(r"^model name\s*:\s*(.*)$", Path("/proc/cpuinfo").read_text(), re.M)
        cpu = found.group(1) if found else ""
    except OSError:
        pass
    return {"platform": platform.platform(), "cpu": cpu, "cores": os.cpu_count(),
            "python": platform.python_version(), "onnxruntime": ort.__version__,
            "aot": aot.__version__}


def compiler_version(cc: str) -> str:
    out = subprocess.run([cc, "--version"], capture_output=True, text=True).stdout
    return out.splitlines()[0] if out else cc


def print_table(rows: list[dict[str, Any]]) -> None:
    head = (f"{'model':<17} {'MMAC':>6} {'ours us':>9} {'(min/p90)':>15} {'ORT us':>9} "
            f"{'ratio':>6} {'(min)':>5} {'GMAC/s':>11} {'max|diff|':>9} {'arena/LB/whole KiB':>20} "
            f"{'const KiB':>9} {'code KiB':>8} {'compile s':>9} {'build s':>7}")
    print(head)
    print("-" * len(head))
    for r in rows:
        ort_us = r["ort"]["median_ns"] / 1e3
        if "error" in r:
            print(f"{r['model']:<17} {r['macs'] / 1e6:>6.2f} {'-':>9} {'':>15} {ort_us:>9.1f}  "
                  f"{r['error'].splitlines()[0]}")
            continue
        o = r["ours"]
        print(f"{r['model']:<17} {r['macs'] / 1e6:>6.2f} {o['median_ns'] / 1e3:>9.1f} "
              f"{o['min_ns'] / 1e3:>7.1f}/{o['p90_ns'] / 1e3:<7.1f} {ort_us:>9.1f} "
              f"{r['ratio']:>6.2f} {r['ratio_min']:>5.2f} "
              f"{r['gmacs_ours']:>5.2f}/{r['gmacs_ort']:<5.2f} "
              f"{r['max_abs_diff']:>9.2e} "
              f"{r['arena_bytes'] / 1024:>6.1f}/{r['arena_lower_bound_bytes'] / 1024:.1f}/"
              f"{r['arena_whole_tensor_bound_bytes'] / 1024:<7.1f} "
              f"{r['constant_bytes'] / 1024:>9.1f} {r['code_bytes'] / 1024:>8.1f} "
              f"{r['compile_s']:>9.2f} {r['build_s']:>7.2f}")


def ratio_summary(rows: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, float]]]:
    """config -> model -> median, min and max of the ratio over the repeats."""
    found: dict[str, dict[str, list[float]]] = {}
    for r in rows:
        if "ratio" in r:
            found.setdefault(r["config"], {}).setdefault(r["model"], []).append(r["ratio"])
    return {config: {model: {"median": float(np.median(v)), "min": min(v), "max": max(v),
                             "all": v}
                     for model, v in per_model.items()}
            for config, per_model in found.items()}


def print_report(report: dict[str, Any], rows: list[dict[str, Any]], args) -> None:
    configs = report["configs"]
    for config in configs:
        what = (f"tuning {args.tuning}, {args.cc} {args.opt}, timed in C" if config == "fastest"
                else "aot.compile + aot.load with no options, timed around the Python call")
        print(f"\n[{config}] MLPerf Tiny models, {args.runs} timed runs each, one thread; ours: "
              f"{what}; onnxruntime {report['machine']['onnxruntime']} "
              f"(session.run overhead ~{report['ort_call_overhead_us']:.1f} us included)")
        print_table([r for r in rows if r["config"] == config and r["repeat"] == 0])
    if args.repeats > 1:
        print(f"\nours / onnxruntime (medians of alternating rounds), median [min-max] of "
              f"{args.repeats} repeats:")
        for config, per_model in report["ratios"].items():
            cells = [f"{m} {r['median']:.2f} [{r['min']:.2f}-{r['max']:.2f}]"
                     for m, r in per_model.items()]
            print(f"  {config:<8} " + "; ".join(cells))
    peak = report["peak_gmacs"]
    print(f"machine peak (bench/peak.c, one thread): {peak['fma']:.1f} GMAC/s with FMA, "
          f"{peak['no_fma']:.1f} without (aot's C: -ffp-contract=off, conv/dense MACs are fmaf)")
    for row in rows:
        if "profile" in row:
            print_profile(row)
        elif "profile_error" in row:
            print(f"\n{row['model']}: no profile: {row['profile_error']}")
    print(f"load average before/after: {report['loadavg_before'][0]:.2f} / "
          f"{report['loadavg_after'][0]:.2f} on {report['machine']['cores']} cores "
          "(numbers under load are noisy: a call longer than a scheduler slice is more\n"
          "often preempted than a short one, so under load the medians of slow models are\n"
          "inflated; the minima and per-round medians in the JSON are steadier)")


def main(argv: list[str] | None = None) -> int:
    models = load_models_module()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default=",".join(models.MODELS),
                    help="comma-separated (default: all)")
    ap.add_argument("--runs", type=int, default=200, help="timed calls per model and runtime")
    ap.add_argument("--rounds", type=int, default=5,
                    help="alternate ours and onnxruntime this many times (runs are split)")
    ap.add_argument("--warmup", type=int, default=10, help="untimed calls before each round")
    ap.add_argument("--seed", type=int, default=0, help="of the benchmark input")
    ap.add_argument("--json", type=Path,
                    default=Path(__file__).resolve().parent / "onnx_models.json")
    ap.add_argument("--cc", default="gcc")
    ap.add_argument("--tuning", default="simd",
                    help="aot.compile's loop-nest tuning (default simd: this is a host build)")
    ap.add_argument("--opt", default=DEFAULT_OPT,
                    help=f"optimisation flags for the model's C (default {DEFAULT_OPT!r})")
    ap.add_argument("--profile", action="store_true",
                    help="also profile the generated C with perf (time per kernel)")
    ap.add_argument("--build-dir", type=Path, help="keep the build here (default: a temp dir)")
    ap.add_argument("--config", default="fastest,default",
                    help="comma-separated: fastest (--tuning, --opt, the C timing driver) "
                         "and/or default (aot.compile + aot.load, no options)")
    ap.add_argument("--repeats", type=int, default=1,
                    help="measure everything this many times; ratios get a median and range")
    args = ap.parse_args(argv)
    configs = [c for c in args.config.split(",") if c]
    if not configs or any(c not in ("fastest", "default") for c in configs):
        ap.error("--config takes fastest and/or default")
    if args.repeats < 1:
        ap.error("need --repeats >= 1")
    names = [n for n in args.models.split(",") if n]
    unknown = [n for n in names if n not in models.MODELS]
    if unknown:
        ap.error(f"unknown model(s) {', '.join(unknown)}; known: {', '.join(models.MODELS)}")
    if args.rounds < 1 or args.runs < args.rounds:
        ap.error("need 1 <= --rounds <= --runs")

    report: dict[str, Any] = {
        "machine": machine(), "cc": compiler_version(args.cc), "opt": args.opt,
        "tuning": args.tuning, "runs": args.runs, "rounds": args.rounds, "warmup": args.warmup,
        "seed": args.seed,
        "loadavg_before": list(os.getloadavg()),
        "ort_call_overhead_us": ort_call_overhead_ns(args.runs) / 1e3,
    }
    # the default configuration builds through aot: never sanitized here (the
    # timings would mean nothing, and this process has no sanitizer runtime
    # loaded, so a sanitized library could not be loaded into it)
    os.environ.pop("AOT_SANITIZE", None)
    # the compiler's modules are imported lazily: load them before timing compile
    importlib.import_module("aot.frontend.onnx")
    importlib.import_module("aot.compiler")
    rows = []
    with tempfile.TemporaryDirectory(prefix="aot-bench-") as tmp:
        work = args.build_dir or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        report["peak_gmacs"] = peak_gmacs(args.cc, shlex.split(args.opt), work)
        for repeat in range(args.repeats):
            for config in configs:
                for name in names:
                    print(f"[{name}, {config}, repeat {repeat + 1}/{args.repeats}] ...",
                          file=sys.stderr, flush=True)
                    row = measure(name, models, work, args, config)
                    row["repeat"] = repeat
                    rows.append(row)
    report["loadavg_after"] = list(os.getloadavg())
    report["configs"] = configs
    report["repeats"] = args.repeats
    report["models"] = rows
    report["ratios"] = ratio_summary(rows)

    print_report(report, rows, args)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
