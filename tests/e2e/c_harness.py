"""Differential testing of the C backend against the interpreter.

Compiling and loading a model costs a C compile, an archive and a cffi
extension; doing that once per operator case would take the suite past its
time budget.  :func:`check_cases` therefore *packs* many cases into one
program: every case is a ``main`` of its own; the packed ``main`` takes all
their parameters and returns the tuple of all their results.  One build
checks them all, and each result is compared with the interpreter's result
for its own case, so a failure names the case.  If the packed program does
not compile, each case is compiled alone so the error names the culprit.

Tolerances per dtype (stated once, used everywhere): integers and bool are
exact; float64 rtol 1e-12; float32 rtol 1e-5 (C's ``expf`` and friends are
not correctly rounded, NumPy's are not either, and they differ by an ulp
or two); float16 rtol 2e-3 (one half-precision ulp).  The absolute
tolerance is the table's value times the largest magnitude in the expected
output (at least 1), for given tolerances too: a float32 sum's rounding error scales with its terms,
not with its result, and the C kernels sum in a different order than
NumPy.  Callers may widen them per case.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

import aot
from aot.emit.build.toolchain import SANITIZE_ENV
from aot.emit.plan.program import DEFAULT_STACK_BYTES
from aot.ir.expr import Function, Tuple
from aot.ir.module import IRModule

#: The stack budget of programs built with sanitizers ($AOT_SANITIZE, at
#: -O0): AddressSanitizer's frames are about 3.3 times a plain -O2 build's
#: (210 against 64 bytes for a one-parameter recursive function), so four
#: times the default budget lets the same recursion depth through.  Tests
#: of the budget itself pass ``stack_bytes`` explicitly.
SANITIZED_STACK_BYTES = 4 * DEFAULT_STACK_BYTES

TOLERANCE = {
    "float64": (1e-12, 1e-12),
    "float32": (1e-5, 2e-6),
    "float16": (2e-3, 1e-3),
}


@dataclass
class Case:
    name: str
    text: str
    args: Sequence[np.ndarray]
    rtol: float | None = None
    atol: float | None = None
    params: dict[str, Any] = field(default_factory=dict)


def flatten(v: object) -> list[np.ndarray]:
    if isinstance(v, tuple):
        return [x for f in v for x in flatten(f)]
    return [np.asarray(v)]


def assert_matches(got: np.ndarray, want: np.ndarray, what: str,
                   rtol: float | None = None, atol: float | None = None) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape}, interpreter {want.shape}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, interpreter {want.dtype}"
    if want.dtype.kind == "f":
        r, a = TOLERANCE[want.dtype.name]
        r = r if rtol is None else rtol
        a = a if atol is None else atol
        finite = np.abs(want[np.isfinite(want)]).astype(np.float64)
        a *= max(1.0, float(finite.max()) if finite.size else 1.0)
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                                   rtol=r, atol=a, equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


def _main(text: str) -> tuple[IRModule, Function]:
    mod = aot.parse(text)
    return mod, mod["main"]


def pack(cases: Sequence[Case]) -> IRModule:
    """One module whose ``main`` returns every case's result."""
    packed = IRModule()
    params = []
    bodies = []
    for case in cases:
        mod, fn = _main(case.text)
        params.extend(fn.params)
        bodies.append(fn.body)
        for data in mod.type_definitions.values():
            if data.header not in packed.type_definitions:
                packed.add_type(data)
    packed.add("main", Function(tuple(params), Tuple(tuple(bodies))))
    return packed


#: the pool of a program whose pool the compiler cannot size (value inputs
#: the caller builds, recursion that branches, loops in recursive code):
#: the tests that are about the program's meaning, not its pool, give it
#: this many bytes (the fixed default before the compiler sized pools)
UNSIZED_POOL_BYTES = 256 * 1024


def compile_sized(mod: IRModule, out_dir: Any, name: str = "model", **options: Any):
    """aot.compile, with :data:`UNSIZED_POOL_BYTES` for a program whose
    pool the compiler refuses to size."""
    try:
        return aot.compile(mod, out_dir, name=name, **options)
    except aot.DiagnosticError as e:
        if "pool_bytes" in options or "cannot size the object pool" not in str(e):
            raise
        return aot.compile(mod, out_dir, name=name, pool_bytes=UNSIZED_POOL_BYTES, **options)


