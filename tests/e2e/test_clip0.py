"""``aot_clip0_f32`` (runtime_c/aot_kernel_helpers.h), clip(x, 0, hi) for a
positive finite hi -- ReLU6 -- in its two forms: the portable select chain
(built with cc and clang for the host) and the M-profile form that decides
on x's bits (built with arm-none-eabi-gcc for a Cortex-M4F, run under
QEMU).  Both must give the reference's bits for every float32 class: the
neighbours of 0, -0 and hi, subnormals, the largest floats, the
infinities, quiet and signalling NaNs of both signs (which pass unchanged),
and random floats of every magnitude; and the kernel-IR evaluator's value
of the call must be the same.  Also: which clips the lowering gives the
helper, and that QuantizeLinear's rewrite still sees through it."""

from __future__ import annotations

import numpy as np
import pytest
from helper_programs import float_rows_program, needs_arm, run_cortex_m4f, run_host

from aot.emit.kernel import ir as K
from aot.emit.kernel.evaluate import evaluate
from aot.ir.dtype import DType

F32 = np.float32
U32 = np.uint32
#: the upper bounds: ReLU6's, 1, the smallest subnormal, the largest float
HIS = [6.0, 1.0, float(np.finfo(F32).smallest_subnormal), float(np.finfo(F32).max)]


def _values() -> np.ndarray:
    fl = np.finfo(F32)
    special = [0.0, float(fl.smallest_subnormal), float(fl.tiny), 1e-30, 0.5, 1.0, 5.999999,
               6.0, 6.0000005, 7.0, 1e30, float(fl.max), np.inf]
    with np.errstate(over="ignore"):
        near = [np.nextafter(F32(h), F32(d)) for h in HIS for d in (0, np.inf)] + HIS
    v = np.array(special + near, dtype=F32)
    v = np.concatenate([v, -v])
    nans = np.array([0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF800001, 0x7FFFFFFF, 0xFFFFFFFF,
                     0x7FC12345], dtype=U32).view(F32)
    rng = np.random.default_rng(11)
    rnd = (rng.standard_normal(300) * np.exp2(rng.integers(-40, 40, 300))).astype(F32)
    return np.concatenate([v, nans, rnd])


def _reference(x: F32, hi: F32) -> F32:
    """The interpreter's clip (aot/ir/ops/transform_init.py)."""
    with np.errstate(invalid="ignore"):
        return np.minimum(np.maximum(np.array([x], dtype=F32), F32(0.0)), hi)[0]


def _expected(values: np.ndarray) -> list[str]:
    lines = []
    for x in values:
        fields = []
        for hi in HIS:
            call = K.call("aot_clip0_f32", [K.Var("v", DType.FLOAT32),
                                            K.Const(float(F32(hi)), DType.FLOAT32)],
                          DType.FLOAT32)
            got = np.array([evaluate(call, {"v": x}, {})], dtype=F32)
            ref = _reference(x, F32(hi))
            if np.isnan(x):     # a NaN passes with its bits
                assert got.view(U32)[0] == np.array([x], dtype=F32).view(U32)[0]
                assert np.isnan(ref)
            else:
                assert got.view(U32)[0] == np.array([ref], dtype=F32).view(U32)[0], (x, hi)
            fields.append(f"{int(got.view(U32)[0]):08x}")
        lines.append(" ".join(fields))
    return lines


def _program(values: np.ndarray) -> str:
    calls = "".join(f"""        r = aot_clip0_f32(x, {hi!r}f);
        memcpy(&bits, &r, sizeof bits);
        printf("%s%08lx", {'""' if k == 0 else '" "'}, (unsigned long)bits);
""" for k, hi in enumerate(float(F32(h)) for h in HIS))
    trailer = """#if defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M'
    printf("form bits\\n");
#else
    printf("form select\\n");
#endif
"""
    return float_rows_program(values, ", r", calls, trailer)


def _check(out: str, values: np.ndarray, form: str) -> None:
    lines = out.strip().splitlines()
    assert lines[-1] == f"form {form}", lines[-1]
    got, want = lines[:-1], _expected(values)
    bad = [(float(v), g, w) for v, g, w in zip(values, got, want) if g != w]
    assert len(got) == len(want) and not bad, bad[:10]


@pytest.mark.parametrize("cc", ["cc", "clang"])
def test_clip0_host(tmp_path, cc):
    values = _values()
    _check(run_host(tmp_path, _program(values), cc), values, "select")


@needs_arm
def test_clip0_cortex_m4f_under_qemu(tmp_path):
    values = _values()
    _check(run_cortex_m4f(tmp_path, _program(values))[0], values, "bits")


def _lowered_clip(lo: float, hi: float, dtype: DType = DType.FLOAT32) -> K.Expr:
    """The element expression clip's lowering gives ``v``."""
    from aot.emit.lower.ops.transform_init import _clip
    from aot.emit.lower.registry import LowerContext, TensorValue
    from aot.ir.ops.transform_init import ClipAttrs
    from aot.ir.types import TensorType
    v = K.Var("v", dtype)
    arg = TensorValue((1,), dtype, lambda idx: v)
    out = _clip(LowerContext(), [arg], ClipAttrs(a_min=lo, a_max=hi), TensorType((1,), dtype))
    return out.read((K.Const(0, DType.INT32),))


@pytest.mark.parametrize("lo,hi,dtype,helper", [
    (0.0, 6.0, DType.FLOAT32, True),
    (0.0, 1e30, DType.FLOAT32, True),
    (-0.0, 6.0, DType.FLOAT32, False),      # max(x, -0) keeps -0: not the helper's +0
    (0.0, float("inf"), DType.FLOAT32, False),  # ReLU: one comparison already
    (-1.0, 6.0, DType.FLOAT32, False),
    (0.0, 6.0, DType.FLOAT16, False),
    (0.0, 6.0, DType.FLOAT64, False),
])
def test_which_clips_take_the_helper(lo, hi, dtype, helper):
    e = _lowered_clip(lo, hi, dtype)
    assert (isinstance(e, K.Call) and e.name == "aot_clip0_f32") is helper, e


def test_quantize_cast_sees_through_the_helper():
    """uint8 QuantizeLinear's clip(round(v) + z, 0, 255) is clip0: the cast
    still becomes one aot_quantize_f32, equal to the chain."""
    from aot.emit.lower.ops.quantize_cast import quantize_cast
    v = K.Var("v", DType.FLOAT32)
    rounded = K.add(K.call("aot_round_even_f32", [v], DType.FLOAT32), K.Const(3.0, DType.FLOAT32))
    chain = K.call("aot_clip0_f32", [rounded, K.Const(255.0, DType.FLOAT32)], DType.FLOAT32)
    fast = quantize_cast(DType.UINT8, chain)
    assert isinstance(fast, K.Cast) and isinstance(fast.a, K.Call) \
        and fast.a.name == "aot_quantize_f32"
    slow = K.cast(DType.UINT8, chain)
    for x in _values():
        assert evaluate(fast, {"v": x}, {}) == evaluate(slow, {"v": x}, {}), x
    # a bound that is not an integer: left to the general cast
    frac = K.call("aot_clip0_f32", [rounded, K.Const(2.5, DType.FLOAT32)], DType.FLOAT32)
    assert quantize_cast(DType.UINT8, frac) is None
