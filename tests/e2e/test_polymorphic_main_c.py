"""A polymorphic @main whose type parameters nothing determines (issue 17,
point 7): ``def @main() { Nil }`` has type ``fn [A]() -> List[A]``; the C
backend compiles it at ``A = ()``, the interpreter's choice (its ``Nil`` is
a list of anything), and gives the interpreter's values.  A type parameter
the caller would choose (one in a parameter's type) or one an operator's
relation constrains is refused with a diagnostic.  One C build."""

from __future__ import annotations

import numpy as np
import pytest

import aot
from aot.emit.build.compiled_program import OpaqueValue
from aot.values import format_value, values_equal

from c_harness import compile_and_load

HEADER = '#[version = "0.0.5"]\n'

PROGRAM = HEADER + """
def @pm_nil[A]() -> List[A] { Nil }
def @pm_swap[A, B](%p: (A, B)) -> (B, A) { (%p.1, %p.0) }
def @main(%x: int32) {
  let %f = fn () { Nil };
  (Nil,
   None,
   (%x, Nil),
   @pm_nil(),
   Cons(None, Cons(Some(Nil), Nil)),
   @length(Nil),
   @pm_swap((%x, None)),
   match (@pm_nil()) { Nil => %x + 1, Cons(_, _) => 0 },
   %f(),
   fn () { Nil })
}
"""


def test_main_with_undetermined_type_parameters_compiles_at_unit() -> None:
    mod = aot.infer_types(aot.parse(PROGRAM))
    main_t = mod["main"].checked_type
    assert main_t.type_params, f"the test needs a polymorphic @main, got {main_t}"
    x = np.asarray(5, np.int32)
    want = aot.interpret(mod, x)
    fn = compile_and_load(mod, name="polymain")
    for _ in range(2):       # the second call sees nothing of the first
        got = fn(x)
        assert isinstance(got, tuple) and len(got) == len(want)
        *data, closure = got
        assert isinstance(closure, OpaqueValue) and closure.kind == "closure"
        assert values_equal(tuple(data), tuple(want[:-1])), \
            f"C {format_value(tuple(data))}\ninterpreter {format_value(tuple(want[:-1]))}"
    assert fn.pool_in_use() == 0


@pytest.mark.parametrize("text, message", [
    ("def @main[A](%x: A) { %x }",
     r"@main is polymorphic \(`fn \[A\]\(A\) -> A`\): the caller would choose its type "
     r"parameter A; give its parameters concrete types"),
    ("def @main(%x) { (%x, Nil) }",
     r"the caller would choose its type parameter"),
    ("def @main() { add }",
     r"nothing determines its type parameters, and add\(A, B, C\) rules out the unit type"),
])
def test_main_whose_type_parameters_something_must_choose_is_refused(text: str,
                                                                     message: str,
                                                                     tmp_path) -> None:
    mod = aot.parse(HEADER + text)
    aot.interpret(mod, *([np.asarray(1, np.int32)] if "%x" in text else []))
    with pytest.raises(aot.DiagnosticError, match=message):
        aot.compile(mod, tmp_path, name="refused", build=False)
