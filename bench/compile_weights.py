"""Compile time of weight-heavy models: where the CPU goes, stage by stage.

The models: the MLPerf Tiny ones (``examples/mlperf_tiny/models.py``, up
to 0.8 MB of weights) and a ResNet-18-shaped ONNX graph made here with
``onnx.helper`` (torchvision's layer shapes: 7x7 stem, four stages of two
basic blocks, 64 to 512 channels, a 1000-way classifier; convolutions with
bias, batch norm folded away; seeded random weights: 11.7 M parameters,
46.8 MB).  For each model this measures CPU seconds (``time.process_time``
for Python, ``RUSAGE_CHILDREN`` for the compiler) of:

* ``import``: ``aot.from_onnx``;
* ``plan``: passes, lowering and memory planning (``aot.compiler.plan``);
* ``render``: writing the artifact (the C text: kernels and constant tables);
* ``cc``: compiling ``src/<name>.c`` with gcc and the host build's flags,

and the size of the C (``C MB``: the source gcc reads; ``inc MB``: the
large tables' integer form beside it, which gcc does not open).
``--profile`` prints the top of a cProfile of import + plan + render for
each model.  Usage::

    python bench/compile_weights.py [--models mobilenet_v1_025,resnet18] [--profile]
                                    [--json out.json] [--tuning scalar|simd] [--opt -O2]
"""

from __future__ import annotations

import argparse
import cProfile
import importlib.util
import io
import json
import pstats
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
MODELS_PY = ROOT / "examples" / "mlperf_tiny" / "models.py"
try:
    import aot
except ImportError:
    sys.path.insert(0, str(ROOT))
    import aot


