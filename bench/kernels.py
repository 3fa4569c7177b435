"""Per-layer speed of the generated conv and dense kernels against
onnxruntime, on the host and (``--m4``) on a Cortex-M4F under QEMU.

Every distinct layer shape of the MLPerf Tiny models (float32, NCHW, after
batch-norm folding: conv/depthwise/pointwise/dense with bias and the
model's activation fused) is built twice:

* as a single-node ONNX model (``onnx.helper``; the activation as a second
  node, which onnxruntime fuses into the convolution), run by onnxruntime
  with one thread (intra/inter op 1, ``ORT_ENABLE_ALL``);
* as a Relay program with the weights bound as constants
  (``aot.compile(..., params=..., tuning="simd")``; ``--tuning`` to
  change), its C compiled with
  the default host build's flags (``-O3``, the host CPU, ``-ffp-contract=off``;
  ``Toolchain.codegen_flags``) together with a small driver
  that times the entry function with ``clock_gettime``.

Timing.  Both sides report the median of many samples; each sample times
enough back-to-back calls to last about a millisecond.  A Python
``session.run`` costs several microseconds of binding overhead, as much as
a small layer itself, so the onnxruntime time per layer is measured by
difference: a model holding ``REPEAT`` independent copies of the node (on
the same input, common-subexpression elimination disabled) against one
holding one copy, ``(t(REPEAT) - t(1)) / (REPEAT - 1)`` -- the node's own
time inside a session, its per-node dispatch and output allocation
included.  The machine may be shared: run twice and compare; the medians
of one run typically move by a few percent.

The results are checked too: our output against onnxruntime's (max
absolute difference relative to the output's magnitude).

``--m4`` builds each layer for a Cortex-M4F (``arm-none-eabi-gcc
-mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16 -O2``, startup
code and linker script in ``bench/m4/``), runs it under
``qemu-system-arm -M mps2-an386`` with the project's instruction-counting
plugin (``examples/embedded/insn_count.c``) once with 1 and once with 3 calls of
the entry, and reports ``(insns(3) - insns(1)) / 2`` per nominal
multiply-accumulate (every tap of every window counts, padding included:
the usual figure for a model).  Instruction counts are exact.

Usage::

    python3 bench/kernels.py                       # every layer, host
    python3 bench/kernels.py --only rn_,mn_pw      # layers whose name starts so
    python3 bench/kernels.py --m4 [--no-host]      # add instructions per MAC
    python3 bench/kernels.py --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zlib
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

import aot  # noqa: E402

HOST_CC = os.environ.get("CC", "gcc")


def host_flags() -> list[str]:
    """The default host build's code-generation flags (Toolchain.codegen_flags:
    -O3, the host CPU with gcc's AVX-512VL workaround where it applies,
    -ffp-contract=off), so per-layer times are those of what aot.load builds."""
    from aot.emit.build.toolchain import probe_toolchain
    return [*probe_toolchain(HOST_CC).codegen_flags, "-std=c99", "-fno-strict-aliasing"]
M4_CC = "arm-none-eabi-gcc"
M4_FLAGS = ["-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16", "-O2",
            "-std=c99", "-ffp-contract=off", "-fno-strict-aliasing",
            "-ffunction-sections", "-fdata-sections"]
INSN_PLUGIN_SRC = ROOT / "examples" / "embedded" / "insn_count.c"
#: copies of the node in the onnxruntime model timed against one copy
REPEAT = 9


# ================================================================ the layers

@dataclass(frozen=True)
class Layer:
    """One layer: a 2-d convolution (``kind`` conv) on a ``1 x c x h x w``
    input or a dense layer (``kind`` dense) from ``c`` to ``o`` units.
    ``count``: how often the shape occurs in its model."""

    name: str
    model: str
    kind: str
    c: int
    o: int
    h: int = 1
    w: int = 1
    kh: int = 1
    kw: int = 1
    stride: int = 1
    pads: tuple[int, int, int, int] = (0, 0, 0, 0)     # top, left, bottom, right
    groups: int = 1
    act: str | None = "relu"                           # relu | relu6 | None
    count: int = 1

    @property
    def out_hw(self) -> tuple[int, int]:
        t, l, b, r = self.pads
        return ((self.h + t + b - self.kh) // self.stride + 1,
                (self.w + l + r - self.kw) // self.stride + 1)

    @property
    def macs(self) -> int:
        if self.kind == "dense":
            return self.c * self.o
        oh, ow = self.out_hw
        return self.o * oh * ow * (self.c // self.groups) * self.kh * self.kw

    @property
    def in_shape(self) -> tuple[int, ...]:
        return (1, self.c) if self.kind == "dense" else (1, self.c, self.h, self.w)

    @property
    def out_shape(self) -> tuple[int, ...]:
        return (1, self.o) if self.kind == "dense" else (1, self.o, *self.out_hw)

    @property
    def w_shape(self) -> tuple[int, ...]:
        if self.kind == "dense":
            return (self.o, self.c)
        return (self.o, self.c // self.groups, self.kh, self.kw)


def conv(name, model, c, o, hw, k=3, stride=1, pads=None, groups=1, act="relu", count=1):
    h, w = hw if isinstance(hw, tuple) else (hw, hw)
    kh, kw = k if isinstance(k, tuple) else (k, k)
    if pads is None:             # 'same': TensorFlow's split (the extra row/column at the end)
        pads = []
        for size, kk in ((h, kh), (w, kw)):
            out = -(-size // stride)
            total = max((out - 1) * stride + kk - size, 0)
            pads.append((total // 2, total - total // 2))
        pads = (pads[0][0], pads[1][0], pads[0][1], pads[1][1])
    return Layer(name, model, "conv", c, o, h, w, kh, kw, stride, tuple(pads), groups, act,
                 count)


def dw(name, model, c, hw, stride=1, act="relu", count=1):
    return conv(name, model, c, c, hw, 3, stride, groups=c, act=act, count=count)


def pw(name, model, c, o, hw, act="relu", count=1):
    return conv(name, model, c, o, hw, 1, act=act, count=count)


def dense(name, model, c, o, act="relu", count=1):
    return Layer(name, model, "dense", c, o, act=act, count=count)


LAYERS: list[Layer] = [
    # DS-CNN (keyword spotting): 49x10 MFCC input
    conv("ds_conv1", "ds-cnn", 1, 64, (49, 10), (10, 4), 2),
    dw("ds_dw", "ds-cnn", 64, (25, 5), count=4),
    pw("ds_pw", "ds-cnn", 64, 64, (25, 5), count=4),
    dense("ds_fc", "ds-cnn", 64, 12, act=None),
    # ResNet-8 (CIFAR-10)
    conv("rn_conv1", "resnet8", 3, 16, 32),
    conv("rn_c16", "resnet8", 16, 16, 32, count=2),
    conv("rn_c16_32s2", "resnet8", 16, 32, 32, stride=2),
    conv("rn_c32", "resnet8", 32, 32, 16),
    conv("rn_c32_64s2", "resnet8", 32, 64, 16, stride=2),
    conv("rn_c64", "resnet8", 64, 64, 8),
    conv("rn_sc16_32", "resnet8", 16, 32, 32, 1, 2, act=None),
    conv("rn_sc32_64", "resnet8", 32, 64, 16, 1, 2, act=None),
    dense("rn_fc", "resnet8", 64, 10, act=None),
    # MobileNetV1 0.25, 96x96 (visual wake words); ReLU6
    conv("mn_conv1", "mobilenet", 3, 8, 96, stride=2, act="relu6"),
    dw("mn_dw8", "mobilenet", 8, 48, act="relu6"),
    pw("mn_pw8_16", "mobilenet", 8, 16, 48, act="relu6"),
    dw("mn_dw16s2", "mobilenet", 16, 48, 2, act="relu6"),
    pw("mn_pw16_32", "mobilenet", 16, 32, 24, act="relu6"),
    dw("mn_dw32", "mobilenet", 32, 24, act="relu6"),
    pw("mn_pw32_32", "mobilenet", 32, 32, 24, act="relu6"),
    dw("mn_dw32s2", "mobilenet", 32, 24, 2, act="relu6"),
    pw("mn_pw32_64", "mobilenet", 32, 64, 12, act="relu6"),
    dw("mn_dw64", "mobilenet", 64, 12, act="relu6"),
    pw("mn_pw64_64", "mobilenet", 64, 64, 12, act="relu6"),
    dw("mn_dw64s2", "mobilenet", 64, 12, 2, act="relu6"),
    pw("mn_pw64_128", "mobilenet", 64, 128, 6, act="relu6"),
    dw("mn_dw128", "mobilenet", 128, 6, act="relu6", count=5),
    pw("mn_pw128_128", "mobilenet", 128, 128, 6, act="relu6", count=5),
    dw("mn_dw128s2", "mobilenet", 128, 6, 2, act="relu6"),
    pw("mn_pw128_256", "mobilenet", 128, 256, 3, act="relu6"),
    dw("mn_dw256", "mobilenet", 256, 3, act="relu6"),
    pw("mn_pw256_256", "mobilenet", 256, 256, 3, act="relu6"),
    dense("mn_fc", "mobilenet", 256, 2, act=None),
    # FC autoencoder (anomaly detection), batch 1
    dense("ae_640_128", "autoencoder", 640, 128),
    dense("ae_128_128", "autoencoder", 128, 128, count=6),
    dense("ae_128_8", "autoencoder", 128, 8),
    dense("ae_8_128", "autoencoder", 8, 128),
    dense("ae_128_640", "autoencoder", 128, 640, act=None),
]


def weights(layer: Layer) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(zlib.crc32(layer.name.encode()))
    fan_in = int(np.prod(layer.w_shape[1:]))
    w = (rng.standard_normal(layer.w_shape) / np.sqrt(fan_in)).astype(np.float32)
    b = (0.1 * rng.standard_normal(layer.o)).astype(np.float32)
    return w, b


def input_data(layer: Layer) -> np.ndarray:
    rng = np.random.default_rng(1)
    return rng.standard_normal(layer.in_shape).astype(np.float32)


# ============================================================== onnxruntime

def onnx_model(layer: Layer, w: np.ndarray, b: np.ndarray, copies: int):
    """``copies`` independent copies of the layer on one input, each its
    own output."""
    from onnx import TensorProto, helper, numpy_helper

    inits = [numpy_helper.from_array(w, "W"), numpy_helper.from_array(b, "B")]
    nodes, outputs = [], []
    if layer.act == "relu6":
        inits += [numpy_helper.from_array(np.float32(0), "lo"),
                  numpy_helper.from_array(np.float32(6), "hi")]
    for r in range(copies):
        y, z = f"y{r}", f"z{r}"
        if layer.kind == "dense":
            nodes.append(helper.make_node("Gemm", ["X", "W", "B"], [y], transB=1))
        else:
            t, l, bo, ri = layer.pads
            nodes.append(helper.make_node("Conv", ["X", "W", "B"], [y],
                                          kernel_shape=[layer.kh, layer.kw],
                                          strides=[layer.stride] * 2, pads=[t, l, bo, ri],
                                          group=layer.groups))
        if layer.act == "relu":
            nodes.append(helper.make_node("Relu", [y], [z]))
        elif layer.act == "relu6":
            nodes.append(helper.make_node("Clip", [y, "lo", "hi"], [z]))
        else:
            z = y
        outputs.append(helper.make_tensor_value_info(z, TensorProto.FLOAT, layer.out_shape))
    graph = helper.make_graph(nodes, layer.name, [helper.make_tensor_value_info(
        "X", TensorProto.FLOAT, layer.in_shape)], outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model.SerializeToString()


def ort_session(model_bytes: bytes):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(model_bytes, so, providers=["CPUExecutionProvider"],
                                disabled_optimizers=["CommonSubexpressionElimination"])


def median_time(fn, samples: int, target_s: float = 1e-3) -> float:
    """Median seconds per call of ``fn`` over ``samples`` samples of
    back-to-back calls lasting about ``target_s`` each."""
    fn()
    t0 = time.perf_counter()
    fn()
    once = max(time.perf_counter() - t0, 1e-7)
    inner = max(1, int(target_s / once))
    times = []
    for _ in range(samples):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        times.append((time.perf_counter() - t0) / inner)
    return float(np.median(times))


def time_ort(layer: Layer, w, b, x, samples: int) -> tuple[float, float, np.ndarray]:
    """(seconds per node by difference, seconds of one session.run, output)."""
    one = ort_session(onnx_model(layer, w, b, 1))
    many = ort_session(onnx_model(layer, w, b, REPEAT))
    feed = {"X": x}
    out = one.run(None, feed)[0]
    t1s, tns = [], []
    for _ in range(3):          # interleaved, so both see the same machine load
        t1s.append(median_time(lambda: one.run(None, feed), samples))
        tns.append(median_time(lambda: many.run(None, feed), samples))
    t1, tn = float(np.median(t1s)), float(np.median(tns))
    return max((tn - t1) / (REPEAT - 1), 1e-9), t1, out


# ====================================================================== ours

def relay_text(layer: Layer) -> str:
    x = f"Tensor[{layer.in_shape}, float32]"
    wt = f"Tensor[{layer.w_shape}, float32]"
    bt = f"Tensor[({layer.o},), float32]"
    if layer.kind == "dense":
        core = "nn.dense(%x, %w)"
    else:
        t, l, bo, r = layer.pads
        core = (f"nn.conv2d(%x, %w, strides=[{layer.stride}, {layer.stride}], "
                f"padding=[{t}, {l}, {bo}, {r}], groups={layer.groups}, channels={layer.o}, "
                f"kernel_size=[{layer.kh}, {layer.kw}])")
    body = f"nn.bias_add({core}, %b)"
    if layer.act == "relu":
        body = f"nn.relu({body})"
    elif layer.act == "relu6":
        body = f"clip({body}, a_min=0f, a_max=6f)"
    return f"def @main(%x: {x}, %w: {wt}, %b: {bt}) {{\n  {body}\n}}\n"


def generate(layer: Layer, w, b, out_dir: Path, tuning: str) -> Path:
    """The artifact's directory (sources only, no library)."""
    mod = aot.parse(relay_text(layer), source_name=layer.name + ".relay")
    aot.compile(mod, out_dir, name="m", params={"w": w, "b": b}, build=False, tuning=tuning)
    return out_dir


