"""The int8 convolution kernel with the Arm DSP extension
(aot/emit/lower/ops/qnn_conv_dsp.py) and the packed-integer runtime
helpers (aot_load4_i8, aot_sxtb16, aot_sxtab16, aot_smlad in
runtime_c/aot_kernel_helpers.h) on both of their paths: the portable C
that a host compiler takes and the ACLE intrinsics that arm-none-eabi-gcc
takes for a Cortex-M4 (``__ARM_FEATURE_DSP``), run under QEMU.

* the helpers (and the saturations aot_sat_i32_*), on edge and random
  words, against the kernel interpreter's
  reference semantics (aot.emit.kernel.evaluate), built for the host and
  for the Cortex-M4;
* a two-layer int8 network of pointwise convolutions (even and odd input
  channel counts: 2x4 tiles reading 4 positions a word, 4x2 tiles of
  copied pairs; odd output counts, batch 2, positions not a multiple of
  the tile, per-channel
  requantization with both single roundings) through examples/embedded,
  on the host and under QEMU, bit-exact against the interpreter, with a
  corrupted expected value that must FAIL;
* the same for a nine-layer network of regular convolutions (CONV_MODEL:
  10x4 and 3x3 windows, strides 1 and 2, symmetric, asymmetric and no
  padding, dilation, odd and even channel counts, int8 and uint8 data,
  output counts with and without a narrow last tile, odd position counts).

The Cortex-M tests need arm-none-eabi-gcc and qemu-system-arm and are
skipped, saying so, without them."""

from __future__ import annotations

import re
import shutil
import sys
import subprocess
from pathlib import Path

import numpy as np
import pytest
from helper_programs import needs_arm, run_cortex_m4f, run_host

import aot
from aot.emit.kernel import ir as K
from aot.emit.kernel.evaluate import evaluate
from aot.ir.dtype import DType

REPO = Path(__file__).resolve().parents[2]
EMBEDDED = REPO / "examples" / "embedded"

needs_cc = pytest.mark.skipif(shutil.which("make") is None or shutil.which("cc") is None,
                              reason="needs make and a host C compiler")

U32 = DType.UINT32
I32 = DType.INT32


def _weights(o: int, c: int, kh: int = 1, kw: int = 1) -> str:
    """A constant int8 weight (O, C, KH, KW) covering -128..127, folded at
    compile time into a table."""
    n = o * c * kh * kw
    return (f'reshape(cast(subtract(mod(multiply(arange(0f, {n}f, 1f, start=0f, stop={n}f, '
            f'step=1f, dtype="float32"), 37f), 256f), 128f), dtype="int8"), '
            f'newshape=[{o}, {c}, {kh}, {kw}])')


def _vec(n: int, first: float, step: float) -> str:
    return (f'add(multiply(arange(0f, {n}f, 1f, start=0f, stop={n}f, step=1f, '
            f'dtype="float32"), {step!r}f), {first!r}f)')


MODEL = f'''def @main(%x: Tensor[(2, 8, 3, 5), int8]) {{
  %0 = qnn.conv2d(%x, {_weights(5, 8)}, -128, 0, 0.5f, 0.25f);
  %1 = qnn.requantize(%0, {_vec(5, 0.01, 0.003)}, 0, 0.5f, 3, axis=1, out_dtype="int8",
                      rounding="TONEAREST");
  %2 = qnn.conv2d(%1, {_weights(6, 5)}, 3, 0, 0.5f, 0.25f);
  qnn.requantize(%2, {_vec(6, 0.02, 0.001)}, 5, 0.7f, -1, axis=1, out_dtype="int8")
}}
'''


def _rq(v: str, o: int, zp: int, gain: float, dtype: str = "int8", bias: str = "") -> str:
    """Per-channel requantization of ``v``, after adding ``bias`` ("vec": a
    per-channel int32 constant, "splat": one for every channel; folded into
    the kernel's accumulator start)."""
    if bias == "vec":
        v = (f'add({v}, reshape(cast(subtract(multiply(arange(0f, {o}f, 1f, start=0f, '
             f'stop={o}f, step=1f, dtype="float32"), 613f), 2000f), dtype="int32"), '
             f'newshape=[1, {o}, 1, 1]))')
    elif bias == "splat":
        v = f'add({v}, -777)'
    return (f'qnn.requantize({v}, {_vec(o, 0.0008 * gain, 0.0002 * gain)}, 0, 1f, {zp}, '
            f'axis=1, out_dtype="{dtype}")')