def mlperf_models():
    spec = importlib.util.spec_from_file_location("mlperf_tiny_models", MODELS_PY)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def resnet18(seed: int = 18):
    """A ResNet-18-shaped ONNX model with random weights (see the module note)."""
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(seed)
    nodes, inits = [], []
    counter = [0]

    def fresh(prefix: str) -> str:
        counter[0] += 1
        return f"{prefix}{counter[0]}"

    def const(array: np.ndarray) -> str:
        name = fresh("w")
        inits.append(numpy_helper.from_array(array.astype(np.float32), name))
        return name

    def conv(x: str, cin: int, cout: int, k: int, stride: int, relu: bool) -> str:
        w = rng.standard_normal((cout, cin, k, k)) * np.sqrt(2.0 / (cin * k * k))
        y = fresh("conv")
        nodes.append(helper.make_node("Conv", [x, const(w), const(rng.standard_normal(cout) * .1)],
                                      [y], kernel_shape=[k, k], strides=[stride, stride],
                                      pads=[k // 2] * 4))
        if relu:
            r = fresh("relu")
            nodes.append(helper.make_node("Relu", [y], [r]))
            return r
        return y

    x = conv("input", 3, 64, 7, 2, True)
    pooled = fresh("pool")
    nodes.append(helper.make_node("MaxPool", [x], [pooled], kernel_shape=[3, 3], strides=[2, 2],
                                  pads=[1, 1, 1, 1]))
    x, cin = pooled, 64
    for stage, cout in enumerate((64, 128, 256, 512)):
        for block in range(2):
            stride = 2 if stage > 0 and block == 0 else 1
            y = conv(conv(x, cin, cout, 3, stride, True), cout, cout, 3, 1, False)
            shortcut = x if stride == 1 and cin == cout else conv(x, cin, cout, 1, stride, False)
            added, out = fresh("add"), fresh("relu")
            nodes += [helper.make_node("Add", [y, shortcut], [added]),
                      helper.make_node("Relu", [added], [out])]
            x, cin = out, cout
    gap, flat, logits = fresh("gap"), fresh("flat"), "logits"
    nodes += [helper.make_node("GlobalAveragePool", [x], [gap]),
              helper.make_node("Flatten", [gap], [flat]),
              helper.make_node("Gemm", [flat, const(rng.standard_normal((1000, 512)) * .04),
                                        const(np.zeros(1000))], [logits], transB=1)]
    graph = helper.make_graph(
        nodes, "resnet18", [helper.make_tensor_value_info("input", TensorProto.FLOAT,
                                                          [1, 3, 224, 224])],
        [helper.make_tensor_value_info(logits, TensorProto.FLOAT, [1, 1000])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def build(name: str):
    if name == "resnet18":
        return resnet18()
    return mlperf_models().build(name)


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(name: str, work: Path, tuning: str, profile: bool, opt: str | None) -> dict:
    from aot.compiler import plan
    from aot.emit.build.artifact import write_artifact
    from aot.emit.build.toolchain import find_toolchain
    from aot.emit.c.context import BUILD_FLAGS

    model = build(name)
    params = sum(int(np.prod(t.dims)) for t in model.graph.initializer)
    profiler = cProfile.Profile() if profile else None
    row: dict = {"model": name, "params": params, "tuning": tuning}
    if profiler:
        profiler.enable()
    t0 = time.process_time()
    mod = aot.from_onnx(model)
    t1 = time.process_time()
    planned = plan(mod, name, tuning=tuning)
    t2 = time.process_time()
    art = write_artifact(planned, work / name)
    t3 = time.process_time()
    if profiler:
        profiler.disable()
    row.update(import_s=t1 - t0, plan_s=t2 - t1, render_s=t3 - t2)
    source = art.root / "src" / f"{name}.c"
    row["c_bytes"] = source.stat().st_size
    tables = art.root / "src" / f"{name}_tables.inc"   # the integers gcc does not open
    row["inc_bytes"] = tables.stat().st_size if tables.is_file() else 0
    toolchain = find_toolchain()
    if opt is not None:      # these flags instead of the host build's optimisation and CPU flags
        toolchain = toolchain.with_opt_flags(*opt.split())
        if hasattr(toolchain, "with_target_flags"):
            toolchain = toolchain.with_target_flags()
    command = [*toolchain.command, *toolchain.object_flags(BUILD_FLAGS),
               f"-I{art.root / 'include'}", f"-I{art.root / 'runtime_c'}", "-c", str(source),
               "-o", str(work / f"{name}.o")]
    before = children_cpu()
    subprocess.run(command, check=True)
    row["cc_s"] = children_cpu() - before
    row["cc_flags"] = " ".join(toolchain.object_flags(BUILD_FLAGS))
    if profiler:
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(25)
        row["profile"] = out.getvalue()
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="ds_cnn,resnet8,mobilenet_v1_025,fc_autoencoder,resnet18")
    ap.add_argument("--tuning", default="scalar", help="loop nests (default: the firmware's)")
    ap.add_argument("--profile", action="store_true", help="print a cProfile of each model")
    ap.add_argument("--opt", help="compile with these flags instead of the host build's "
                                  "(e.g. -O2: compares the parse, not the optimiser)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    import aot.frontend.onnx  # noqa: F401  (imported before timing)
    import aot.compiler  # noqa: F401
    rows = []
    with tempfile.TemporaryDirectory(prefix="aot-compile-weights-") as tmp:
        for name in args.models.split(","):
            print(f"[{name}] ...", file=sys.stderr, flush=True)
            rows.append(measure(name, Path(tmp), args.tuning, args.profile, args.opt))
    head = (f"{'model':<17} {'params':>10} {'C MB':>7} {'inc MB':>7} {'import s':>8} "
            f"{'plan s':>7} {'render s':>8} {'cc s':>7} {'total CPU s':>11}")
    print(f"CPU seconds per stage, tuning {args.tuning}; cc: {rows[0]['cc_flags']}")
    print(head)
    print("-" * len(head))
    for r in rows:
        total = r["import_s"] + r["plan_s"] + r["render_s"] + r["cc_s"]
        print(f"{r['model']:<17} {r['params']:>10,} {r['c_bytes'] / 1e6:>7.1f} "
              f"{r['inc_bytes'] / 1e6:>7.1f} {r['import_s']:>8.2f} {r['plan_s']:>7.2f} "
              f"{r['render_s']:>8.2f} {r['cc_s']:>7.2f} {total:>11.2f}")
    for r in rows:
        if "profile" in r:
            print(f"\n{r['model']}:\n{r['profile']}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