HOST_DRIVER = r"""
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "m.h"

static float x[M_INPUT_0_SIZE];
static float y[M_OUTPUT_0_SIZE];
static double arena_storage[(M_ARENA_BYTES + sizeof(double)) / sizeof(double) + 2];

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double u = *(const double *)a, v = *(const double *)b;
    return (u > v) - (u < v);
}

int main(int argc, char **argv) {
    int samples = atoi(argv[1]), s, i, inner;
    double t0, once, times[1000];
    FILE *f = fopen(argv[2], "rb");
    if (f == NULL || fread(x, sizeof x, 1, f) != 1) return 2;
    fclose(f);
    if (samples > 1000) samples = 1000;
    m_run(x, y, arena_storage);
    t0 = now();
    m_run(x, y, arena_storage);
    once = now() - t0;
    inner = (int)(1e-3 / (once > 1e-8 ? once : 1e-8));
    if (inner < 1) inner = 1;
    for (s = 0; s < samples; ++s) {
        t0 = now();
        for (i = 0; i < inner; ++i) m_run(x, y, arena_storage);
        times[s] = (now() - t0) / inner;
    }
    qsort(times, (size_t)samples, sizeof times[0], cmp);
    f = fopen(argv[3], "wb");
    if (f == NULL || fwrite(y, sizeof y, 1, f) != 1) return 3;
    fclose(f);
    printf("%.9g\n", times[samples / 2]);
    return 0;
}
"""