#: regular convolutions, each a different path of the kernel: a 1-channel
#: 10x4 stride-2 window with DS-CNN's uneven padding (flattened pairs, 3
#: outputs: only a narrow tile), a 3-channel 3x3 one (27 elements, odd
#: position count, 5 outputs), an odd-channel stride-2 window with
#: asymmetric padding, a uint8 dilated 3x3 of 9 channels (81 elements: tap
#: pairs with a zero-weight channel), an odd pointwise, an even pointwise and
#: even-channel padded 3x3s (tap pairs, bounds tests; 22 channels: 99 pairs,
#: the product loop 8 pairs a turn and 3 more)
CONV_MODEL = f'''def @main(%x: Tensor[(2, 1, 21, 18), int8]) {{
  %0 = qnn.conv2d(%x, {_weights(3, 1, 10, 4)}, -3, 0, 0.5f, 0.25f, strides=[2, 2],
                  padding=[4, 1, 5, 1], kernel_size=[10, 4]);
  %1 = {_rq("%0", 3, -128, 2, bias="vec")};
  %2 = qnn.conv2d(%1, {_weights(5, 3, 3, 3)}, -128, 0, 0.5f, 0.25f, padding=[1, 1, 1, 1],
                  kernel_size=[3, 3]);
  %3 = {_rq("%2", 5, 7, 3)};
  %4 = qnn.conv2d(%3, {_weights(9, 5, 3, 3)}, 7, 0, 0.5f, 0.25f, strides=[2, 2],
                  padding=[0, 1, 2, 1], kernel_size=[3, 3]);
  %5 = {_rq("%4", 9, 128, 4, "uint8", bias="splat")};
  %6 = qnn.conv2d(%5, {_weights(7, 9, 3, 3)}, 128, 0, 0.5f, 0.25f, dilation=[2, 2],
                  padding=[2, 2, 2, 2], kernel_size=[3, 3]);
  %7 = {_rq("%6", 7, -5, 3)};
  %8 = qnn.conv2d(%7, {_weights(8, 7)}, -5, 0, 0.5f, 0.25f);
  %9 = {_rq("%8", 8, 0, 3)};
  %10 = qnn.conv2d(%9, {_weights(4, 8)}, 0, 0, 0.5f, 0.25f);
  %11 = {_rq("%10", 4, 2, 3, bias="vec")};
  %12 = qnn.conv2d(%11, {_weights(6, 4, 3, 3)}, 2, 0, 0.5f, 0.25f, padding=[1, 1, 1, 1],
                   kernel_size=[3, 3]);
  %13 = {_rq("%12", 6, 0, 3)};
  %14 = qnn.conv2d(%13, {_weights(22, 6, 3, 3)}, 0, 0, 0.5f, 0.25f, padding=[1, 1, 1, 1],
                   kernel_size=[3, 3]);
  %15 = {_rq("%14", 22, -1, 2, bias="vec")};
  %16 = qnn.conv2d(%15, {_weights(5, 22, 3, 3)}, -1, 0, 0.5f, 0.25f, padding=[1, 1, 1, 1],
                   kernel_size=[3, 3]);
  {_rq("%16", 5, 0, 1)}
}}
'''


