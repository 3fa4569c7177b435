"""Weight-only int4 convolutions: the packed int4 table dequantized in the
kernel against the same weights folded into a float32 table
(``FoldConstant`` ``keep_narrow=False``).

One ONNX model per shape (opset 21: ``DequantizeLinear`` of a constant
int4 weight, per output channel scale and zero point, feeding ``Conv``
with a bias), compiled both ways and run:

* on the host with the default host build (``aot.load``; tuning ``simd``
  and ``scalar``): the median CPU time (``time.process_time``, steadier
  than wall time on a shared machine) of several batches of calls;
* (``--m4``) on a Cortex-M4F under QEMU with the scalar tuning, counting
  instructions per multiply-accumulate exactly (``bench/kernels.py``'s
  driver, startup code and instruction-counting plugin).

The constant bytes of each build are reported as well (the int4 table is
an eighth of the float32 one).

Usage::

    python3 bench/int4_conv.py [--m4] [--no-host] [--only conv3x3]

Measured (Cortex-M4F, instructions per MAC, int4 / float32 table): before
the weights were staged (:mod:`aot.emit.lower.ops.nn_conv_wstage`) 3.71 /
1.41, 3.64 / 1.65, 3.78 / 1.38 for the three shapes; staged 1.43 / 1.41,
1.83 / 1.65, 1.66 / 1.38; with two-channel tiles for the 32->32 layer 1.42
(host ``scalar`` 1,190 -> 1,062 us, 872 unstaged, float32 table 555).
Products (:mod:`aot.emit.lower.ops.nn_product_wstage`): the 16-row MatMul
13.57 -> 4.04 staged (float32 table 4.16; host 100.9 -> 23.0 us, 18.2),
the one-row Gemm 11.56 in place (float32 table 2.17).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import aot  # noqa: E402
from aot.passes.manager import PassContext  # noqa: E402

#: (name, channels in, channels out, map size, kernel); products: (name,
#: reduced K, units N, rows M, 0 for ``Gemm`` with ``transB`` / 1 for ``MatMul``)
SHAPES = [("conv3x3_32x32_16", 32, 32, 16, 3), ("pw_64x64_8", 64, 64, 8, 1),
          ("conv3x3_8x16_12", 8, 16, 12, 3)]
PRODUCTS = [("gemm_256x64_1", 256, 64, 1, 0), ("matmul_64x64_16", 64, 64, 16, 1)]


def _product_model(k: int, n: int, m: int, matmul: int):
    from onnx import TensorProto as T, helper as h, numpy_helper
    rng = np.random.default_rng(1)
    w = rng.integers(-8, 8, (k, n) if matmul else (n, k))
    inits = [h.make_tensor("w", T.INT4, w.shape, w.astype(np.int32).flatten().tolist()),
             numpy_helper.from_array(rng.uniform(0.01, 0.1, n).astype(np.float32), "s"),
             h.make_tensor("z", T.INT4, [n], rng.integers(-8, 8, n).tolist()),
             numpy_helper.from_array(rng.standard_normal(n).astype(np.float32), "b")]
    nodes = [h.make_node("DequantizeLinear", ["w", "s", "z"], ["f"], axis=matmul)]
    if matmul:
        nodes += [h.make_node("MatMul", ["x", "f"], ["y0"]),
                  h.make_node("Add", ["y0", "b"], ["y"])]
    else:
        nodes.append(h.make_node("Gemm", ["x", "f", "b"], ["y"], transB=1))
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", T.FLOAT, [m, k])],
                     [h.make_tensor_value_info("y", T.FLOAT, [m, n])], inits)
    return h.make_model(g, opset_imports=[h.make_opsetid("", 21)])


def model(c: int, o: int, hw: int, k: int):
    import onnx  # noqa: F401
    from onnx import TensorProto as T, helper as h, numpy_helper
    rng = np.random.default_rng(1)
    w = rng.integers(-8, 8, (o, c, k, k))
    inits = [h.make_tensor("w", T.INT4, w.shape, w.astype(np.int32).flatten().tolist()),
             numpy_helper.from_array(rng.uniform(0.01, 0.1, o).astype(np.float32), "s"),
             h.make_tensor("z", T.INT4, [o], rng.integers(-8, 8, o).tolist()),
             numpy_helper.from_array(rng.standard_normal(o).astype(np.float32), "b")]
    nodes = [h.make_node("DequantizeLinear", ["w", "s", "z"], ["f"], axis=0),
             h.make_node("Conv", ["x", "f", "b"], ["y"], pads=[k // 2] * 4)]
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", T.FLOAT, [1, c, hw, hw])],
                     [h.make_tensor_value_info("y", T.FLOAT, [1, o, hw, hw])], inits)
    return h.make_model(g, opset_imports=[h.make_opsetid("", 21)])


def compile_(onnx_model, out: Path, narrow: bool, tuning: str | None, build: bool = True):
    mod = aot.from_onnx(onnx_model)
    opts = {} if narrow else {"FoldConstant": {"keep_narrow": False}}
    kw = {} if tuning is None else {"tuning": tuning}
    with PassContext(options=opts):
        return aot.compile(mod, out, name="m", build=build, **kw)


def const_bytes(art_dir: Path) -> int:
    import re
    text = (art_dir / "src" / "m.c").read_text()
    return sum(int(n) for n in re.findall(r"/\* c\d+: [^(]*\((\d+) bytes\)", text))


def host_time(art, x: np.ndarray) -> tuple[float, np.ndarray]:
    fn = aot.load(art)
    y = fn(x)
    once = time.process_time()
    fn(x)
    once = time.process_time() - once
    inner = max(1, int(0.02 / max(once, 1e-7)))
    best = []
    for _ in range(7):
        t = time.process_time()
        for _ in range(inner):
            fn(x)
        best.append((time.process_time() - t) / inner)
    return float(np.median(best)), y


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--m4", action="store_true")
    ap.add_argument("--no-host", action="store_true")
    ap.add_argument("--only", default="", help="shapes whose name starts so (comma list)")
    args = ap.parse_args()
    plugin = None
    tmp = Path(tempfile.mkdtemp(prefix="int4_conv_"))
    if args.m4:
        import kernels
        plugin = kernels.m4_plugin(tmp)
    cases = [(name, lambda c=c, o=o, hw=hw, k=k: model(c, o, hw, k), o * c * k * k * hw * hw,
              (1, c, hw, hw)) for name, c, o, hw, k in SHAPES]
    cases += [(name, lambda k=k, n=n, m=m, mm=mm: _product_model(k, n, m, mm), m * n * k, (m, k))
              for name, k, n, m, mm in PRODUCTS]
    for name, make, macs, xshape in cases:
        if args.only and not any(name.startswith(p) for p in args.only.split(",")):
            continue
        m = make()
        x = np.random.default_rng(2).standard_normal(xshape).astype(np.float32)
        row = [name]
        ys = {}
        for tuning in () if args.no_host else ("simd", "scalar"):
            times = {}
            for narrow in (True, False):
                d = tmp / f"{name}-{tuning}-{int(narrow)}"
                art = compile_(m, d, narrow, tuning)
                times[narrow], ys[(tuning, narrow)] = host_time(art, x)
                if tuning == "simd":
                    row.append(f"{'int4' if narrow else 'f32'} consts {const_bytes(d)} B")
            row.append(f"host {tuning}: int4 {times[True] * 1e6:.1f} us, f32 "
                       f"{times[False] * 1e6:.1f} us ({times[True] / times[False]:.2f}x)")
        if plugin is not None:
            import kernels
            ins = {}
            for narrow in (True, False):
                d = tmp / f"{name}-m4-{int(narrow)}"
                compile_(m, d, narrow, "scalar", build=False)
                ins[narrow] = (kernels.m4_insns(d, plugin, 3) - kernels.m4_insns(d, plugin, 1)) \
                    / 2 / macs
            row.append(f"M4 insns/MAC: int4 {ins[True]:.2f}, f32 {ins[False]:.2f} "
                       f"({ins[True] / ins[False]:.2f}x)")
        if ys:
            err = max(float(np.abs(ys[(t, True)] - ys[(t, False)]).max())
                      for t in ("simd", "scalar"))
            row.append(f"max |int4 - f32| {err:.1e}")
        print("; ".join(row), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