def run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed ({r.returncode}):\n"
                           f"{r.stdout}\n{r.stderr}")
    return r


def time_ours(layer: Layer, art: Path, x: np.ndarray, samples: int) -> tuple[float, np.ndarray]:
    work = art / "host"
    work.mkdir(exist_ok=True)
    (work / "driver.c").write_text(HOST_DRIVER)
    exe = work / "bench"
    run([HOST_CC, *host_flags(), f"-I{art / 'include'}", f"-I{art / 'runtime_c'}",
         str(art / "src" / "m.c"), str(work / "driver.c"), "-o", str(exe), "-lm"])
    x.tofile(work / "x.bin")
    times = []
    for _ in range(3):
        r = run([str(exe), str(samples), str(work / "x.bin"), str(work / "y.bin")])
        times.append(float(r.stdout.strip()))
    y = np.fromfile(work / "y.bin", dtype=np.float32).reshape(layer.out_shape)
    return float(np.median(times)), y


# ================================================================ Cortex-M4

M4_DRIVER = r"""
#include <stdint.h>
#include <stdlib.h>
#include "m.h"

static float x[M_INPUT_0_SIZE];
static float y[M_OUTPUT_0_SIZE];
static double arena_storage[(M_ARENA_BYTES + sizeof(double)) / sizeof(double) + 2];

int main(void) {
    uint32_t s = 12345u;
    int i;
    for (i = 0; i < M_INPUT_0_SIZE; ++i) {
        s = s * 1664525u + 1013904223u;
        x[i] = (float)((int32_t)(s >> 8) - (1 << 23)) * (1.0f / (float)(1 << 23));
    }
    for (i = 0; i < RUNS; ++i) {
        if (m_run(x, y, arena_storage) != M_OK) return 1;
    }
    return 0;
}
"""