def test_dsp_kernel_is_selected(tmp_path):
    art = aot.compile(aot.parse(MODEL), tmp_path / "art", name="pw", build=False)
    assert "aot_smlad" in (art.root / "src" / "pw.c").read_text()
    # every convolution of the regular model takes the kernel (its patch
    # buffer is a scratch argument of each)
    art = aot.compile(aot.parse(CONV_MODEL), tmp_path / "conv", name="cv", build=False)
    source = (art.root / "src" / "cv.c").read_text()
    signatures = re.findall(r"static void cv_k\d+\([^)]*patch[^)]*\)", source)
    assert source.count("aot_smlad(") >= 9 and len(signatures) == 9, source
    # the biases are folded into the accumulators' start tables: no kernel
    # takes a constant of the program (the weights are repacked tables too)
    # and the splat bias is no literal of the epilogue
    assert not any(re.search(r"\*restrict c\d", sig) for sig in signatures), signatures
    code = re.sub(r"/\*.*?\*/", "", source, flags=re.S)
    assert "add(%0, -777)" in source and not re.search(r"[-+] ?777\b", code)
    # the host's fast configuration keeps plain multiply-accumulates
    art = aot.compile(aot.parse(MODEL), tmp_path / "simd", name="pw", build=False,
                      tuning="simd")
    assert "aot_smlad" not in (art.root / "src" / "pw.c").read_text()


# ------------------------------------------------------------- the helpers

WORDS = [0, 1, 0x7F, 0x80, 0xFF, 0x7FFF, 0x8000, 0xFFFF, 0x00800080, 0x7F7F7F7F, 0x80808080,
         0xFFFFFFFF, 0x7FFFFFFF, 0x80000000, 0x01FF80FE, 0x12345678, 0xFEDCBA98]
ACCS = [0, 1, -1, 2 ** 31 - 1, -2 ** 31, 123456789, -987654321, 127, 128, -128, -129, 255, 256,
        32767, 32768, -32768, -32769, 65535, 65536]


SATURATIONS = [("i8", DType.INT8), ("u8", DType.UINT8), ("i16", DType.INT16),
               ("u16", DType.UINT16)]


def _cases() -> list[tuple[int, int, int]]:
    rng = np.random.default_rng(16)
    out = [(a, b, ACCS[(i + j) % len(ACCS)]) for i, a in enumerate(WORDS)
           for j, b in enumerate(WORDS)]
    rnd = rng.integers(0, 2 ** 32, size=(200, 2), dtype=np.uint64)
    accs = rng.integers(-2 ** 31, 2 ** 31, size=200, dtype=np.int64)
    out += [(int(a), int(b), int(c)) for (a, b), c in zip(rnd, accs)]
    return out


def _expected(cases: list[tuple[int, int, int]]) -> list[str]:
    lines = []
    for a, b, acc in cases:
        ua, ub = K.Const(a, U32), K.Const(b, U32)
        vals = [evaluate(K.call("aot_sxtab16", [ua, ub], U32), {}, {}),
                evaluate(K.call("aot_sxtb16", [ub], U32), {}, {}),
                evaluate(K.call("aot_smlad", [ua, ub, K.Const(acc, I32)], I32), {}, {})]
        buf = K.Buffer("p", DType.INT8, (4,), K.BufferScope.CONST)
        data = np.frombuffer(np.uint32(a).tobytes(), dtype=np.int8)
        vals.append(evaluate(K.load(buf, 0, 4), {}, {"p": data}))
        for suffix, t in SATURATIONS:
            vals.append(evaluate(K.call(f"aot_sat_i32_{suffix}", [K.Const(acc, I32)], t), {}, {}))
        lines.append(" ".join(f"{int(v) & 0xFFFFFFFF:08x}" for v in vals))
    return lines


