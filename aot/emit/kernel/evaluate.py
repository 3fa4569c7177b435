"""Reference semantics of kernel IR: an evaluator on NumPy scalars.

:func:`evaluate` computes one expression and :func:`run_kernel` executes a
whole kernel on NumPy arrays, in place.  Together they are the executable
definition of the semantics listed in :mod:`aot.emit.kernel.ir` (the same
as the interpreter's, by reusing ``aot/ir/ops/elemwise.py`` and
``aot/ir/ops/transform_init.py``): the printed C must match them, and
:mod:`aot.emit.kernel.simplify` folds constants through them.

Expressions are folded with the iterative
:func:`~aot.emit.kernel.walk.postorder`, so deep fused chains do not exhaust
Python's stack; statements recurse to the depth of the loop nest.
"""

from __future__ import annotations

from typing import Mapping, MutableMapping

import numpy as np

from ...ir.dtype import DType
from .ir import (MATH_FUNCTIONS, Assign, BinaryOperator, BinOp, Block, BufferScope, Call,
                 Cast, Comment, Const, Decl, Expr, For, IfThenElse, Kernel, KernelIRError,
                 Load, Select, Stmt, Store, UnaryOp, UnaryOperator, Var, check,
                 math_base)
from .walk import buffers_in, children, postorder

__all__ = ["evaluate", "run_kernel"]


def _np_scalar(value: int | float, dtype: DType) -> np.generic:
    return np.array(value, dtype=dtype.np)[()]


def _shift_left(a: np.generic, b: int) -> np.generic:
    dt = a.dtype
    unsigned = np.dtype(f"u{dt.itemsize}")
    shifted = np.left_shift(np.array(a).view(unsigned), unsigned.type(b))
    return np.array(shifted, dtype=unsigned).view(dt)[()]


def _apply_binop(op: BinaryOperator, a: np.generic, b: np.generic, dtype: DType) -> np.generic:
    from ...ir.ops.elemwise import floor_divide, floor_mod, trunc_divide, trunc_mod
    O = BinaryOperator
    is_int = dtype.is_int or dtype is DType.BOOL
    with np.errstate(all="ignore"):
        if op is O.ADD:
            r = np.add(a, b)
        elif op is O.SUB:
            r = np.subtract(a, b)
        elif op is O.MUL:
            r = np.multiply(a, b)
        elif op is O.DIV:
            r = trunc_divide(np.array(a), np.array(b)) if is_int else np.divide(a, b)
        elif op is O.MOD:
            r = trunc_mod(np.array(a), np.array(b)) if is_int else np.fmod(a, b)
        elif op is O.FLOORDIV:
            r = floor_divide(np.array(a), np.array(b)) if is_int else np.floor_divide(a, b)
        elif op is O.FLOORMOD:
            r = floor_mod(np.array(a), np.array(b)) if is_int else np.mod(a, b)
        elif op is O.MIN:
            r = np.minimum(a, b)
        elif op is O.MAX:
            r = np.maximum(a, b)
        elif op is O.BIT_AND:
            r = np.bitwise_and(a, b)
        elif op is O.BIT_OR:
            r = np.bitwise_or(a, b)
        elif op is O.BIT_XOR:
            r = np.bitwise_xor(a, b)
        elif op is O.SHL:
            r = _shift_left(a, int(b))
        elif op is O.SHR:
            r = np.right_shift(a, a.dtype.type(int(b)))
        elif op is O.EQ:
            r = np.equal(a, b)
        elif op is O.NE:
            r = np.not_equal(a, b)
        elif op is O.LT:
            r = np.less(a, b)
        elif op is O.LE:
            r = np.less_equal(a, b)
        elif op is O.GT:
            r = np.greater(a, b)
        elif op is O.GE:
            r = np.greater_equal(a, b)
        elif op is O.AND:
            r = np.logical_and(a, b)
        elif op is O.OR:
            r = np.logical_or(a, b)
        else:
            raise KernelIRError(f"unknown operator {op}")
    out = DType.BOOL if (op.is_comparison or op.is_logical) else dtype
    return np.array(r).astype(out.np)[()]


def _cast_value(x: np.generic, to: DType) -> np.generic:
    from ...ir.ops.transform_init import cast_array
    with np.errstate(all="ignore"):
        return np.asarray(cast_array(np.array(x), to)).astype(to.np)[()]


