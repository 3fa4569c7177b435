"""``aot_round_even_f32`` (runtime_c/aot_kernel_helpers.h), the float32
``round`` of the generated C and of QuantizeLinear's ``round(x / scale)``:
the magic-number addition instead of ``nearbyintf`` (a library call on a
Cortex-M4F).  Against NumPy's ``rint`` bit for bit, and a QuantizeLinear
chain (divide, round, add the zero point, clip, cast) against the
interpreter's values, and ``aot_quantize_f32`` (the whole chain after
the division, which the cast lowering uses for it) against both, on edge
cases: every tie from -4.5 to 4.5, ties
around 2^22 and 2^23 (where the floats stop having halves and become
integers), the neighbours of 0.5 and 1.5, signed zeros, subnormals, the
largest float, the infinities, NaN, and values that saturate int8 and
uint8 on both sides; plus random floats of every magnitude.  Built with
cc and clang for the host (FLT_EVAL_METHOD 0 on x86-64 and aarch64) and
with arm-none-eabi-gcc for a Cortex-M4F, run under QEMU."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest
from helper_programs import float_rows_program, needs_arm, run_cortex_m4f, run_host

from aot.emit.kernel import ir as K
from aot.emit.kernel.evaluate import evaluate
from aot.ir.dtype import DType

F32 = np.float32


def _values() -> np.ndarray:
    ties = np.arange(-9, 10, dtype=np.float64) / 2
    big = [2.0 ** 22, 2.0 ** 23, 2.0 ** 24]
    around = [b + d for b in big for d in (-1.5, -1, -0.5, 0, 0.5, 1, 1.5, 2, 3)]
    fl = np.finfo(F32)
    special = [0.0, -0.0, 0.49999997, 0.5, 0.50000006, 1.4999999, 1.5, 1.5000001,
               2.4999998, 2.5, 2.5000002, float(fl.tiny), float(fl.smallest_subnormal),
               float(fl.max), np.inf, 127.5, 128.5, -128.5, -129.5, 126.5, 255.5, 256.5,
               -0.5000001, 1e10, 3e38]
    v = np.array(list(ties) + around + special, dtype=F32)
    v = np.concatenate([v, -v, np.array([np.nan], dtype=F32)])
    rng = np.random.default_rng(7)
    rnd = (rng.standard_normal(200) * np.exp2(rng.integers(-30, 30, 200))).astype(F32)
    halves = (rng.integers(-2 ** 24, 2 ** 24, 100) / 2).astype(F32)
    return np.concatenate([v, rnd, halves])


def _bits(a: np.ndarray) -> list[str]:
    return [f"{int(b):08x}" for b in np.asarray(a, dtype=F32).view(np.uint32)]


SCALE = F32(0.75)
QUANT = [(-3, -128, 127, "int8_t"), (128, 0, 255, "uint8_t")]


def _quantize_call(zp: int, lo: int, hi: int) -> K.Expr:
    i32 = DType.INT32
    return K.call("aot_quantize_f32", [K.Var("v", DType.FLOAT32), K.Const(lo, i32),
                                        K.Const(hi, i32), K.Const(zp, i32)], i32)


def _expected(values: np.ndarray) -> list[str]:
    """Per value: the helper's bits as the interpreter evaluates the kernel
    call (np.rint), then the quantized values."""
    call = K.call("aot_round_even_f32", [K.Var("v", DType.FLOAT32)], DType.FLOAT32)
    rounded = np.array([evaluate(call, {"v": v}, {}) for v in values], dtype=F32)
    with np.errstate(all="ignore"):
        assert np.array_equal(rounded.view(np.uint32), np.rint(values).view(np.uint32))
    lines = []
    for v, r in zip(values, rounded):
        fields = _bits(np.array([r]))
        with np.errstate(all="ignore"):
            q = np.rint(F32(v) / SCALE)
            for zp, lo, hi, _ in QUANT:
                t = np.clip(q + F32(zp), lo, hi)
                fields.append(str(0 if np.isnan(t) else int(t)))
            chain = fields[1:]
            for zp, lo, hi, _ in QUANT:         # aot_quantize_f32, as evaluated
                fields.append(str(int(evaluate(_quantize_call(zp, lo, hi),
                                               {"v": F32(v) / SCALE}, {}))))
            assert fields[-len(QUANT):] == chain, (v, fields)
        lines.append(" ".join(fields))
    return lines


def _program(values: np.ndarray) -> str:
    quant = "".join(
        f"""        q = aot_round_even_f32(x / {float(SCALE)!r}f) + {zp}.0f;
        q = q <= {lo}.0f ? {lo}.0f : q;
        q = q >= {hi}.0f ? {hi}.0f : q;
        printf(" %d", (int)(q == q ? ({t})q : 0));
