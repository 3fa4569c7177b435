"""The object IR of the program backend (aot/emit/objects): the verifier
catches each broken rule in hand-built IR, accepts every whole-language
program of tests/e2e/test_lang_c.py, and the printer spells a small
function as the backend always has."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from aot.compiler import plan
from aot.emit.c.objects import print_functions
from aot.emit.objects import ir as O
from aot.emit.objects.verify import verify_function, verify_program
from aot.emit.objects.walk import iter_stmts
from aot.ir.dtype import DType
from aot.passes.manager import PassContext

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))
from test_lang_c import PACKS, build

A0, T0, T1, B0 = O.Var("a0"), O.Var("t0"), O.Var("t1"), O.Var("b0")


def fn(*body: O.Stmt, temps=("t0", "t1"), locals_=("b0",), loops=None, cleanup=None,
       kind=O.FunctionKind.GLOBAL) -> O.Function:
    if loops is None:
        loops = any(isinstance(s, O.TailJump) for s in iter_stmts(body))
    if cleanup is None:
        cleanup = (*(O.Release(t) for t in temps),
                   *([O.ReleaseParams(("a0",))] if loops else []), O.Leave())
    return O.Function("f", kind, "@f: test", ("a0",), tuple(temps), tuple(locals_), loops,
                      tuple(body), tuple(cleanup))


# ------------------------------------------------------------- accepted

GOOD = [
    fn(O.AllocTensor("t0", 4), O.Return(T0)),
    fn(O.If(A0, (O.AllocTensor("t0", 4), O.Retain("t1", T0)), (O.Retain("t1", A0),)),
       O.Return(T1)),
    fn(O.Switch(A0, ((0, (O.Return(A0),)), (1, (O.Raise(O.Status.MATCH),))),
                (O.Raise(O.Status.BAD_TAG),))),
    fn(O.AllocTensor("t0", 4), O.AllocTensor("t1", 8),
       O.CallKernel("k", (O.TensorArg(A0, DType.FLOAT32),), (),
                    (O.TensorOut("t0", DType.FLOAT32), O.TensorOut("t1", DType.FLOAT32))),
       O.Release("t1"), O.Clear("t1"), O.Return(T0)),
    fn(O.Take("b0", O.Field(A0, 0)), O.SetField(A0, 0, A0), O.Release("b0"), O.Return(A0)),
    fn(O.CallFunction("t0", "f", (A0,)), O.Retain("b0", T0), O.TailJump(("b0",))),
]


@pytest.mark.parametrize("good", GOOD, ids=range(len(GOOD)))
def test_accepts(good):
    verify_function(good, known={"f"})


# ------------------------------------------------------------- rejected

BAD = {
    "undeclared": (fn(O.Return(O.Var("zz"))), "zz is not declared"),
    "use before definition": (fn(O.Return(T0)), "t0 used before definition"),
    "defined on one path only": (
        fn(O.If(A0, (O.AllocTensor("t0", 4),), ()), O.Return(T0)),
        "t0 used before definition on some path"),
    "use after release": (
        fn(O.AllocTensor("t0", 4), O.Release("t0"), O.Clear("t0"), O.Return(T0)),
        "t0 used after release"),
    "overwrite leaks": (fn(O.AllocTensor("t0", 4), O.AllocTensor("t0", 4), O.Return(T0)),
                        "t0 assigned while it may hold a reference"),
    "overwrite after a join": (
        fn(O.If(A0, (O.AllocTensor("t0", 4),), ()), O.Retain("t0", A0), O.Return(A0)),
        "t0 assigned while it may hold a reference"),
    "release twice (cleanup)": (fn(O.AllocTensor("t0", 4), O.Release("t0"), O.Return(A0)),
                                "t0 released here and again by the cleanup"),
    "release twice (body)": (
        fn(O.AllocTensor("t0", 4), O.Release("t0"), O.Release("t0"), O.Return(A0)),
        "t0 released but it may hold no reference"),
    "release of nothing": (fn(O.Release("t0"), O.Return(A0)),
                           "t0 released but it may hold no reference"),
    "clear before release": (fn(O.AllocTensor("t0", 4), O.Clear("t0"), O.Return(A0)),
                             "t0 cleared while it may hold a reference"),
    "cleanup forgets a temporary": (
        fn(O.Return(A0), cleanup=(O.Release("t0"), O.Leave())),
        "not each temporary once"),
    "cleanup releases twice": (
        fn(O.Return(A0), cleanup=(O.Release("t0"), O.Release("t0"), O.Release("t1"),
                                  O.Leave())),
        "not each temporary once"),
    "error path leaks a local": (
        fn(O.Retain("b0", A0), O.AllocTensor("t0", 4), O.Release("b0"), O.Return(T0)),
        "the exit leaks the reference b0 may hold"),
    "return leaks a local": (fn(O.Take("b0", O.Field(A0, 0)), O.Return(A0)),
                             "the exit leaks the reference b0 may hold"),
    "raise leaks on one path": (
        fn(O.If(A0, (O.Retain("b0", A0),), ()), O.Raise(O.Status.MATCH)),
        "the exit leaks the reference b0 may hold"),
    "jump with a released temporary": (
        fn(O.AllocTensor("t0", 4), O.Release("t0"), O.Retain("b0", A0), O.TailJump(("b0",))),
        "t0 released twice by the jump"),
    "jump argument not held": (fn(O.TailJump(("b0",))), "b0 is not a local holding"),
    "jump arity": (fn(O.Retain("b0", A0), O.TailJump(("b0", "b0"))),
                   "one argument per parameter"),
    "loops without a jump": (fn(O.Return(A0), loops=True), "`loops` does not match"),
    "falls off the end": (fn(O.AllocTensor("t0", 4)), "does not end on every path"),
    "unreachable": (fn(O.Return(A0), O.AllocTensor("t0", 4)), "unreachable"),
    "entry statement": (fn(O.BeginCall(), O.Return(A0)), "an entry statement"),
    "cleanup statement in the body": (fn(O.Leave(), O.Return(A0)), "a cleanup statement"),
    "kernel output not held": (
        fn(O.CallKernel("k", (), (), (O.TensorOut("t0", DType.FLOAT32),)), O.Return(A0)),
        "kernel output t0 is not a fresh tensor"),
    "unknown function": (fn(O.CallFunction("t0", "g", ()), O.Return(T0)), "no function g"),
    "unknown static": (fn(O.Return(O.StaticRef("s"))), "no static object s"),
}


@pytest.mark.parametrize("name", list(BAD))
def test_rejects(name):
    bad, message = BAD[name]
    with pytest.raises(O.ObjectIRError) as info:
        verify_function(bad, known={"f"})
    text = str(info.value)
    assert "function f" in text and message in text, text


def test_error_names_the_statement():
    with pytest.raises(O.ObjectIRError, match=r"at Return\(value=Var\(name='t0'\)\)"):
        verify_function(fn(O.Return(T0)))


def test_program_names():
    entry = fn(O.Return(A0), kind=O.FunctionKind.ENTRY)
    forward = O.ForwardCode("g", "missing", 0, "@missing as a value")
    with pytest.raises(O.ObjectIRError, match="no function missing"):
        verify_program(O.ObjectProgram((forward,), ("g",), (), entry))
    with pytest.raises(O.ObjectIRError, match="declared functions"):
        verify_program(O.ObjectProgram((), ("g",), (), entry))


# --------------------------------------------------- real programs pass

@pytest.mark.parametrize("pack", sorted(PACKS))
def test_lang_programs_verify(pack):
    with PassContext(verify=True):
        # the packs take lists the caller builds: the pool is the caller's to give
        p = plan(build(list(PACKS[pack])), "lang", pool_bytes=1 << 18)
    verify_program(p.program.objects)


# --------------------------------------------------------------- printer

def test_prints_a_loop():
    f = fn(O.Switch(A0, ((0, (O.AllocTensor("t0", 4), O.Retain("b0", T0),
                              O.TailJump(("b0",)))),),
                    (O.Return(A0),)), temps=("t0",))
    program = O.ObjectProgram((f,), ("f",), (), fn(O.Return(A0), kind=O.FunctionKind.ENTRY))
    assert print_functions("m", program)[0] == "\n".join([
        "/* @f: test */",
        "static int32_t f(aot_ctx *ctx, aot_obj *p0, aot_obj **out)",
        "{", "    int32_t st = AOT_OK;", "    aot_obj *a0 = p0;",
        "    int owned = 0;  /* the parameters are ours after a tail call */",
        "    aot_obj *t0 = NULL;", "    aot_obj *b0 = NULL;",
        "    st = aot_enter(ctx);", "    if (st != AOT_OK) {", "        return st;", "    }",
        "top:", "    switch (a0->tag) {", "    case 0: {",
        "        t0 = aot_new_tensor(ctx, 4u);", "        if (t0 == NULL) {",
        "            st = AOT_ERR_POOL;", "            goto done;", "        }",
        "        b0 = aot_retain(t0);", "        aot_release(ctx, t0);", "        t0 = NULL;",
        "        if (owned) {", "            aot_release(ctx, a0);", "        }",
        "        a0 = b0;", "        owned = 1;", "        goto top;", "        break;",
        "    }", "    default: {", "        *out = aot_retain(a0);", "        goto done;",
        "        break;", "    }", "    }",
        "done:", "    aot_release(ctx, t0);", "    if (owned) {", "        aot_release(ctx, a0);",
        "    }", "    aot_leave(ctx);", "    return st;", "}"])


def test_a_main_returning_a_global_compiles(tmp_path):
    """``@main`` whose body is a global: its result type comes from the
    function's type (type inference leaves a global unannotated); it was
    refused with 'the type None cannot be compiled to C'."""
    import aot
    src = ("def @aux(%x: Tensor[(), int32]) -> Tensor[(), int32] { %x }\n"
           "def @main() -> fn(Tensor[(), int32]) -> Tensor[(), int32] { @aux }")
    fn = aot.load(aot.compile(aot.parse(src), tmp_path, name="global_result"))
    assert str(fn()) == "<compiled closure>"


NON_RETURNING = {
    "self_tail_call": "def @f(%x: int32) -> int32 { @f(%x) }\n"
                      "def @main(%x: int32) -> int32 { @f(%x) }",
    "let_bound_loop": "def @main(%x: int32) -> int32 {\n"
                      "  let %g = fn (%y: int32) -> int32 { %g(%y) }; %g(%x) }",
    "failing_match": "def @f(%l: List[int32]) -> int32 {\n"
                     "  match? (%l) { Cons(_, %t) => @f(%t) } }\n"
                     "def @main(%l: List[int32]) -> int32 { @f(%l) }",
}


@pytest.mark.parametrize("name", sorted(NON_RETURNING))
def test_functions_that_never_return_compile_warning_free(tmp_path, name):
    """Every path of @f is a self tail call or a failing match: no `done:`
    label is jumped to and `out` is never written (gcc -Werror refused
    both: unused label, unused parameter)."""
    import aot
    from aot.diagnostics import DiagnosticError
    from aot.values import ConstructorValue

    mod = aot.parse(NON_RETURNING[name])
    fn = aot.load(aot.compile(mod, tmp_path, name=name, pool_bytes=4096))   # takes a list
    if name == "failing_match":      # the others loop forever, as the interpreter does
        nil = ConstructorValue(mod.constructor("Nil"), ())
        with pytest.raises(DiagnosticError, match="match"):
            fn(nil)
