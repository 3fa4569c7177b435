"""Shared plumbing of the transform-family lowering tests
(test_lower_transform*.py): a case is a Relay ``main`` plus its argument
arrays; :func:`check_case` lowers ``main`` as one fused group and runs it
with the kernel-IR evaluator against the interpreter
(:mod:`lowering_harness`); :func:`check_cases_in_c` prints all cases'
kernels into one C file, compiles it warning-free with gcc/clang and
compares each compiled kernel with the interpreter too."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

import aot
from aot.emit.c.printer import print_kernel
from aot.emit.lower.group import LoweredGroup, lower_group
from aot.emit.kernel.simplify import simplify_kernel
from kernel_c_harness import build, call
from lowering_harness import _flatten, assert_close, check_lowering, main_as_group

__all__ = ["Case", "case", "check_case", "check_cases_in_c", "kernel_c", "values"]


@dataclass(frozen=True)
class Case:
    id: str
    params: str
    body: str
    args: tuple[np.ndarray, ...]
    rtol: float = 1e-6
    atol: float = 1e-6

    @property
    def text(self) -> str:
        return f"def @main({self.params}) {{\n  {self.body}\n}}\n"


def case(id: str, params: str, body: str, *args: np.ndarray, rtol: float = 1e-6,
         atol: float = 1e-6) -> Case:
    return Case(id, params, body, tuple(args), rtol, atol)


def values(shape: Sequence[int], dtype: str = "float32", seed: int = 0, lo: int = -50,
           hi: int = 50) -> np.ndarray:
    """Small deterministic test data: floats from a normal distribution,
    integers in ``[lo, hi)`` (clipped to the dtype), bool half true."""
    rng = np.random.default_rng(seed)
    shape = tuple(shape)
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return rng.standard_normal(shape).astype(dt)
    if dt.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    info = np.iinfo(dt)
    return rng.integers(max(lo, int(info.min)), min(hi, int(info.max) + 1), shape).astype(dt)


def check_case(c: Case) -> LoweredGroup:
    return check_lowering(c.text, c.args, rtol=c.rtol, atol=c.atol)


def kernel_c(c: Case) -> str:
    """The printed C of a case's simplified kernel."""
    mod = aot.infer_types(aot.parse(c.text))
    return print_kernel(simplify_kernel(lower_group(main_as_group(mod), "k").kernel))


def check_cases_in_c(cases: Sequence[Case], tmp_path: Path, compiler: str) -> None:
    """Compile every case's kernel into one library (``-Werror``) and
    compare each with the interpreter."""
    lowered = []
    for n, c in enumerate(cases):
        mod = aot.infer_types(aot.parse(c.text))
        group = lower_group(main_as_group(mod), f"k{n}")
        lowered.append((c, mod, group, simplify_kernel(group.kernel)))
    lib = build([k for *_, k in lowered], tmp_path, "transform_cases", compiler)
    for c, mod, group, kernel in lowered:
        arrays: dict[str, np.ndarray] = {}
        for buf, a in zip(group.inputs, c.args):
            arrays[buf.name] = np.ascontiguousarray(a, dtype=buf.dtype.np).reshape(-1).copy()
        for buf, data in group.constants:
            arrays[buf.name] = np.ascontiguousarray(data, dtype=buf.dtype.np).reshape(-1)
        for buf in (*group.outputs, *group.scratch):
            arrays[buf.name] = np.zeros(buf.size, dtype=buf.dtype.np)
        call(lib, kernel, arrays)
        want = _flatten(aot.interpret(mod, *c.args))
        assert len(want) == len(group.outputs)
        for i, (buf, w) in enumerate(zip(group.outputs, want)):
            assert_close(arrays[buf.name].reshape(buf.shape), w, c.rtol, c.atol,
                         f"{c.id}: output {i} of\n{c.text}")
