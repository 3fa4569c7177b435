"""Hand-built ModelPlans for the artifact tests, and a reference runner.

Each builder makes a small plan from kernel-IR kernels (names prefixed
with the model name, as the planner does).  :func:`run_plan` executes a
plan with the kernel-IR reference evaluator on NumPy arrays (arena
arguments are views into one byte array, exactly as in C), so a compiled
model can be compared with the plan it came from as well as with a
plain NumPy formula.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from aot.emit.kernel import ir as K
from aot.emit.kernel.evaluate import run_kernel
from aot.emit.plan.model import (ArgKind, BufferRef, ConstantData, KernelCall, KernelInfo,
                                 ModelPlan, TensorSpec)
from aot.ir.dtype import DType

D = DType
S = K.BufferScope


def buf(name: str, dtype: DType, size: int, scope: K.BufferScope, restrict: bool = True
        ) -> K.Buffer:
    return K.Buffer(name, dtype, (size,), scope, restrict)


def map_kernel(name: str, ins: Sequence[tuple[DType, K.BufferScope]], out_dtype: DType,
               n: int, fn: Callable[..., K.Expr], comment: str = "") -> K.Kernel:
    """``out[i] = fn(in0[i], in1[i], ...)`` over ``n`` elements; an input of
    size 1 (a scalar) is read at index 0."""
    i = K.index_var("i")
    params = [buf(f"p{j}", dt, n, scope)
              for j, (dt, scope) in enumerate(ins)]
    out = buf("out", out_dtype, n, S.OUTPUT)
    loads = [K.load(p, i) for p in params]
    body = K.for_range(i, n, K.store(out, i, fn(*loads)))
    return K.Kernel(name, (*params, out), body, comment)


def scalar_map_kernel(name: str, vec: DType, scalar: DType, out_dtype: DType, n: int,
                      fn: Callable[[K.Expr, K.Expr], K.Expr]) -> K.Kernel:
    """``out[i] = fn(v[i], s[0])``."""
    i = K.index_var("i")
    v = buf("v", vec, n, S.INPUT)
    s = K.Buffer("s", scalar, (), S.INPUT)
    out = buf("out", out_dtype, n, S.OUTPUT)
    body = K.for_range(i, n, K.store(out, i, fn(K.load(v, i), K.load(s, 0))))
    return K.Kernel(name, (v, s, out), body)


def info(kernel: K.Kernel, source: str, ops: Sequence[str], anchor: str | None = None
         ) -> KernelInfo:
    return KernelInfo(kernel.name, source, tuple(ops), anchor)


def inp(i: int, dtype: DType, size: int) -> BufferRef:
    return BufferRef(ArgKind.INPUT, dtype, size, index=i)


def outp(i: int, dtype: DType, size: int) -> BufferRef:
    return BufferRef(ArgKind.OUTPUT, dtype, size, index=i)


def arena(offset: int, dtype: DType, size: int) -> BufferRef:
    return BufferRef(ArgKind.ARENA, dtype, size, offset=offset)


def const_ref(symbol: str, dtype: DType, size: int) -> BufferRef:
    return BufferRef(ArgKind.CONST, dtype, size, symbol=symbol)


# ----------------------------------------------------------------- plans

SCALE = np.array([0.5, -1.0, 2.0, 0.25, -0.0, 3.0], dtype=np.float32)


def addscale_plan(name: str = "addscale", arena_mode: str = "caller",
                  scale: np.ndarray = SCALE) -> ModelPlan:
    """``out = max((x + y) * scale, x + y)`` on (2, 3) float32; ``x + y``
    goes through the arena, ``scale`` is a constant table, ``max`` a
    runtime helper (aot_max_f32; against a constant it would be a select)."""
    n = 6
    k0 = map_kernel(f"{name}_k0", [(D.FLOAT32, S.INPUT), (D.FLOAT32, S.INPUT)], D.FLOAT32, n,
                    K.add)
    k1 = map_kernel(f"{name}_k1", [(D.FLOAT32, S.ARENA), (D.FLOAT32, S.CONST)], D.FLOAT32, n,
                    lambda t, c: K.maximum(K.mul(t, c), t))
    return ModelPlan(
        name=name,
        inputs=(TensorSpec("x", (2, 3), D.FLOAT32, "x"), TensorSpec("y", (2, 3), D.FLOAT32, "y")),
        outputs=(TensorSpec("out", (2, 3), D.FLOAT32),),
        output_tree=0,
        kernels=(k0, k1),
        kernel_info=(info(k0, "%0 = add(%x, %y) : Tensor[(2, 3), float32]", ["add"]),
                     info(k1, "%1 = multiply(%0, meta[relay.Constant][0])\n"
                              "%2 = maximum(%1, %0) /* max */", ["multiply", "maximum"])),
        calls=(KernelCall(k0.name, (inp(0, D.FLOAT32, n), inp(1, D.FLOAT32, n),
                                    arena(16, D.FLOAT32, n))),
               KernelCall(k1.name, (arena(16, D.FLOAT32, n), const_ref("c0", D.FLOAT32, n),
                                    outp(0, D.FLOAT32, n)))),
        constants=(ConstantData("c0", D.FLOAT32, np.asarray(scale, dtype=np.float32)),),
        arena_bytes=48, arena_lower_bound_bytes=24, arena=arena_mode,
        extra=(("memory_planner", "hand"), ("note", ("a", 1))))


def addscale_expected(x: np.ndarray, y: np.ndarray, scale: np.ndarray = SCALE) -> np.ndarray:
    t = x + y
    return np.maximum(t * scale.reshape(2, 3), t)


def tuple_plan(name: str = "tuples") -> ModelPlan:
    """Inputs ``a: int32[4]`` and ``s: int32`` (a scalar); the result
    ``(a // s, (a * 2 + s, a > s))``; ``a * 2`` goes through the arena."""
    n = 4
    k0 = scalar_map_kernel(f"{name}_k0", D.INT32, D.INT32, D.INT32, n, K.floordiv)
    k1 = map_kernel(f"{name}_k1", [(D.INT32, S.INPUT)], D.INT32, n,
                    lambda a: K.mul(a, K.const(2, D.INT32)))
    k2 = scalar_map_kernel(f"{name}_k2", D.INT32, D.INT32, D.INT32, n, K.add)
    k3 = scalar_map_kernel(f"{name}_k3", D.INT32, D.INT32, D.BOOL, n, K.gt)
    s = BufferRef(ArgKind.INPUT, D.INT32, 1, index=1)
    return ModelPlan(
        name=name,
        inputs=(TensorSpec("a", (4,), D.INT32, "a"), TensorSpec("s", (), D.INT32, "s")),
        outputs=(TensorSpec("out0", (4,), D.INT32), TensorSpec("out1", (4,), D.INT32),
                 TensorSpec("out2", (4,), D.BOOL)),
        output_tree=(0, (1, 2)),
        kernels=(k0, k1, k2, k3),
        kernel_info=(info(k0, "floor_divide(%a, %s)", ["floor_divide"]),
                     info(k1, "multiply(%a, 2)", ["multiply"]),
                     info(k2, "add(%0, %s)", ["add"]),
                     info(k3, "greater(%a, %s)", ["greater"])),
        calls=(KernelCall(k0.name, (inp(0, D.INT32, n), s, outp(0, D.INT32, n))),
               KernelCall(k1.name, (inp(0, D.INT32, n), arena(0, D.INT32, n))),
               KernelCall(k2.name, (arena(0, D.INT32, n), s, outp(1, D.INT32, n))),
               KernelCall(k3.name, (inp(0, D.INT32, n), s, outp(2, D.BOOL, n)))),
        constants=(), arena_bytes=16, arena_lower_bound_bytes=16)


def tuple_expected(a: np.ndarray, s: np.ndarray) -> tuple:
    with np.errstate(all="ignore"):
        floor = np.where(s == 0, 0, a // np.where(s == 0, 1, s)).astype(np.int32)
        return floor, ((a * np.int32(2)) + s).astype(np.int32), a > s


def half_bool_plan(name: str = "halfbool") -> ModelPlan:
    """Inputs ``h: float16[5]``, ``m: bool[5]``; result
    ``(where(m, h * 2, h), (h > 0) & m)``: float16 arithmetic and bool I/O."""
    n = 5
    two = K.const(2.0, D.FLOAT16)
    zero = K.const(0.0, D.FLOAT16)
    k0 = map_kernel(f"{name}_k0", [(D.FLOAT16, S.INPUT), (D.BOOL, S.INPUT)], D.FLOAT16, n,
                    lambda h, m: K.select(m, K.mul(h, two), h))
    k1 = map_kernel(f"{name}_k1", [(D.FLOAT16, S.INPUT), (D.BOOL, S.INPUT)], D.BOOL, n,
                    lambda h, m: K.logical_and(K.gt(h, zero), m))
    return ModelPlan(
        name=name,
        inputs=(TensorSpec("h", (5,), D.FLOAT16, "h"), TensorSpec("m", (5,), D.BOOL, "m")),
        outputs=(TensorSpec("out0", (5,), D.FLOAT16), TensorSpec("out1", (5,), D.BOOL)),
        output_tree=(0, 1),
        kernels=(k0, k1),
        kernel_info=(info(k0, "where(%m, multiply(%h, 2f16), %h)", ["multiply", "where"]),
                     info(k1, "logical_and(greater(%h, 0f16), %m)", ["greater", "logical_and"])),
        calls=(KernelCall(k0.name, (inp(0, D.FLOAT16, n), inp(1, D.BOOL, n),
                                    outp(0, D.FLOAT16, n))),
               KernelCall(k1.name, (inp(0, D.FLOAT16, n), inp(1, D.BOOL, n),
                                    outp(1, D.BOOL, n)))),
        constants=(), arena_bytes=0, arena_lower_bound_bytes=0)


def half_bool_expected(h: np.ndarray, m: np.ndarray) -> tuple:
    return np.where(m, h * np.float16(2), h), (h > 0) & m


def _bits(dtype: str, patterns: Sequence[int]) -> list[float]:
    width = np.dtype(dtype).itemsize
    return list(np.array(patterns, dtype=f"u{width}").view(dtype))


#: dtype -> edge values every constant table must reproduce bit for bit
EDGE_CONSTANTS: dict[DType, np.ndarray] = {
    D.FLOAT32: np.array([0.0, -0.0, 1.0, -1.5, 0.1, 3.4028235e38, -3.4028235e38,
                         np.float32(1.1754944e-38), *_bits("float32", [1, 0x807fffff, 0x3]),
                         np.inf, -np.inf, np.nan, -np.nan, 16777217.0, 1e-7, 123456.789],
                        dtype=np.float32),
    D.FLOAT64: np.array([0.0, -0.0, 0.1, -2.5, 1.7976931348623157e308, 2.2250738585072014e-308,
                         *_bits("float64", [1, 0x800fffffffffffff]), np.inf, -np.inf, np.nan,
                         1 / 3, np.pi], dtype=np.float64),
    D.FLOAT16: np.array([0.0, -0.0, 1.0, -2.0, 65504.0, -65504.0, 6.1e-05,
                         *_bits("float16", [1, 0x83ff, 0x7c01, 0xfe00]), np.inf, -np.inf,
                         0.1], dtype=np.float16),
    D.INT8: np.array([-128, -1, 0, 1, 127], dtype=np.int8),
    D.INT16: np.array([-32768, -1, 0, 32767], dtype=np.int16),
    D.INT32: np.array([-2147483648, -2147483647, -1, 0, 2147483647], dtype=np.int32),
    D.INT64: np.array([-(2 ** 63), -(2 ** 63) + 1, -1, 0, 2 ** 31, 2 ** 63 - 1], dtype=np.int64),
    D.UINT8: np.array([0, 1, 255], dtype=np.uint8),
    D.UINT16: np.array([0, 65535], dtype=np.uint16),
    D.UINT32: np.array([0, 2 ** 31, 2 ** 32 - 1], dtype=np.uint32),
    D.UINT64: np.array([0, 2 ** 63, 2 ** 64 - 1], dtype=np.uint64),
    D.BOOL: np.array([True, False, False, True, True], dtype=np.bool_),
}


def constants_plan(name: str = "consts", values: dict[DType, np.ndarray] | None = None,
                   ) -> ModelPlan:
    """No inputs; one output per dtype, a copy of a constant table."""
    values = EDGE_CONSTANTS if values is None else values
    kernels, infos, calls, constants, outputs = [], [], [], [], []
    for j, (dtype, data) in enumerate(values.items()):
        n = int(data.size)
        k = map_kernel(f"{name}_copy_{dtype.value}", [(dtype, S.CONST)], dtype, n, lambda v: v)
        kernels.append(k)
        infos.append(info(k, f"copy of constant {j}", ["copy"]))
        constants.append(ConstantData(f"c_{dtype.value}", dtype, data.copy()))
        outputs.append(TensorSpec(f"out{j}", (n,), dtype))
        calls.append(KernelCall(k.name, (const_ref(f"c_{dtype.value}", dtype, n),
                                         outp(j, dtype, n))))
    return ModelPlan(name=name, inputs=(), outputs=tuple(outputs),
                     output_tree=tuple(range(len(outputs))), kernels=tuple(kernels),
                     kernel_info=tuple(infos), calls=tuple(calls), constants=tuple(constants),
                     arena_bytes=0, arena_lower_bound_bytes=0)


# ------------------------------------------------------- reference runner

def run_plan(plan: ModelPlan, *inputs: np.ndarray) -> list[np.ndarray]:
    """The plan's outputs (flat, in order) computed by the kernel-IR
    evaluator, with the arena as one byte array as in C."""
    memory = np.zeros(max(plan.arena_bytes, 1), dtype=np.uint8)
    outputs = [np.zeros(t.size, dtype=t.dtype.np) for t in plan.outputs]
    consts = {c.symbol: c.values for c in plan.constants}
    kernels = {k.name: k for k in plan.kernels}
    for call in plan.calls:
        kernel = kernels[call.kernel]
        arrays: dict[str, np.ndarray] = {}
        for ref, param in zip(call.args, kernel.params):
            if ref.kind is ArgKind.INPUT:
                arrays[param.name] = np.ascontiguousarray(inputs[ref.index]).reshape(-1)
            elif ref.kind is ArgKind.OUTPUT:
                arrays[param.name] = outputs[ref.index]
            elif ref.kind is ArgKind.CONST:
                arrays[param.name] = consts[ref.symbol]
            else:
                nbytes = ref.size * ref.dtype.itemsize
                arrays[param.name] = memory[ref.offset:ref.offset + nbytes].view(ref.dtype.np)
        run_kernel(kernel, arrays)
    return outputs
