"""The qnn family (aot/ir/ops/qnn.py, qnn_linear.py) and
fixed_point_multiply compiled to C against the interpreter: quantize,
dequantize and requantize over their dtypes, roundings and compute dtypes,
per tensor and per channel, with scales that are literals, constant
vectors (folded at compile time into tables) and run-time parameters;
qnn.add / qnn.subtract / qnn.mul with broadcasting and per-channel scales; concatenate of
parts with different parameters; the integer accumulators of qnn.dense and
qnn.conv2d with zero points, layouts and groups; qnn.avg_pool2d with
equal and different parameters; qnn.leaky_relu.  Inputs include ties
(exact halves), saturating values, NaN and infinities.  Tables after
tests/ops/test_qnn.py.  One build per test (see test_ops_c.py)."""

from __future__ import annotations

import numpy as np

from c_harness import check_cases
from cases import qnn as qnn_cases
from test_ops_c import case, data, rng_for


def const_vec(n: int, first: float, step: float) -> str:
    """A float32 vector ``first, first + step, ...`` written so that
    constant folding turns it into a compile-time table."""
    return (f'add(multiply(arange(0f, {n}f, 1f, start=0f, stop={n}f, step=1f, '
            f'dtype="float32"), {step!r}f), {first!r}f)')


def quantize_data(name: str, shape, scale: float = 0.25) -> np.ndarray:
    """Reals around the quantized range, with exact ties (k + 0.5) * scale
    and the float specials."""
    rng = rng_for(name)
    x = (rng.standard_normal(shape) * 40 * scale).astype(np.float32)
    flat = x.reshape(-1)
    ties = (np.arange(flat.size // 3) - flat.size // 6 + 0.5) * scale
    flat[:ties.size] = ties
    for k, v in enumerate([np.nan, np.inf, -np.inf, -0.0, 1e9, -1e9]):
        if flat.size > ties.size + k:
            flat[ties.size + k] = v
    return x


def unary_cases():
    out = []
    for odt in ["int8", "uint8", "int16", "uint16", "int32"]:
        for scale, zp in [(0.25, 0), (0.1, 3), (2.0, -7), (1e-3, 100)]:
            name = f"qnn.quantize:{odt}-{scale}-{zp}"
            out.append(case(name, [("x", (3, 8), "float32")],
                            f'qnn.quantize(%x, {scale!r}f, {zp}, out_dtype="{odt}")',
                            [quantize_data(name, (3, 8), scale)]))
    name = "qnn.quantize:per-channel-params"
    out.append(case(name, [("x", (2, 3, 4), "float32"), ("s", (3,), "float32"),
                           ("z", (3,), "int32")],
                    'qnn.quantize(%x, %s, %z, axis=1, out_dtype="uint8")',
                    [quantize_data(name, (2, 3, 4)), np.array([0.5, 0.25, 1.0], np.float32),
                     np.array([0, 10, 128], np.int32)]))
    name = "qnn.quantize:per-channel-const"
    out.append(case(name, [("x", (4, 3), "float32")],
                    f"qnn.quantize(%x, {const_vec(4, 0.125, 0.25)}, 2, axis=0)",
                    [quantize_data(name, (4, 3))]))
    out.append(case("qnn.quantize:scalar", [("x", (), "float32")],
                    "qnn.quantize(%x, 0.5f, -1)", [np.array(2.25, np.float32)]))
    for idt in ["int8", "uint8", "int16", "uint16", "int32"]:
        for odt in ["float32", "float16"]:
            for scale, zp in [(0.25, 0), (0.037, -5)]:
                out.append(case(f"qnn.dequantize:{idt}-{odt}-{scale}-{zp}", [("q", (3, 7), idt)],
                                f'qnn.dequantize(%q, {scale!r}f, {zp}, out_dtype="{odt}")',
                                specials=True, lo=-128, hi=255))
    out.append(case("qnn.dequantize:per-channel-params",
                    [("q", (2, 3), "int8"), ("s", (3,), "float32"), ("z", (3,), "int32")],
                    "qnn.dequantize(%q, %s, %z)",
                    [data(rng_for("dq-pc"), (2, 3), "int8", specials=True),
                     np.array([1.0, 0.5, 0.25], np.float32), np.array([0, 10, 30], np.int32)]))
    out.append(case("qnn.dequantize:per-channel-const", [("q", (4, 2, 2), "uint8")],
                    f"qnn.dequantize(%q, {const_vec(4, 0.01, 0.02)}, 128, axis=0)",
                    lo=0, hi=255))
    out.append(case("qnn.dequantize:f16-overflow", [("q", (3,), "int32")],
                    'qnn.dequantize(%q, 1000f, 0, out_dtype="float16")',
                    [np.array([70, -70, 65], np.int32)]))
    return out




def requantize_cases():
    out = []
    # exact halves: 0.5 in, 1 out maps odd integers to ties
    for r in qnn_cases.ROUNDINGS:
        for compute in ["None", "int64", "float32", "float64"]:
            if r == "TFLITE" and compute.startswith("float"):
                continue
            name = f"qnn.requantize:ties-{r}-{compute}"
            out.append(case(name, [("x", (12,), "int32")],
                            f'qnn.requantize(%x, 0.5f, 0, 1f, 0, rounding="{r}", '
                            f'compute_dtype="{compute}", out_dtype="int8")',
                            [np.array([-7, -5, -3, -1, 1, 3, 5, 7, 255, 256, -256, -257],
                                      np.int32)]))
            name = f"qnn.requantize:quarter-{r}-{compute}"
            out.append(case(name, [("x", (8,), "int32")],
                            f'qnn.requantize(%x, 0.25f, 0, 1f, 0, rounding="{r}", '
                            f'compute_dtype="{compute}", out_dtype="int32")',
                            [np.array([6, -6, -3, -2, 2, 3, 2**31 - 1, -2**31], np.int32)]))
    for idt in ["int8", "uint8", "int16", "int32", "int64"]:
        for odt in ["int8", "uint8", "int16", "int32"]:
            for k, (s_in, z_in, s_out, z_out) in enumerate([(0.0123, 3, 0.0517, -4),
                                                           (0.8, -2, 0.01, 7)]):
                r = qnn_cases.ROUNDINGS[(k + len(idt) + len(odt)) % 4]
                name = f"qnn.requantize:{idt}-{odt}-{s_in}-{r}"
                out.append(case(name, [("x", (4, 5), idt)],
                                f"qnn.requantize(%x, {s_in!r}f, {z_in}, {s_out!r}f, {z_out}, "
                                f'rounding="{r}", out_dtype="{odt}")',
                                specials=True, lo=-30000, hi=30000))
    out.append(case("qnn.requantize:int64-big", [("x", (4,), "int64")],
                    'qnn.requantize(%x, 1f, 5, 0.5f, 0, out_dtype="int32")',
                    [np.array([2**40, -2**40, 2**31, 12345], np.int64)]))
    out.append(case("qnn.requantize:per-channel-params",
                    [("x", (2, 3), "int32"), ("s", (3,), "float32"), ("z", (3,), "int32")],
                    'qnn.requantize(%x, %s, %z, 0.5f, 1, axis=-1, rounding="TFLITE")',
                    [data(rng_for("rq-pc"), (2, 3), "int32", lo=-500, hi=500),
                     np.array([0.25, 0.125, 0.75], np.float32), np.array([0, 3, -3], np.int32)]))
    for r in ["UPWARD", "TFLITE", "TONEAREST"]:
        out.append(case(f"qnn.requantize:per-channel-const-{r}", [("x", (3, 4), "int32")],
                        f"qnn.requantize(%x, {const_vec(4, 0.01, 0.03)}, 0, 0.05f, 2, "
                        f'axis=1, rounding="{r}", out_dtype="int8")', lo=-1000, hi=1000))
    out.append(case("qnn.requantize:per-channel-const-float", [("x", (3, 4), "int16")],
                    f"qnn.requantize(%x, {const_vec(3, 0.2, 0.1)}, 0, 0.05f, 2, axis=0, "
                    'compute_dtype="float32", out_dtype="uint8")', lo=-100, hi=200))
    out.append(case("qnn.requantize:runtime-output-params",
                    [("x", (3,), "int32"), ("s", (), "float32"), ("z", (), "int32")],
                    'qnn.requantize(%x, 0.5f, 0, %s, %z, out_dtype="int8")',
                    [np.array([4, -4, 5], np.int32), np.array(0.25, np.float32),
                     np.array(1, np.int32)]))
    return out


def binary_cases():
    out = []
    for op in ["qnn.add", "qnn.subtract", "qnn.mul"]:
        for dt in ["int8", "uint8"]:
            lo, hi = (0, 255) if dt == "uint8" else (-128, 127)
            z = 128 if dt == "uint8" else 0
            for k, ((ls, lz, rs, rz, os_, oz), (a, b)) in enumerate([
                    ((0.25, z - 3, 0.25, z - 3, 0.5, z), ((2, 3), (2, 3))),
                    ((0.02, z, 0.07, z + 5, 0.05, z - 2), ((2, 3), (3,))),
                    ((0.5, z + 1, 0.125, z, 0.6, z + 3), ((4, 1), (1, 5))),
                    ((1.0, z, 1.0, z, 0.01, z), ((3,), ()))]):   # saturates
                name = f"{op}:{dt}-{k}"
                out.append(case(name, [("a", a, dt), ("b", b, dt)],
                                f"{op}(%a, %b, {ls!r}f, {lz}, {rs!r}f, {rz}, {os_!r}f, {oz})",
                                specials=True, lo=lo, hi=hi))
        out.append(case(f"{op}:per-channel-lhs",
                        [("a", (2, 3), "int8"), ("b", (2, 3), "int8"), ("s", (2,), "float32")],
                        f"{op}(%a, %b, %s, 0, 0.25f, 1, 0.5f, -1, lhs_axis=0)",
                        [data(rng_for(op + "pc-a"), (2, 3), "int8", lo=-128, hi=127),
                         data(rng_for(op + "pc-b"), (2, 3), "int8", lo=-128, hi=127),
                         np.array([0.125, 0.75], np.float32)]))
        out.append(case(f"{op}:per-channel-const", [("a", (2, 3), "uint8"), ("b", (3,), "uint8")],
                        f"{op}(%a, %b, 0.1f, 128, {const_vec(3, 0.05, 0.05)}, 120, 0.2f, 128, "
                        f"rhs_axis=0)", lo=0, hi=255))
    out.append(case("qnn.concatenate:int8",
                    [("a", (2, 3), "int8"), ("b", (2, 5), "int8")],
                    "qnn.concatenate((%a, %b), (0.5f, 1f), (0, 0), 0.5f, 0, axis=1)",
                    specials=True))
    out.append(case("qnn.concatenate:uint8-three",
                    [("a", (1, 4), "uint8"), ("b", (2, 4), "uint8"), ("c", (1, 4), "uint8")],
                    "qnn.concatenate((%a, %b, %c), (0.1f, 0.1f, 0.37f), (128, 120, 3), 0.1f, "
                    "128, axis=0)", lo=0, hi=255))
    out.append(case("qnn.concatenate:int16-neg-axis",
                    [("a", (2, 2), "int16"), ("b", (2, 1), "int16")],
                    "qnn.concatenate((%a, %b), (0.02f, 3f), (-5, 7), 0.05f, 1, axis=-1)",
                    specials=True, lo=-3000, hi=3000))
    out.append(case("qnn.concatenate:int32",
                    [("a", (3,), "int32"), ("b", (2,), "int32")],
                    "qnn.concatenate((%a, %b), (1f, 0.5f), (0, 0), 1f, 0, axis=0)",
                    specials=True))
    for k, (mult, shift) in enumerate([(1 << 30, 1), (1 << 30, 0), (1518500250, -3),
                                       (2**31 - 1, 5), (-(1 << 30), 2), (1, -31),
                                       (1395864371, 30)]):
        out.append(case(f"fixed_point_multiply:{mult}-{shift}", [("x", (3, 5), "int32")],
                        f"fixed_point_multiply(%x, multiplier={mult}, shift={shift})",
                        specials=True, lo=-100000, hi=100000))
    return out


def linear_cases():
    out = []
    for k, (xdt, wdt, odt) in enumerate([("int8", "int8", "int32"), ("uint8", "int8", "int32"),
                                         ("uint8", "uint8", "int64"), ("int16", "int8", "int32"),
                                         ("uint16", "uint8", "int64")]):
        for zp_in, zp_w in [(0, 0), (3, -2), (-128, 5)]:
            lo, hi = (0, 255) if xdt.startswith("u") else (-128, 127)
            out.append(case(f"qnn.dense:{xdt}-{wdt}-{odt}-{zp_in}-{zp_w}",
                            [("x", (3, 9), xdt), ("w", (4, 9), wdt)],
                            f"qnn.dense(%x, %w, {zp_in}, {zp_w}, 0.5f, 0.25f, units=4, "
                            f'out_dtype="{odt}")', specials=True, lo=lo, hi=hi))
    out.append(case("qnn.dense:per-channel-kernel", [("x", (2, 3, 5), "int8"),
                                                      ("w", (3, 5), "int8"), ("z", (3,), "int32"),
                                                      ("s", (3,), "float32")],
                    "qnn.dense(%x, %w, 1, %z, 0.5f, %s)",
                    [data(rng_for("qd-x"), (2, 3, 5), "int8"),
                     data(rng_for("qd-w"), (3, 5), "int8"), np.array([0, 4, -9], np.int32),
                     np.array([0.1, 0.2, 0.3], np.float32)]))
    out.append(case("qnn.dense:extremes", [("x", (1, 64), "int8"), ("w", (2, 64), "int8")],
                    "qnn.dense(%x, %w, 127, -128, 1f, 1f)",
                    [np.full((1, 64), -128, np.int8), np.full((2, 64), 127, np.int8)]))
    for xs, ws, attrs, dt in [
            ((1, 3, 6, 6), (4, 3, 3, 3), "padding=[1]", "int8"),
            ((1, 3, 7, 5), (4, 3, 3, 2), "strides=[2, 1], padding=[1, 0, 2, 1]", "uint8"),
            ((1, 9, 9, 8), (3, 3, 8, 1), 'strides=[2, 2], groups=8, channels=8, '
             'kernel_size=[3, 3], data_layout="NHWC", kernel_layout="HWOI"', "uint8"),
            ((2, 10, 7, 4), (6, 2, 2, 2), 'dilation=[2, 3], groups=2, data_layout="NHWC", '
             'kernel_layout="OHWI", out_layout="NCHW"', "int16"),
            ((1, 4, 5, 5), (6, 2, 3, 3), "groups=2, padding=[1, 1]", "int8"),
            ((1, 5, 6, 3), (3, 3, 3, 4), 'padding=[2, 1], data_layout="NHWC", '
             'kernel_layout="HWIO"', "int8")]:
        lo, hi = (0, 255) if dt == "uint8" else (-128, 127)
        wdt = "int16" if dt == "int16" else ("uint8" if dt == "uint8" else "int8")
        for zp_in, zp_w in [(0, 0), (5, -3)]:
            out.append(case(f"qnn.conv2d:{xs}-{ws}-{attrs}-{zp_in}-{zp_w}",
                            [("x", xs, dt), ("w", ws, wdt)],
                            f"qnn.conv2d(%x, %w, {zp_in}, {zp_w}, 0.5f, 0.25f, {attrs})",
                            lo=lo, hi=hi))
    out.append(case("qnn.conv2d:per-channel-kernel-zp",
                    [("x", (1, 3, 5, 5), "int8"), ("w", (4, 3, 3, 3), "int8"),
                     ("z", (4,), "int32")],
                    "qnn.conv2d(%x, %w, -1, %z, 0.5f, 0.25f, padding=[1, 1])",
                    [data(rng_for("qc-x"), (1, 3, 5, 5), "int8"),
                     data(rng_for("qc-w"), (4, 3, 3, 3), "int8"),
                     np.array([1, 0, -2, 7], np.int32)]))
    # int8 convolutions with a constant weight: the dual 16-bit kernel
    # (aot/emit/lower/ops/qnn_conv_dsp.py, portable path here;
    # tests/e2e/test_qnn_dsp.py runs the DSP path under QEMU)
    # (72 output channels: wider than the staged order's local array, the
    # plain order with channel pairs outermost)
    for xs, o, zp_in, fill in [((1, 4, 2, 4), 4, 127, -128), ((1, 4, 2, 4), 2, -128, 127),
                               ((2, 9, 3, 3), 7, -5, None), ((1, 2, 1, 5), 3, 0, None),
                               ((1, 4, 2, 3), 72, 3, None)]:
        n = o * xs[1]
        wconst = (f'reshape(cast(subtract(mod(multiply(arange(0f, {n}f, 1f, start=0f, '
                  f'stop={n}f, step=1f, dtype="float32"), 255f), 256f), 128f), '
                  f'dtype="int8"), newshape=[{o}, {xs[1]}, 1, 1])')
        args = None if fill is None else [np.full(xs, fill, np.int8)]
        out.append(case(f"qnn.conv2d:pointwise-int8-{xs}-{o}-{zp_in}",
                        [("x", xs, "int8")],
                        f"qnn.conv2d(%x, {wconst}, {zp_in}, 0, 0.5f, 0.25f)", args,
                        lo=-128, hi=127))
    for xs, o, k, attrs in [((1, 4, 7, 9), 5, 3, "strides=[2, 2], padding=[1, 0, 1, 2]"),
                            ((1, 3, 6, 8), 6, 3, "padding=[1, 1, 1, 1]"),
                            ((1, 6, 4, 9), 4, 3, "padding=[1, 1, 1, 1]")]:
        n = o * xs[1] * k * k
        wconst = (f'reshape(cast(subtract(mod(multiply(arange(0f, {n}f, 1f, start=0f, '
                  f'stop={n}f, step=1f, dtype="float32"), 37f), 256f), 128f), '
                  f'dtype="int8"), newshape=[{o}, {xs[1]}, {k}, {k}])')
        out.append(case(f"qnn.conv2d:window-int8-{xs}-{o}",
                        [("x", xs, "int8")],
                        f"qnn.conv2d(%x, {wconst}, -7, 0, 0.5f, 0.25f, {attrs}, "
                        f"kernel_size=[{k}, {k}])", None, lo=-128, hi=127))
    out.append(case("qnn.conv2d:out-int16-wraps", [("x", (1, 1, 3, 3), "int8"),
                                                   ("w", (1, 1, 3, 3), "int8")],
                    'qnn.conv2d(%x, %w, -128, -128, 1f, 1f, out_dtype="int16")',
                    [np.full((1, 1, 3, 3), 127, np.int8), np.full((1, 1, 3, 3), 127, np.int8)]))
    out.append(case("qnn.conv2d:requantized-network",
                    [("x", (1, 2, 5, 5), "float32"), ("w", (3, 2, 3, 3), "int8")],
                    '%0 = qnn.quantize(%x, 0.05f, 3, out_dtype="int8");\n'
                    '  %1 = qnn.conv2d(%0, %w, 3, 0, 0.05f, 0.02f, padding=[1, 1]);\n'
                    '  %2 = qnn.requantize(%1, 0.001f, 0, 0.1f, -4, out_dtype="int8");\n'
                    '  qnn.dequantize(%2, 0.1f, -4)'))
    return out


def product_cases():
    """qnn.batch_matmul and qnn.conv2d_transpose (with zero points, layouts,
    groups and per-channel kernel zero points), the int64 requantization of
    TFLite's 16x8 kernels and int16 qnn.add."""
    out = []
    for k, (xs, ys, attrs, xdt, ydt, zps) in enumerate([
            ((2, 3, 9), (2, 4, 9), "transpose_b=True", "int8", "int8", (0, 0)),
            ((2, 3, 9), (1, 9, 5), "transpose_b=False", "uint8", "int8", (128, 3)),
            ((3, 7, 4), (3, 7, 6), 'transpose_a=True, transpose_b=False, out_dtype="int64"',
             "int16", "uint8", (-5, 200)),
            ((1, 5, 6), (2, 3, 5), "transpose_a=True, transpose_b=True", "int8", "uint8",
             (-128, 127))]):
        lo, hi = quant_range(xdt)
        out.append(case(f"qnn.batch_matmul:{k}", [("x", xs, xdt), ("y", ys, ydt)],
                        f"qnn.batch_matmul(%x, %y, {zps[0]}, {zps[1]}, 0.5f, 0.25f, {attrs})",
                        specials=True, lo=lo, hi=hi))
    for k, (xs, ws, attrs, dt) in enumerate([
            ((1, 3, 4, 5), (3, 2, 3, 3), "strides=[2, 2], padding=[1, 1]", "int8"),
            ((1, 4, 5, 3), (3, 3, 6, 3), 'strides=[2, 1], padding=[0, 1, 1, 0], '
             'output_padding=[1, 0], data_layout="NHWC", kernel_layout="HWOI"', "uint8"),
            ((2, 4, 3, 3), (4, 3, 2, 2), "groups=2, dilation=[2, 1], channels=6", "int8"),
            ((1, 3, 3, 2), (5, 3, 3, 2), 'strides=[2, 2], padding=[1, 1, 0, 0], '
             'data_layout="NHWC", kernel_layout="OHWI"', "int16")]):
        lo, hi = quant_range(dt)
        for zp_in, zp_w in [(0, 0), (7, -3)]:
            out.append(case(f"qnn.conv2d_transpose:{k}-{zp_in}-{zp_w}",
                            [("x", xs, dt), ("w", ws, "uint8" if dt == "uint8" else "int8")],
                            f"qnn.conv2d_transpose(%x, %w, {zp_in}, {zp_w}, 0.5f, 0.25f, "
                            f"{attrs})", lo=lo, hi=hi))
    for k, (attrs, ws, out_c) in enumerate([("channels=4", (3, 4, 3, 3), 4),
                                             ("groups=3, channels=6", (3, 2, 3, 3), 6)]):
        out.append(case(f"qnn.conv2d_transpose:per-channel-zp-{k}",
                        [("x", (1, 3, 4, 4), "int8"), ("w", ws, "int8"), ("z", (out_c,), "int32")],
                        f"qnn.conv2d_transpose(%x, %w, 2, %z, 0.5f, 0.25f, strides=[2, 2], "
                        f"{attrs})",
                        [data(rng_for(f"qct-x{k}"), (1, 3, 4, 4), "int8"),
                         data(rng_for(f"qct-w{k}"), ws, "int8"),
                         np.arange(out_c, dtype=np.int32) * 3 - 5]))
    for k, (s_in, s_out, odt) in enumerate([(0.0001234, 0.05, "int16"), (3.5, 0.07, "int16"),
                                            (0.00731, 0.0123, "int8")]):
        out.append(case(f"qnn.requantize:TFLITE_INT64-{k}", [("x", (5, 6), "int64")],
                        f"qnn.requantize(%x, {s_in!r}f, 0, {s_out!r}f, {k}, "
                        f'rounding="TFLITE_INT64", out_dtype="{odt}")',
                        specials=True, lo=-(1 << 40), hi=1 << 40))
    out.append(case("qnn.requantize:TFLITE_INT64-per-channel", [("x", (3, 4), "int64")],
                    f"qnn.requantize(%x, {const_vec(4, 0.0001, 0.0003)}, 0, 0.003f, 0, "
                    'axis=1, rounding="TFLITE_INT64", out_dtype="int16")',
                    lo=-(1 << 36), hi=1 << 36))
    out.append(case("qnn.requantize:TFLITE_INT64-runtime",
                    [("x", (6,), "int64"), ("s", (), "float32")],
                    'qnn.requantize(%x, %s, 3, 0.5f, -2, rounding="TFLITE_INT64", '
                    'out_dtype="int32")',
                    [np.array([7, -7, 1 << 33, -(1 << 33), 0, 12345], np.int64),
                     np.array(0.0625, np.float32)]))
    for k, (params, shapes) in enumerate([("0.001f, 0, 0.0007f, 0, 0.0015f, 0",
                                           ((2, 3, 4), (2, 3, 4))),
                                          ("0.5f, 3, 0.25f, -4, 0.6f, 1", ((2, 1, 4), (3, 1))),
                                          ("%s, 0, 0.002f, 0, 0.004f, 0", ((2, 5), (2, 5)))]):
        op = "qnn.subtract" if k == 1 else "qnn.add"
        args = [("a", shapes[0], "int16"), ("b", shapes[1], "int16")]
        values = None
        if "%s" in params:
            args.append(("s", (), "float32"))
            values = [data(rng_for(f"qadd16-a{k}"), shapes[0], "int16", lo=-32768, hi=32767),
                      data(rng_for(f"qadd16-b{k}"), shapes[1], "int16", lo=-32768, hi=32767),
                      np.array(0.003, np.float32)]
        out.append(case(f"{op}:int16-{k}", args, f"{op}(%a, %b, {params})", values,
                        lo=-32768, hi=32767))
    return out


def pool_cases():
    out = []
    for k, (shape, dt, params, attrs) in enumerate([
            ((1, 6, 6, 4), "int8", "0.05f, -3, 0.05f, -3", 'pool_size=[3, 3], padding=[1, 1], '
             'layout="NHWC"'),
            ((2, 7, 5, 3), "int8", "0.05f, 5, 0.11f, -7", 'pool_size=[2, 3], strides=[2, 2], '
             'padding=[1, 0, 1, 2], ceil_mode=True, layout="NHWC"'),
            ((1, 3, 5, 5), "uint8", "0.2f, 128, 0.2f, 128", "pool_size=[2, 2], padding=[2, 2], "
             "count_include_pad=True"),
            ((1, 2, 6, 6), "int16", "0.001f, 0, 0.003f, 10", "pool_size=[3, 2], dilation=[2, 1], "
             "strides=[1, 2]"),
            ((1, 1, 10, 8), "int8", "0.5f, 100, 0.5f, 100", "pool_size=[10, 8]")]):
        lo, hi = quant_range(dt)
        out.append(case(f"qnn.avg_pool2d:{dt}-{k}", [("x", shape, dt)],
                        f"qnn.avg_pool2d(%x, {params}, {attrs})", lo=lo, hi=hi))
    out.append(case("qnn.avg_pool2d:runtime-params",
                    [("x", (1, 5, 5, 2), "int8"), ("s", (), "float32"), ("z", (), "int32")],
                    'qnn.avg_pool2d(%x, %s, %z, 0.1f, %z, pool_size=[2, 2], layout="NHWC")',
                    [data(rng_for("qap-rt"), (1, 5, 5, 2), "int8", lo=-128, hi=127),
                     np.array(0.1, np.float32), np.array(-5, np.int32)]))
    return out


def activation_cases():
    out = []
    for k, (dt, params, alpha) in enumerate([("int8", "0.5f, 0, 0.25f, 0", 0.25),
                                             ("int8", "0.1f, 3, 0.07f, -5", 0.1),
                                             ("uint8", "0.02f, 128, 0.05f, 120", 0.01),
                                             ("int16", "0.001f, 0, 0.002f, 0", 0.3)]):
        lo, hi = quant_range(dt)
        out.append(case(f"qnn.leaky_relu:{dt}-{k}", [("x", (3, 17), dt)],
                        f"qnn.leaky_relu(%x, {params}, alpha={alpha!r}f)", lo=lo, hi=hi))
    out.append(case("qnn.leaky_relu:runtime-params",
                    [("x", (20,), "int8"), ("s", (), "float32"), ("z", (), "int32")],
                    "qnn.leaky_relu(%x, %s, %z, 0.05f, %z, alpha=0.2f)",
                    [data(rng_for("qlr-rt"), (20,), "int8", lo=-128, hi=127),
                     np.array(0.1, np.float32), np.array(-3, np.int32)]))
    return out


def quant_range(dtype: str) -> tuple[int, int]:
    info = np.iinfo(dtype)
    return int(info.min), int(info.max)


def all_cases():
    return (unary_cases() + requantize_cases() + binary_cases() + linear_cases()
            + product_cases() + pool_cases() + activation_cases())


def test_quantize_dequantize():
    check_cases(unary_cases(), "qnn_unary")


def test_requantize():
    check_cases(requantize_cases(), "qnn_requant")


def test_add_mul_concatenate_fixed_point_multiply():
    check_cases(binary_cases(), "qnn_binary")


def test_dense_conv2d():
    check_cases(linear_cases(), "qnn_linear")


def test_batch_matmul_conv2d_transpose_16x8():
    check_cases(product_cases(), "qnn_products")


def test_avg_pool2d():
    check_cases(pool_cases(), "qnn_pool")


def test_leaky_relu():
    check_cases(activation_cases(), "qnn_act")
