"""Test support for the kernel IR printer: compile printed kernels with
gcc/clang into a shared library and call them through ctypes, plus a
seeded generator of random well-typed kernel-IR expressions.

Deliberately independent of aot.emit.build.library (a separate layer)."""

from __future__ import annotations

import ctypes
import random
import shutil
import subprocess
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np

from aot.emit.kernel import ir as K
from aot.emit.c.printer import print_kernel
from aot.emit.resources import runtime_dir
from aot.ir.dtype import DType

HERE = Path(__file__).resolve().parent
RUNTIME_DIR = runtime_dir()  # runtime_c/: aot_kernel_helpers.h
WARNINGS = ["-std=c99", "-Wall", "-Wextra", "-Wpedantic", "-Werror"]
PRELUDE = '#include <math.h>\n#include <stdint.h>\n#include "aot_kernel_helpers.h"\n\n'


def compilers() -> list[str]:
    """gcc, and clang when installed."""
    return ["gcc"] + (["clang"] if shutil.which("clang") else [])


def wrapper(kernel: K.Kernel) -> str:
    """An exported ``run_<name>(void *const *buffers)`` calling the kernel."""
    args = ", ".join(f"b[{i}]" for i in range(len(kernel.params)))
    unused = "" if kernel.params else "    (void)b;\n"
    return f"void run_{kernel.name}(void *const *b);\nvoid run_{kernel.name}(void *const *b)\n" \
           f"{{\n{unused}    {kernel.name}({args});\n}}\n"


def module_source(kernels: Iterable[K.Kernel], extra: str = "") -> str:
    parts = [PRELUDE]
    for k in kernels:
        parts.append(print_kernel(k))
        parts.append("\n")
        parts.append(wrapper(k))
        parts.append("\n")
    parts.append(extra)
    return "".join(parts)


def _numbered(source: str) -> str:
    return "\n".join(f"{i + 1:5d}  {line}" for i, line in enumerate(source.splitlines()))