""" for zp, lo, hi, t in QUANT) + "".join(
        f"""        printf(" %d", (int)aot_quantize_f32(x / {float(SCALE)!r}f, {lo}, {hi}, {zp}));
""" for zp, lo, hi, t in QUANT)
    body = f"""        r = aot_round_even_f32(x);
        memcpy(&bits, &r, sizeof bits);
        printf("%08lx", (unsigned long)bits);
{quant}"""
    return float_rows_program(values, ", r, q", body,
                              '    printf("FLT_EVAL_METHOD %d\\n", (int)FLT_EVAL_METHOD);\n')


def _check(out: str, values: np.ndarray) -> None:
    lines = out.strip().splitlines()
    assert lines[-1] == "FLT_EVAL_METHOD 0", lines[-1]
    got, want = lines[:-1], _expected(values)
    bad = [(float(v), g, w) for v, g, w in zip(values, got, want) if g != w]
    assert len(got) == len(want) and not bad, bad[:10]


@pytest.mark.parametrize("cc", ["cc", "clang"])
def test_round_even_host(tmp_path, cc):
    values = _values()
    _check(run_host(tmp_path, _program(values), cc), values)


@needs_arm
def test_round_even_cortex_m4f_under_qemu(tmp_path):
    values = _values()
    out, elf = run_cortex_m4f(tmp_path, _program(values))
    # the helper is inlined: no call to nearbyintf (a library call there)
    syms = subprocess.run(["arm-none-eabi-nm", str(elf)], check=True, capture_output=True,
                          text=True).stdout
    assert "nearbyintf" not in syms
    _check(out, values)


@pytest.mark.parametrize("dtype,zp,bounds", [
    (DType.INT8, -3, (-128.0, 127.0)), (DType.UINT8, 128, (0.0, 255.0)),
    (DType.INT8, 0, None), (DType.INT8, 5, (-10.0, 300.0)), (DType.INT16, 7, (-200.0, 90.0))])
def test_quantize_cast_rewrite_equals_the_chain(dtype, zp, bounds):
    """The cast lowering's rewrite of cast(clip(round(v) + z)) into
    aot_quantize_f32 computes the chain's integers on every edge value."""
    from aot.emit.lower.ops.quantize_cast import quantize_cast
    v = K.Var("v", DType.FLOAT32)
    chain: K.Expr = K.call("aot_round_even_f32", [v], DType.FLOAT32)
    if zp:
        chain = K.add(chain, K.Const(float(zp), DType.FLOAT32))
    if bounds is not None:
        chain = K.minimum(K.maximum(chain, K.Const(bounds[0], DType.FLOAT32)),
                          K.Const(bounds[1], DType.FLOAT32))
    fast = quantize_cast(dtype, chain)
    assert isinstance(fast, K.Cast) and isinstance(fast.a, K.Call) \
        and fast.a.name == "aot_quantize_f32"
    slow = K.cast(dtype, chain)
    for x in _values():
        assert evaluate(fast, {"v": x}, {}) == evaluate(slow, {"v": x}, {}), x
    # not the chain: left to the general cast
    assert quantize_cast(dtype, K.add(v, K.Const(1.0, DType.FLOAT32))) is None
    assert quantize_cast(DType.INT32, chain) is None