def _program(cases: list[tuple[int, int, int]]) -> str:
    rows = ",\n".join(f"    {{{a}u, {b}u, {acc}}}" if acc != -2 ** 31 else
                      f"    {{{a}u, {b}u, -2147483647 - 1}}" for a, b, acc in cases)
    return f"""#include <stdio.h>
#include <stdint.h>
#include "aot_kernel_helpers.h"

struct row {{ uint32_t a, b; int32_t acc; }};
static const struct row rows[] = {{
{rows}
}};

int main(void)
{{
    size_t i;
#if defined(AOT_DSP)
    printf("dsp\\n");
#else
    printf("portable\\n");
#endif
    for (i = 0; i < sizeof rows / sizeof rows[0]; ++i) {{
        int8_t bytes[4];
        uint32_t a = rows[i].a;
        int k;
        for (k = 0; k < 4; ++k) {{
            bytes[k] = (int8_t)(int32_t)((((a >> (8 * k)) & 0xFFu) ^ 0x80u) - 0x80u);
        }}
        printf("%08lx %08lx %08lx %08lx %08lx %08lx %08lx %08lx\\n",
               (unsigned long)aot_sxtab16(rows[i].a, rows[i].b),
               (unsigned long)aot_sxtb16(rows[i].b),
               (unsigned long)(uint32_t)aot_smlad(rows[i].a, rows[i].b, rows[i].acc),
               (unsigned long)aot_load4_i8(bytes, 0),
               (unsigned long)(uint32_t)(int32_t)aot_sat_i32_i8(rows[i].acc),
               (unsigned long)aot_sat_i32_u8(rows[i].acc),
               (unsigned long)(uint32_t)(int32_t)aot_sat_i32_i16(rows[i].acc),
               (unsigned long)aot_sat_i32_u16(rows[i].acc));
    }}
    return 0;
}}
"""


def _check_output(out: str, path: str, cases: list[tuple[int, int, int]]) -> None:
    lines = out.split()
    assert lines[0] == path
    got = [" ".join(lines[1 + 8 * i: 9 + 8 * i]) for i in range(len(cases))]
    assert got == _expected(cases)


@needs_cc
@pytest.mark.parametrize("cc", ["cc", "clang"])
def test_helpers_portable_path(tmp_path, cc):
    cases = _cases()
    _check_output(run_host(tmp_path, _program(cases), cc), "portable", cases)


@needs_arm
def test_helpers_dsp_path_under_qemu(tmp_path):
    cases = _cases()
    _check_output(run_cortex_m4f(tmp_path, _program(cases))[0], "dsp", cases)


# ------------------------------------------------- the network, both paths

MODELS = {"pw_int8": MODEL, "conv_int8": CONV_MODEL}


@pytest.fixture(scope="module", params=sorted(MODELS))
def model_file(request, tmp_path_factory) -> tuple[str, Path]:
    d = tmp_path_factory.mktemp(request.param)
    (d / f"{request.param}.relay").write_text(MODELS[request.param])
    return request.param, d


def _make(model: tuple[str, Path], goal: str, corrupt: int = 0) -> subprocess.CompletedProcess:
    name, model_dir = model
    return subprocess.run(["make", "-s", "-C", str(EMBEDDED), goal, f"MODEL={name}",
                           f"MODEL_FILE={model_dir / (name + '.relay')}", "REFERENCE=interp",
                           f"BUILD={model_dir / 'build'}", f"CORRUPT={corrupt}",
                           f"PYTHON={sys.executable}"],
                          capture_output=True, text=True, timeout=600)


def _assert(name: str, result: subprocess.CompletedProcess, ok: bool) -> None:
    text = result.stdout + result.stderr
    if ok:
        assert result.returncode == 0 and f"PASS {name}" in text, text
        assert "mismatches 0" in text, text
    else:
        assert result.returncode != 0 and f"FAIL {name}" in text, text


@needs_cc
def test_network_portable_path(model_file):
    _assert(model_file[0], _make(model_file, "host"), True)
    _assert(model_file[0], _make(model_file, "host", corrupt=1), False)


@needs_arm
def test_network_dsp_path_under_qemu(model_file):
    _assert(model_file[0], _make(model_file, "qemu"), True)
    _assert(model_file[0], _make(model_file, "qemu", corrupt=1), False)


def test_four_lane_loads_only_of_bytes():
    ok = K.Buffer("p", DType.UINT8, (8,), K.BufferScope.CONST)
    assert K.load(ok, 4, 4).dtype is U32
    with pytest.raises(K.KernelIRError):
        K.load(K.Buffer("q", DType.INT32, (8,), K.BufferScope.CONST), 0, 4)
    with pytest.raises(K.KernelIRError):       # reads p[6..9] of 8
        evaluate(K.load(ok, 6, 4), {}, {"p": np.arange(8, dtype=np.uint8)})
    assert int(evaluate(K.load(ok, 4, 4), {}, {"p": np.arange(8, dtype=np.uint8)})) == 0x07060504