def compile_c(source: str, out_dir: Path, stem: str, compiler: str = "gcc",
              opt: str = "-O1", shared: bool = True) -> Path:
    """Compile ``source``; fail the test with the diagnostics and the
    numbered source on any warning or error."""
    out_dir.mkdir(parents=True, exist_ok=True)
    src = out_dir / f"{stem}.c"
    src.write_text(source)
    out = out_dir / (f"lib{stem}.so" if shared else f"{stem}.o")
    cmd = [compiler, *WARNINGS, opt, "-ffp-contract=off", f"-I{RUNTIME_DIR}", str(src),
           "-o", str(out)]
    cmd += ["-shared", "-fPIC", "-lm"] if shared else ["-c"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0 or proc.stderr.strip():
        raise AssertionError(f"{' '.join(cmd)} failed:\n{proc.stderr}\n{_numbered(source)}")
    return out


def build(kernels: Sequence[K.Kernel], out_dir: Path, stem: str, compiler: str = "gcc",
          opt: str = "-O1", extra: str = "") -> ctypes.CDLL:
    path = compile_c(module_source(kernels, extra), out_dir, stem, compiler, opt)
    return ctypes.CDLL(str(path))


def call(lib: ctypes.CDLL, kernel: K.Kernel, arrays: Mapping[str, np.ndarray]) -> None:
    """Run the compiled kernel on the arrays (in place)."""
    ptrs = []
    for p in kernel.params:
        arr = arrays[p.name]
        assert arr.flags.c_contiguous and arr.dtype == p.dtype.np and arr.size == p.size, p
        ptrs.append(arr.ctypes.data)
    argv = (ctypes.c_void_p * max(len(ptrs), 1))(*ptrs)
    getattr(lib, f"run_{kernel.name}")(argv)


def bits_equal(a: np.ndarray, b: np.ndarray, zero_sign: bool = True) -> np.ndarray:
    """Elementwise equality of bit patterns (any NaN equals any NaN;
    ``zero_sign=False``: -0.0 equals 0.0)."""
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    if a.dtype.kind == "f":
        view = np.dtype(f"u{a.dtype.itemsize}")
        same = a.view(view) == b.view(view)
        if not zero_sign:
            same |= (a == 0) & (b == 0)
        return same | (np.isnan(a) & np.isnan(b))
    return a == b


# ============================================================ test values

def edge_values(dtype: DType) -> list:
    """Interesting values of a dtype (limits, signs, zero, small)."""
    if dtype is DType.BOOL:
        return [0, 1]
    if dtype.is_int:
        info = np.iinfo(dtype.np)
        lo, hi = int(info.min), int(info.max)
        vals = {0, 1, 2, 3, 7, hi, hi - 1, hi // 2, hi // 2 + 1}
        if lo < 0:
            vals |= {-1, -2, -3, -7, lo, lo + 1}
        return sorted(vals)
    info = np.finfo(dtype.np)
    tiny_sub = float(np.array(1, dtype=f"u{dtype.itemsize}").view(dtype.np))
    return [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 7.25, float(info.max), -float(info.max),
            float(info.tiny), tiny_sub, -tiny_sub, float("inf"), float("-inf"), float("nan"),
            1e4, -3e3]


def random_values(rng: np.random.Generator, dtype: DType, n: int) -> np.ndarray:
    """``n`` values mixing edge values and random bit patterns / ranges."""
    edges = edge_values(dtype)
    out = np.empty(n, dtype=dtype.np)
    for i in range(n):
        pick = rng.random()
        if pick < 0.4:
            out[i] = edges[int(rng.integers(len(edges)))]
        elif dtype is DType.BOOL:
            out[i] = bool(rng.integers(2))
        elif dtype.is_int:
            info = np.iinfo(dtype.np)
            if pick < 0.7:
                out[i] = int(rng.integers(-20 if info.min < 0 else 0, 21))
            else:
                raw = rng.integers(0, 2 ** (8 * dtype.itemsize), dtype=np.uint64)
                out[i] = np.array(raw).astype(f"u{dtype.itemsize}").view(dtype.np)
        else:
            if pick < 0.8:
                out[i] = dtype.np.type(rng.normal() * 10.0 ** int(rng.integers(-3, 4)))
            else:
                raw = rng.integers(0, 2 ** (8 * dtype.itemsize), dtype=np.uint64)
                out[i] = np.array(raw).astype(f"u{dtype.itemsize}").view(dtype.np)
    return out


# ================================================== random expression trees

ALL_DTYPES = [DType.BOOL, DType.INT8, DType.INT16, DType.INT32, DType.INT64, DType.UINT8,
              DType.UINT16, DType.UINT32, DType.UINT64, DType.FLOAT16, DType.FLOAT32,
              DType.FLOAT64]

_O = K.BinaryOperator
_ARITH = [_O.ADD, _O.SUB, _O.MUL, _O.DIV, _O.MOD, _O.FLOORDIV, _O.FLOORMOD, _O.MIN, _O.MAX]
_INT_ONLY = [_O.BIT_AND, _O.BIT_OR, _O.BIT_XOR, _O.SHL, _O.SHR]
_COMPARE = [_O.EQ, _O.NE, _O.LT, _O.LE, _O.GT, _O.GE]
# math.h functions whose results IEEE 754 fixes exactly (libm and NumPy
# agree); not copysign: it exposes the sign of a NaN, which IEEE leaves open
# (gcc turns ``x - NAN`` into ``x + -NAN``)
EXACT_MATH = ["sqrt", "floor", "ceil", "trunc", "nearbyint", "fabs", "fmod"]


class ExprGen:
    """Random well-typed expressions over loads ``in_<dtype>[i]`` and
    constants, deterministic for a seed."""

    def __init__(self, seed: int, inputs: Mapping[DType, K.Buffer], index: K.Expr,
                 float_ops: bool = True) -> None:
        self.rng = random.Random(seed)
        self.inputs = inputs
        self.index = index
        self.float_ops = float_ops

    def const(self, dtype: DType) -> K.Const:
        edges = edge_values(dtype)
        if dtype.is_float:
            edges = [v for v in edges if np.isfinite(v)] + [float("nan"), float("inf")]
        return K.Const(self.rng.choice(edges), dtype)

    def leaf(self, dtype: DType) -> K.Expr:
        if self.rng.random() < 0.75 and dtype in self.inputs:
            return K.Load(self.inputs[dtype], self.index)
        return self.const(dtype)

    def expr(self, dtype: DType, depth: int) -> K.Expr:
        if depth <= 0:
            return self.leaf(dtype)
        r = self.rng.random()
        if dtype is DType.BOOL:
            if r < 0.45:
                src = self.rng.choice([d for d in ALL_DTYPES if self.float_ops or not d.is_float])
                return K.BinOp(self.rng.choice(_COMPARE), self.expr(src, depth - 1),
                               self.expr(src, depth - 1))
            if r < 0.65:
                op = self.rng.choice([_O.AND, _O.OR, _O.BIT_AND, _O.BIT_OR, _O.BIT_XOR, _O.MIN])
                return K.BinOp(op, self.expr(dtype, depth - 1), self.expr(dtype, depth - 1))
            if r < 0.75:
                return K.UnaryOp(K.UnaryOperator.NOT, self.expr(dtype, depth - 1))
            if r < 0.9:
                return self.cast_to(dtype, depth)
            return self.leaf(dtype)
        if r < 0.15:
            return self.cast_to(dtype, depth)
        if r < 0.25:
            return K.Select(self.expr(DType.BOOL, depth - 1), self.expr(dtype, depth - 1),
                            self.expr(dtype, depth - 1))
        if r < 0.35:
            if dtype.is_int and self.rng.random() < 0.5:
                return K.UnaryOp(K.UnaryOperator.BIT_NOT, self.expr(dtype, depth - 1))
            return K.UnaryOp(K.UnaryOperator.NEG, self.expr(dtype, depth - 1))
        if r < 0.4:
            return self.leaf(dtype)
        if dtype.is_float and r < 0.48:
            fn = self.rng.choice(EXACT_MATH)
            arity = K.MATH_FUNCTIONS[fn][0]
            return K.math_call(fn, *(self.expr(dtype, depth - 1) for _ in range(arity)))
        ops = _ARITH + (_INT_ONLY if dtype.is_int else [])
        op = self.rng.choice(ops)
        a = self.expr(dtype, depth - 1)
        if op.is_shift:
            return K.BinOp(op, a, K.Const(self.rng.randrange(dtype.bits), dtype))
        no_wrap = False
        return K.BinOp(op, a, self.expr(dtype, depth - 1), no_wrap)

    def cast_to(self, dtype: DType, depth: int) -> K.Expr:
        choices = [d for d in ALL_DTYPES if d is not dtype and (self.float_ops or not d.is_float)]
        src = self.rng.choice(choices)
        return K.Cast(dtype, self.expr(src, depth - 1))