def _sext(v: int, bits: int) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def _sxtab16(a: int, b: int) -> int:
    lo = (a + _sext(b, 8)) & 0xFFFF
    hi = ((a >> 16) + _sext(b >> 16, 8)) & 0xFFFF
    return lo | hi << 16


def _smlad(a: int, b: int, acc: int) -> int:
    total = acc + _sext(a, 16) * _sext(b, 16) + _sext(a >> 16, 16) * _sext(b >> 16, 16)
    return _sext(total, 32)


#: the packed-integer and saturating helpers of the runtime
#: (aot_kernel_helpers.h)
_INT_HELPERS = {"aot_sxtab16": _sxtab16, "aot_sxtb16": lambda b: _sxtab16(0, b),
                "aot_smlad": _smlad,
                "aot_smladx": lambda a, b, acc: _smlad(a, (b >> 16 | b << 16) & 0xFFFFFFFF, acc),
                "aot_sat_i32_i8": lambda x: min(max(x, -128), 127),
                "aot_sat_i32_i16": lambda x: min(max(x, -32768), 32767),
                "aot_sat_i32_u8": lambda x: min(max(x, 0), 255),
                "aot_sat_i32_u16": lambda x: min(max(x, 0), 65535)}


def _fast_helpers() -> dict:
    from ...ir.ops import fast_math as fm
    return {"aot_fast_exp_f32": fm.fast_exp_f32, "aot_fast_tanh_f32": fm.fast_tanh_f32,
            "aot_fast_erf_f32": fm.fast_erf_f32}