def compile_and_load(mod: IRModule, name: str = "model", **options: Any):
    if os.environ.get(SANITIZE_ENV) and "stack_bytes" not in options:
        options["stack_bytes"] = SANITIZED_STACK_BYTES
    tmp = Path(tempfile.mkdtemp(prefix=f"aot-{name}-"))
    return aot.load(compile_sized(mod, tmp, name=name, **options))


def run_c(text: str, *args: np.ndarray, **options: Any) -> object:
    return compile_and_load(aot.parse(text), **options)(*args)


def check_program(text: str, args: Sequence[np.ndarray], rtol: float | None = None,
                  atol: float | None = None, **options: Any) -> object:
    """Compile ``text`` alone and compare with the interpreter."""
    mod = aot.parse(text)
    want = aot.interpret(mod, *args)
    got = compile_and_load(mod, **options)(*args)
    w, g = flatten(want), flatten(got)
    assert len(w) == len(g)
    for i, (x, y) in enumerate(zip(g, w)):
        assert_matches(x, y, f"output {i} of\n{text}", rtol, atol)
    return got


def check_cases(cases: Sequence[Case], name: str = "pack") -> None:
    """Compile all ``cases`` as one program and compare each with the
    interpreter (see the module docstring)."""
    assert all(not c.params for c in cases), "params cannot be packed"
    try:
        fn = compile_and_load(pack(cases), name=name)
    except aot.DiagnosticError:
        for case in cases:          # find the culprit, with its own message
            try:
                compile_and_load(aot.parse(case.text), name=name)
            except aot.DiagnosticError as e:
                raise AssertionError(f"case {case.name} does not compile:\n{e}\n{case.text}")
        raise
    all_args = [a for c in cases for a in c.args]
    results = fn(*all_args)
    assert isinstance(results, tuple) and len(results) == len(cases)
    for case, got in zip(cases, results):
        want = aot.interpret(aot.parse(case.text), *case.args)
        w, g = flatten(want), flatten(got)
        assert len(w) == len(g), case.name
        for i, (x, y) in enumerate(zip(g, w)):
            assert_matches(x, y, f"{case.name} output {i}:\n{case.text}", case.rtol, case.atol)


# ------------------------------------------------ whole-language values

def tolerance_for(want: object) -> tuple[float, float]:
    """``(rtol, atol)`` for comparing a whole value (tensors, tuples, ADT
    values nested to any depth) with :func:`aot.values.values_equal`: the
    loosest TOLERANCE row among the float dtypes it holds (exact if none),
    the absolute part scaled by the largest finite magnitude, as in
    :func:`assert_matches`."""
    from aot.values import ConstructorValue
    rtol = atol = 0.0
    biggest = 1.0
    stack = [want]
    while stack:
        v = stack.pop()
        if isinstance(v, tuple):
            stack.extend(v)
        elif isinstance(v, ConstructorValue):
            stack.extend(v.fields)
        elif isinstance(v, (np.ndarray, np.generic)):
            a = np.asarray(v)
            if a.dtype.kind == "f":
                r, t = TOLERANCE[a.dtype.name]
                rtol, atol = max(rtol, r), max(atol, t)
                finite = np.abs(a[np.isfinite(a)]).astype(np.float64)
                if finite.size:
                    biggest = max(biggest, float(finite.max()))
    return rtol, atol * biggest


def assert_values_match(got: object, want: object, what: str) -> None:
    """``got`` (from C) equals ``want`` (from the interpreter) within
    :func:`tolerance_for` ``want``; the message prints both values."""
    from aot.values import format_value, values_equal
    rtol, atol = tolerance_for(want)
    assert values_equal(got, want, rtol, atol), (
        f"{what}:\n  C:           {format_value(got, limit=2000)}"
        f"\n  interpreter: {format_value(want, limit=2000)}")