def m4_plugin(work: Path) -> Path:
    so = work / "insn_count.so"
    if not so.exists():
        run(["gcc", "-O2", "-shared", "-fPIC", "-o", str(so), str(INSN_PLUGIN_SRC)])
    return so


def m4_insns(art: Path, plugin: Path, runs: int) -> int:
    work = art / "m4"
    work.mkdir(exist_ok=True)
    (work / "driver.c").write_text(M4_DRIVER)
    elf = work / f"app{runs}.elf"
    run([M4_CC, *M4_FLAGS, f"-DRUNS={runs}", f"-I{art / 'include'}", f"-I{art / 'runtime_c'}",
         str(art / "src" / "m.c"), str(work / "driver.c"), str(HERE / "m4" / "startup.c"),
         "-T", str(HERE / "m4" / "link.ld"), "--specs=rdimon.specs", "-nostartfiles",
         "-Wl,--gc-sections", "-o", str(elf), "-lm"])
    out = work / f"insns{runs}.txt"
    r = subprocess.run(["qemu-system-arm", "-M", "mps2-an386", "-nographic",
                        "-semihosting-config", "enable=on,target=native", "-kernel", str(elf),
                        "-plugin", f"{plugin},out={out}"],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise RuntimeError(f"qemu exit {r.returncode}: {r.stdout}{r.stderr}")
    return int(out.read_text().split(":")[1])


def m4_insns_per_mac(layer: Layer, art: Path, plugin: Path) -> float:
    one, three = m4_insns(art, plugin, 1), m4_insns(art, plugin, 3)
    return (three - one) / 2 / layer.macs


# ==================================================================== main

@dataclass
class Result:
    name: str
    model: str
    count: int
    macs: int
    ours_us: float | None = None
    ort_us: float | None = None
    ort_run_us: float | None = None
    max_rel_err: float | None = None
    m4_insn_per_mac: float | None = None


def bench_layer(layer: Layer, args, plugin: Path | None, tmp: Path) -> Result:
    w, b = weights(layer)
    x = input_data(layer)
    res = Result(layer.name, layer.model, layer.count, layer.macs)
    if not args.no_host:
        art = generate(layer, w, b, tmp / layer.name, args.tuning)
        res.ours_us, y = time_ours(layer, art, x, args.samples)
        ort_t, ort_run, want = time_ort(layer, w, b, x, args.samples)
        res.ours_us *= 1e6
        res.ort_us, res.ort_run_us = ort_t * 1e6, ort_run * 1e6
        scale = max(float(np.max(np.abs(want))), 1.0)
        res.max_rel_err = float(np.max(np.abs(y - want))) / scale
    if plugin is not None:
        art = generate(layer, w, b, tmp / (layer.name + "-m4"), args.m4_tuning)
        res.m4_insn_per_mac = m4_insns_per_mac(layer, art, plugin)
    return res


def fmt(v: float | None, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def print_row(r: Result) -> None:
    ratio = r.ours_us / r.ort_us if r.ours_us and r.ort_us else None
    def gf(us: float | None) -> float | None:
        return 2 * r.macs / (us * 1e3) if us else None
    print(f"{r.name:14s} {r.macs:9d} {fmt(r.ours_us, '9.2f')} {fmt(r.ort_us, '9.2f')} "
          f"{fmt(r.ort_run_us, '9.2f')} {fmt(ratio, '6.2f')} {fmt(gf(r.ours_us), '7.2f')} "
          f"{fmt(gf(r.ort_us), '7.2f')} {fmt(r.max_rel_err, '8.1e')} "
          f"{fmt(r.m4_insn_per_mac, '6.2f')}", flush=True)


def print_models(results: list[Result]) -> None:
    models: dict[str, list[Result]] = {}
    for r in results:
        models.setdefault(r.model, []).append(r)
    print("\nper model (layers weighted by their count; conv/dense layers only)")
    for model, rs in models.items():
        macs = sum(r.count * r.macs for r in rs)
        line = f"{model:12s} MACs {macs:9d}"
        if all(r.ours_us and r.ort_us for r in rs):
            ours = sum(r.count * r.ours_us for r in rs)
            ort = sum(r.count * r.ort_us for r in rs)
            line += f"  ours {ours:9.1f} us  ort {ort:9.1f} us  ours/ort {ours / ort:5.2f}"
        if all(r.m4_insn_per_mac for r in rs):
            insns = sum(r.count * r.macs * r.m4_insn_per_mac for r in rs)
            line += f"  M4 {insns / macs:5.2f} insn/MAC"
        print(line)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default="", help="comma-separated layer name prefixes")
    ap.add_argument("--samples", type=int, default=31, help="timing samples per run")
    ap.add_argument("--m4", action="store_true", help="also count Cortex-M4F instructions")
    ap.add_argument("--no-host", action="store_true", help="skip the host timings")
    ap.add_argument("--tuning", default="simd", help="aot tuning of the host build")
    ap.add_argument("--m4-tuning", default="scalar", help="aot tuning of the M4 build")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--keep", help="keep the generated artifacts in this directory")
    args = ap.parse_args()
    prefixes = [p for p in args.only.split(",") if p]
    layers = [l for l in LAYERS if not prefixes or any(l.name.startswith(p) for p in prefixes)]
    if args.m4 and (shutil.which(M4_CC) is None or shutil.which("qemu-system-arm") is None):
        print("--m4 needs arm-none-eabi-gcc and qemu-system-arm", file=sys.stderr)
        return 2
    tmp = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="aot-kernels-"))
    tmp.mkdir(parents=True, exist_ok=True)
    plugin = m4_plugin(tmp) if args.m4 else None
    print(f"{'layer':14s} {'MACs':>9s} {'ours us':>9s} {'ort us':>9s} {'ort run':>9s} "
          f"{'ratio':>6s} {'GF/s':>7s} {'ortGF/s':>7s} {'err':>8s} {'M4 i/M':>6s}")
    results = []
    try:
        for layer in layers:
            r = bench_layer(layer, args, plugin, tmp)
            results.append(r)
            print_row(r)
        print_models(results)
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(r) for r in results], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