def _clip0(x: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``aot_clip0_f32``: NaN passes, x <= 0 gives +0, x >= hi gives hi."""
    return np.where(x != x, x, np.where(x <= 0, np.float32(0), np.where(x >= hi, hi, x)))


#: the float helpers of the runtime: name -> (NumPy function, float dtype)
_FLOAT_HELPERS = {"aot_round_even_f32": (np.rint, np.float32),
                  "aot_clip0_f32": (_clip0, np.float32)}


def _quantize_f32(x: np.generic, lo: int, hi: int, z: int) -> np.int32:
    """``aot_quantize_f32``: clamp(rint(x) + z, lo, hi), NaN -> 0."""
    v = np.float32(x)
    if np.isnan(v):
        return np.int32(0)
    return np.int32(min(max(int(np.rint(np.clip(v, lo - z, hi - z))) + z, lo), hi))


#: the float-pair helpers: two float32 values as the bytes of one float64
_PAIR_HELPERS = {
    "aot_pack2_f32": lambda a, b: np.array([a, b], dtype=np.float32).view(np.float64)[0],
    "aot_lo_f32": lambda d: np.array([d], dtype=np.float64).view(np.float32)[0],
    "aot_hi_f32": lambda d: np.array([d], dtype=np.float64).view(np.float32)[1]}


def _call_value(name: str, args: list[np.generic], dtype: DType) -> np.generic:
    if name.startswith("aot_pick_"):
        return args[1] if bool(args[0]) else args[2]
    if name in _PAIR_HELPERS:
        return _PAIR_HELPERS[name](*args)
    if name == "aot_quantize_f32":
        return _quantize_f32(args[0], *(int(a) for a in args[1:])).astype(dtype.np)[()]
    if name in _FLOAT_HELPERS:
        fn, ft = _FLOAT_HELPERS[name]
        with np.errstate(all="ignore"):
            return np.array(fn(*[np.array(a, dtype=ft) for a in args]), dtype=ft) \
                .astype(dtype.np)[()]
    if name in _INT_HELPERS:
        return np.array(_INT_HELPERS[name](*(int(a) for a in args))).astype(dtype.np)[()]
    if name.startswith("aot_fast_"):
        return _fast_helpers()[name](np.array(args[0], dtype=np.float32))[()]
    base = math_base(name)
    check(base is not None, f"no reference semantics for function {name}")
    _, fn = MATH_FUNCTIONS[base]  # type: ignore[index]
    compute = np.float32 if dtype.is_narrow_float else dtype.np.type
    with np.errstate(all="ignore"):
        r = fn(*[np.array(a, dtype=compute) for a in args])
    return np.array(r, dtype=compute).astype(dtype.np)[()]


def evaluate(root: Expr, env: Mapping[str, np.generic | int | float],
             memory: Mapping[str, np.ndarray]) -> np.generic:
    """The value of an expression: a NumPy scalar of ``root.dtype``.
    ``env`` maps variable names to values, ``memory`` buffer names to flat
    arrays."""
    def combine(e: Expr, vals: list[np.generic]) -> np.generic:
        if isinstance(e, Const):
            return _np_scalar(e.value, e.dtype)
        if isinstance(e, Var):
            check(e.name in env, f"unbound variable {e.name}")
            return np.array(env[e.name]).astype(e.dtype.np)[()]
        if isinstance(e, Load):
            arr = memory[e.buffer.name]
            i = int(vals[0])
            check(0 <= i <= arr.size - e.lanes,
                   f"{e.buffer.name}[{i}] out of bounds ({arr.size})")
            if e.lanes == 4:
                word = arr.reshape(-1)[i:i + 4].astype(np.uint8).astype(np.uint32)
                return np.uint32(int(word[0]) | int(word[1]) << 8 | int(word[2]) << 16
                                 | int(word[3]) << 24)
            return arr.reshape(-1)[i]
        if isinstance(e, BinOp):
            return _apply_binop(e.op, vals[0], vals[1], e.a.dtype)
        if isinstance(e, UnaryOp):
            with np.errstate(all="ignore"):
                if e.op is UnaryOperator.NEG:
                    return np.negative(vals[0])
                if e.op is UnaryOperator.NOT:
                    return np.logical_not(vals[0])
                return np.invert(vals[0])
        if isinstance(e, Cast):
            return _cast_value(vals[0], e.to)
        if isinstance(e, Select):
            return vals[1] if bool(vals[0]) else vals[2]
        if isinstance(e, Call):
            return _call_value(e.name, vals, e.dtype)
        raise KernelIRError(f"not an expression: {e!r}")
    return postorder(root, children, combine)


def run_kernel(kernel: Kernel, arrays: MutableMapping[str, np.ndarray]) -> None:
    """Execute a kernel on NumPy arrays (one per parameter, and per global
    CONST buffer), in place: the reference the printed C must match."""
    memory: dict[str, np.ndarray] = {}
    for b in kernel.params:
        arr = arrays[b.name]
        check(arr.dtype == b.dtype.np and arr.size == b.size,
               f"{b.name}: expected {b.size} x {b.dtype}, got {arr.size} x {arr.dtype}")
        memory[b.name] = arr.reshape(-1)
    for b in buffers_in(kernel.body):
        if b.name not in memory:
            memory[b.name] = (arrays[b.name].reshape(-1) if b.scope is BufferScope.CONST
                              else np.zeros(b.size, dtype=b.dtype.np))
    _Runner(memory).stmt(kernel.body)


class _Runner:
    def __init__(self, memory: dict[str, np.ndarray]) -> None:
        self.memory = memory
        self.env: dict[str, np.generic] = {}

    def stmt(self, s: Stmt) -> None:
        if isinstance(s, Block):
            for x in s.stmts:
                self.stmt(x)
        elif isinstance(s, For):
            start = int(evaluate(s.start, self.env, self.memory))
            stop = start + int(evaluate(s.extent, self.env, self.memory))
            for i in range(start, stop):
                self.env[s.var.name] = _np_scalar(i, s.var.dtype)
                self.stmt(s.body)
        elif isinstance(s, Store):
            i = int(evaluate(s.index, self.env, self.memory))
            arr = self.memory[s.buffer.name]
            check(0 <= i < arr.size, f"{s.buffer.name}[{i}] out of bounds ({arr.size})")
            arr[i] = evaluate(s.value, self.env, self.memory)
        elif isinstance(s, (Decl, Assign)):
            value = s.init if isinstance(s, Decl) else s.value
            if value is not None:
                self.env[s.var.name] = evaluate(value, self.env, self.memory)
        elif isinstance(s, IfThenElse):
            if bool(evaluate(s.cond, self.env, self.memory)):
                self.stmt(s.then)
            elif s.else_ is not None:
                self.stmt(s.else_)
        elif isinstance(s, Comment):
            pass
        else:
            raise KernelIRError(f"unknown statement {type(s).__name__}")
