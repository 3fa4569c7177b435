"""Random whole-language programs: generator checks, and compiled C
compared with the interpreter.

The programs come from :mod:`random_programs` (type-directed generation:
let, if, tuples, match with nested patterns on List/Option and a user ADT,
closures, prelude higher-order functions, references, fuel- and
list-recursive globals, elementwise tensor operators).  Hypothesis runs
derandomized, so every run (and CI) sees the same programs.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

import aot
from random_programs import Program, conforms, pack, program_packs, programs


def _interpret(p: Program) -> object:
    mod = aot.infer_types(aot.parse(p.text, source_name=f"{p.prefix}.relay"))
    return aot.interpret(mod, *p.args)


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
    from aot.values import values_equal
    text, args = pack(progs)
    mod = aot.infer_types(aot.parse(text, source_name="pack.relay"))
    whole = aot.interpret(mod, *args)
    assert isinstance(whole, tuple) and len(whole) == len(progs)
    for p, got in zip(progs, whole):
        assert values_equal(got, _interpret(p)), p.text
