"""Random whole-language programs: generator checks, and compiled C
compared with the interpreter.

The programs come from :mod:`random_programs` (type-directed generation:
let, if, tuples, match with nested patterns on List/Option and a user ADT,
closures, prelude higher-order functions, references, fuel- and
list-recursive globals, elementwise tensor operators).  Hypothesis runs
derandomized, so every run (and CI) sees the same programs.
"""

from __future__ import annotations

import tempfile

import pytest
from hypothesis import HealthCheck, Phase, given, settings

import aot
from aot.values import format_value, values_equal
from c_harness import compile_sized
from random_programs import Program, conforms, pack, program_packs, programs, realize, spec_text


def _interpret(p: Program) -> object:
    mod = aot.infer_types(aot.parse(p.text, source_name=f"{p.prefix}.relay"))
    return aot.interpret(mod, *p.arguments(mod))


@settings(max_examples=200, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(programs())
def test_generated_programs_parse_typecheck_and_interpret(p: Program) -> None:
    value = _interpret(p)
    assert conforms(value, p.ret, p.prefix), f"{p.text}\nresult {value!r} is not a {p.ret}"


@settings(max_examples=10, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(program_packs(min_size=2, max_size=4))
def test_packed_program_interprets_like_its_parts(progs: list[Program]) -> None:
    text, args = pack(progs)
    mod = aot.infer_types(aot.parse(text, source_name="pack.relay"))
    whole = aot.interpret(mod, *(realize(a, mod) for a in args))
    assert isinstance(whole, tuple) and len(whole) == len(progs)
    for p, got in zip(progs, whole):
        assert values_equal(got, _interpret(p)), p.text


# ------------------------------------------------------- C vs interpreter
#
# Each example is a pack of programs compiled as one module (one C build);
# each program's result is compared with the interpreter's, so a failure
# names the program.  If the pack does not build or a call raises, every
# program is built alone so the message shows the culprit's own text.
# Float operations in the generator are exactly rounded, so the tolerance
# only absorbs what it must; integers, ADT shapes and tags are exact.
# Shrinking is off: each shrink step would cost a C build, and the
# programs are small (depth <= 4) and isolated per program already.

RTOL, ATOL = 1e-5, 1e-6
C_SETTINGS = dict(deadline=None, derandomize=True, database=None,
                  suppress_health_check=list(HealthCheck),
                  phases=(Phase.explicit, Phase.generate))


def _describe(p: Program, want: object, got: object) -> str:
    args = ", ".join(spec_text(a) for a in p.args)
    return (f"--- program {p.prefix} (args: {args})\n{p.text}"
            f"interpreter: {format_value(want)}\nC:           {got}")


def _build(text: str, args: tuple, out_dir: str, name: str, required: tuple[str, ...] = ()):
    """The compiled program (with the ``required`` passes) and its
    arguments as runtime values."""
    mod = aot.infer_types(aot.parse(text, source_name=f"{name}.relay"))
    with aot.PassContext(required=list(required)):
        artifact = compile_sized(mod, out_dir, name=name)
    return aot.load(artifact), [realize(a, mod) for a in args]


def _pool_in_use(fn) -> int:
    """Bytes of the object pool still allocated; a pure tensor program
    goes through the dataflow backend, whose models have no pool."""
    return fn.pool_in_use() if hasattr(fn, "pool_in_use") else 0


def _run_alone(p: Program, want: object, required: tuple[str, ...] = ()) -> str | None:
    """The failure of one program built and run on its own, or None."""
    with tempfile.TemporaryDirectory() as d:
        try:
            fn, args = _build(p.text, p.args, d, f"rp_{p.prefix}", required)
            got = fn(*args)
        except Exception as e:  # noqa: BLE001 - reported with the program
            return _describe(p, want, f"raised {type(e).__name__}: {e}")
        if _pool_in_use(fn) != 0:
            return _describe(p, want, f"{format_value(got)} (pool_in_use "
                                      f"{_pool_in_use(fn)} after the call)")
        if not values_equal(got, want, rtol=RTOL, atol=ATOL):
            return _describe(p, want, format_value(got))
    return None


def check_against_interpreter(progs: list[Program], required: tuple[str, ...] = ()) -> None:
    wants = [_interpret(p) for p in progs]
    text, args = pack(progs)
    with tempfile.TemporaryDirectory() as d:
        try:
            fn, values = _build(text, args, d, "rp", required)
            results, in_use = [], []
            for _ in range(2):  # the second call must see no state left by the first
                results.append(fn(*values))
                in_use.append(_pool_in_use(fn))
            problem = None
        except Exception as e:  # noqa: BLE001 - isolated below
            problem = f"{type(e).__name__}: {e}"
    if problem is None and in_use != [0, 0]:
        problem = f"pool_in_use() after two calls: {in_use}"
    if problem is not None:  # name the culprit: build and run each program alone
        failures = [f for p, w in zip(progs, wants) if (f := _run_alone(p, w, required))]
        assert failures, f"the packed program failed ({problem}) but each alone passed:\n{text}"
        raise AssertionError("\n".join(failures))
    failures = []
    for k, got in enumerate(results):
        assert isinstance(got, tuple) and len(got) == len(progs), got
        for p, g, w in zip(progs, got, wants):
            if not values_equal(g, w, rtol=RTOL, atol=ATOL):
                failures.append(f"(call {k + 1}) " + _describe(p, w, format_value(g)))
    assert not failures, "\n".join(failures)


@settings(max_examples=2, **C_SETTINGS)
@given(program_packs(min_size=3, max_size=4))
def test_random_programs_match_the_interpreter_quick(progs: list[Program]) -> None:
    check_against_interpreter(progs)


@pytest.mark.slow
@settings(max_examples=15, **C_SETTINGS)
@given(program_packs(min_size=6, max_size=8))
def test_random_programs_match_the_interpreter(progs: list[Program]) -> None:
    check_against_interpreter(progs)


@settings(max_examples=4, **C_SETTINGS)
@given(program_packs(min_size=4, max_size=6))
def test_random_programs_with_the_level_4_program_passes(progs: list[Program]) -> None:
    """Defunctionalization (level 4: off unless required) after
    PartialEvaluate (level 3, on by default) in the PROGRAM pipeline, then
    C: the same results.  (scripts/pe_sweep.py: 5,000 random programs
    through PartialEvaluate, 250 of them into C, found no difference.)"""
    check_against_interpreter(progs, required=("PartialEvaluate", "Defunctionalization"))
