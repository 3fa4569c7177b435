"""The Relay corpus through the whole-language C backend (issue 5).

Every tier-A program with a ``@main`` (tests/e2e/test_corpus_c.py) and every
tier-A global function of a program without one (here), and the standard
library of tier L (here, with hand-written mains), is compiled to C and its
result compared with the interpreter's.

*Entries.*  An entry is a self-contained module text whose ``@main`` is
monomorphic and takes only values Python can pass in (tensors, tuples, ADT
values).  Where the program's function is not like that, a wrapper
``@main`` calls it (:func:`wrap`):

* type parameters are instantiated, with ``Tensor[(), float32]`` first and
  ``Tensor[(1, 2, 3, 3), float32]`` when the first does not type-check
  (an NCHW operator such as ``nn.global_avg_pool2d``);
* parameters Python cannot pass (closures, references, ADTs with closure
  fields) are built in Relay by :func:`build_expr`: a closure returns its
  first argument of the result type, or zeros of it; a reference holds
  zeros; an ADT value is its constructor with the fewest fields among
  those that need nothing recursive (so an unfold's step function says
  `None` and stops);
* a function-typed result is applied to further parameters of the wrapper
  (a closure coming back from C is opaque, so it is called in C instead).

A program whose types mention a dynamic dimension (``?``) is the only one
the backend may refuse: with a DiagnosticError naming the dynamic shape.
A global of a program without a main that the interpreter cannot run on
its random arguments (it diverges, or fails at run time) is skipped with
the reason printed and counted; a run-time failure must also be a
DiagnosticError of the same kind from the C.

*Packing.*  A C build costs about a second, so entries share builds: each
entry's globals are renamed ``c<i>_<name>`` (globals identical to the
prelude's, with only such globals below them, are shared), type
definitions are shared by name when identical (an entry whose types clash
with a pack's goes to another pack), and the packed ``@main`` returns the
tuple of all entries' results.  If a pack does not build or run, its
halves are tried again, so a failure ends up naming its culprit, compiled
alone.
"""

from __future__ import annotations

import functools
import re
import zlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

import aot
from aot.ir.expr import Call, Function, Tuple, Var
from aot.ir.module import IRModule
from aot.ir.printer import _Printer, print_module, type_def_text
from aot.ir.types import (FuncType, RefType, TensorType, TupleType, Type, TypeCall, TypeVar,
                          free_type_vars, substitute, type_children)
from c_harness import assert_values_match, compile_and_load
from test_corpus_semantics import (CORPUS, diverges, has_main, ill_typed, load, random_value,
                                   records)

pytestmark = pytest.mark.skipif(not CORPUS.exists(), reason="../shared/corpus is not beside the repo")

HEADER = '#[version = "0.0.5"]\n'
INSTANCES = ("Tensor[(), float32]", "Tensor[(1, 2, 3, 3), float32]")
PACK_SIZE = 40
#: (the interpreter's message, the C's) for the run-time failures both report.
RUNTIME_ERRORS = {"no clause matches": "no clause matched"}


# ------------------------------------------------------------------ types

def walk(t: Type) -> list[Type]:
    out, stack = [], [t]
    while stack:
        x = stack.pop()
        out.append(x)
        stack.extend(type_children(x))
    return out


def is_dynamic(t: Type) -> bool:
    return any(isinstance(x, TensorType) and not x.is_static for x in walk(t))


def _ctor_fields(mod: IRModule, t: TypeCall) -> list[tuple[Any, list[Type]]]:
    data = mod.type_definitions[t.func]
    mapping = dict(zip(data.type_vars, t.args))
    return [(c, [substitute(f, mapping) for f in c.inputs]) for c in data.constructors]


def passable(t: Type, mod: IRModule) -> bool:
    """Whether Python can pass a value of type ``t`` into compiled C (no
    closure or reference anywhere inside, through ADT fields too)."""
    seen: set[Type] = set()
    stack = [t]
    while stack:
        x = stack.pop()
        if x in seen:
            continue
        seen.add(x)
        if isinstance(x, (FuncType, RefType, TypeVar)):
            return False
        if isinstance(x, TypeCall):
            for _, fields in _ctor_fields(mod, x):
                stack.extend(fields)
        stack.extend(c for c in type_children(x) if not isinstance(x, TypeCall))
    return True


def _mentions(t: Type, call: TypeCall) -> bool:
    return any(isinstance(x, TypeCall) and x.func == call.func for x in walk(t))


def build_expr(t: Type, mod: IRModule) -> str:
    """Relay text of a value of type ``t`` (see the module docstring)."""
    if isinstance(t, TensorType):
        assert t.is_static, t
        return f'zeros(shape=[{", ".join(map(str, t.shape))}], dtype="{t.dtype.value}")'
    if isinstance(t, TupleType):
        items = [build_expr(f, mod) for f in t.fields]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    if isinstance(t, RefType):
        return f"ref({build_expr(t.value, mod)})"
    if isinstance(t, FuncType):
        assert not t.type_params, t
        params = [f"%x{i}: {a}" for i, a in enumerate(t.arg_types)]
        same = [i for i, a in enumerate(t.arg_types) if a == t.ret_type]
        body = f"%x{same[0]}" if same else build_expr(t.ret_type, mod)
        return f"fn ({', '.join(params)}) {{ {body} }}"
    if isinstance(t, TypeCall):
        ctors = sorted(_ctor_fields(mod, t), key=lambda cf: len(cf[1]))   # nullary first
        ctor, fields = next(((c, f) for c, f in ctors if not any(_mentions(x, t) for x in f)),
                            ctors[0])
        if not fields:
            return ctor.name
        return f"{ctor.name}({', '.join(build_expr(f, mod) for f in fields)})"
    raise AssertionError(f"no value of type {t}")


@functools.cache
def instance(text: str) -> Type:
    mod = aot.infer_types(aot.parse(f"def @main(%x: {text}) {{ %x }}"))
    return mod["main"].params[0].checked_type


# ------------------------------------------------------------------ entries

@dataclass
class Entry:
    name: str                      # the corpus id, and `@global` for a no-main program
    text: str                      # a whole module; its @main is what runs
    prelude: bool | None = None    # as aot.parse's option
    note: str = ""                 # how the entry was made (wrapper, instance)


def needs_wrapper(fn: Function, mod: IRModule) -> bool:
    t = fn.checked_type
    return bool(fn.type_params) or isinstance(t.ret_type, FuncType) or not all(
        passable(p.checked_type, mod) for p in fn.params)


def wrap(mod: IRModule, text: str, callee: str, inst: Type, annotate: bool = False) -> str:
    """``text`` (the module ``mod`` as Relay text) plus a wrapper ``@main``
    calling ``@callee`` (``@main`` itself is renamed ``@orig`` first);
    ``annotate``: give the wrapper its result type (the instance of the
    callee's), for results no argument determines."""
    fn = mod[callee]
    mapping: dict[Type, Type] = {tv: inst for tv in fn.type_params}
    params: list[str] = []

    def arguments(types: tuple[Type, ...]) -> str:
        args = []
        for t in types:
            t = substitute(t, mapping)
            if passable(t, mod):
                params.append(f"%a{len(params)}: {t}")
                args.append(f"%a{len(params) - 1}")
            else:
                args.append(build_expr(t, mod))
        return ", ".join(args)

    if callee == "main":
        text = re.sub(r"@main\b", "@orig", text)
        callee = "orig"
    call = f"@{callee}({arguments(tuple(p.checked_type for p in fn.params))})"
    ret = fn.checked_type.ret_type
    while isinstance(ret, FuncType):
        mapping.update({tv: inst for tv in ret.type_params})
        call = f"({call})({arguments(ret.arg_types)})"
        ret = ret.ret_type
    result = f" -> {substitute(ret, mapping)}" if annotate else ""
    return f"{text}\ndef @main({', '.join(params)}){result} {{\n  {call}\n}}\n"


def entry_for(rec: dict, mod: IRModule, text: str, callee: str) -> Entry:
    """The entry running ``@callee`` of the typed corpus module ``mod``."""
    name = rec["id"] if callee == "main" else f"{rec['id']}:@{callee}"
    fn = mod[callee]
    if callee == "main" and not needs_wrapper(fn, mod):
        return Entry(name, text)
    last: Any = None
    polymorphic = fn.type_params or any(
        isinstance(t, FuncType) and t.type_params for t in walk(fn.checked_type))
    for inst in INSTANCES if polymorphic else INSTANCES[:1]:
        for annotate in (False, True):
            wrapped = wrap(mod, text, callee, instance(inst), annotate)
            try:
                main = aot.infer_types(aot.parse(wrapped, name))["main"]
            except aot.DiagnosticError as e:
                last = e
                continue
            if main.type_params or free_type_vars(main.checked_type):
                last = f"the wrapper is polymorphic: {main.checked_type}"
                continue
            return Entry(name, wrapped, note=f"wrapper, type parameters := {inst}"
                         if fn.type_params else "wrapper")
    raise AssertionError(f"{name}: no instance of {fn.checked_type} type-checks: {last}")


def source_globals(rec: dict) -> list[str]:
    text = (CORPUS / rec["id"]).read_text()
    return list(dict.fromkeys(re.findall(r"\bdef\s+@([A-Za-z_]\w*)", text)))


def source_types(rec: dict, mod: IRModule) -> list:
    text = (CORPUS / rec["id"]).read_text()
    names = set(re.findall(r"\btype\s+([A-Za-z_]\w*)", text))
    return [d for h, d in mod.type_definitions.items() if h.name in names]


def constructor_entries(rec: dict, mod: IRModule, text: str) -> list[Entry]:
    """For a program that only defines types: one entry per constructor,
    building a value of it from the entry's parameters."""
    out = []
    for data in source_types(rec, mod):
        inst = instance(INSTANCES[0])
        for ctor in data.constructors:
            fields = [substitute(f, {tv: inst for tv in data.type_vars}) for f in ctor.inputs]
            params = ", ".join(f"%a{i}: {f}" for i, f in enumerate(fields))
            ret = f"{data.header.name}" + (
                f"[{', '.join(str(inst) for _ in data.type_vars)}]" if data.type_vars else "")
            body = ctor.name if not fields else \
                f"{ctor.name}({', '.join(f'%a{i}' for i in range(len(fields)))})"
            out.append(Entry(f"{rec['id']}:{ctor.name}",
                             f"{text}\ndef @main({params}) -> {ret} {{\n  {body}\n}}\n",
                             note="constructor"))
    return out


# ------------------------------------------------------------------ runs

@dataclass
class Prepared:
    entry: Entry
    mod: IRModule                  # parsed, untyped
    ptypes: list[Type]
    args: list[Any]
    want: Any = None
    error: str | None = None       # the interpreter's run-time failure


@dataclass
class Report:
    what: str
    matched: list[str] = field(default_factory=list)
    dynamic: list[str] = field(default_factory=list)
    errors_matched: list[str] = field(default_factory=list)
    skipped: dict[str, list[str]] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)

    def skip(self, reason: str, name: str) -> None:
        self.skipped.setdefault(reason, []).append(name)

    def summary(self) -> str:
        lines = [f"{self.what}: {len(self.matched)} compiled and matched the interpreter, "
                 f"{len(self.errors_matched)} failed at run time in C as in the interpreter, "
                 f"{len(self.dynamic)} refused (dynamic shape), "
                 f"{sum(map(len, self.skipped.values()))} skipped, "
                 f"{len(self.failures)} FAILED"]
        for reason, names in sorted(self.skipped.items()):
            lines.append(f"  skipped ({reason}): {len(names)}: {', '.join(names)}")
        lines.extend(f"  refused (dynamic shape): {n}" for n in self.dynamic)
        return "\n".join(lines)

    def check(self) -> None:
        print(self.summary())
        assert not self.failures, "\n\n".join(self.failures)


def prepare(entry: Entry, report: Report) -> Prepared | None:
    """Type-check ``entry``, draw its arguments and interpret it; None if
    the entry is refused (dynamic shapes) or skipped."""
    mod = aot.parse(entry.text, entry.name, prelude=entry.prelude)
    typed = aot.infer_types(mod)
    main = typed["main"]
    if is_dynamic(main.checked_type):
        check_dynamic(entry, mod, report)
        return None
    rng = np.random.default_rng(zlib.crc32(entry.name.encode()))
    ptypes = [p.checked_type for p in main.params]
    args = [random_value(t, rng, typed) for t in ptypes]
    prep = Prepared(entry, mod, ptypes, args)
    try:
        prep.want = aot.interpret(typed, *args)
    except aot.DiagnosticError as e:
        prep.error = e.message
    return prep


def check_dynamic(entry: Entry, mod: IRModule, report: Report) -> None:
    try:
        compile_and_load(mod, name="dynamic")
    except aot.DiagnosticError as e:
        if "dynamic shape" in e.message:
            report.dynamic.append(entry.name)
            return
        report.failures.append(f"{entry.name}: refused without naming the dynamic shape: "
                               f"{e}\n{entry.text}")
        return
    except Exception as e:  # noqa: BLE001  (a crash is reported, with the program)
        report.failures.append(f"{entry.name}: crashes on a dynamic shape: "
                               f"{type(e).__name__}: {e}\n{entry.text}")
        return
    report.failures.append(f"{entry.name}: has a dynamic shape but compiled\n{entry.text}")


@functools.cache
def prelude_defs() -> dict[str, str]:
    mod = aot.prelude()
    printer = _Printer(False)
    return {gv.name: printer.print_def(gv, f) for gv, f in mod.functions.items()}


@dataclass
class Pack:
    types: dict[str, str] = field(default_factory=dict)        # type name -> definition
    ctors: dict[str, str] = field(default_factory=dict)        # constructor -> type name
    shared: dict[str, str] = field(default_factory=dict)       # prelude globals
    defs: list[str] = field(default_factory=list)
    preps: list[Prepared] = field(default_factory=list)

    def admit(self, prep: Prepared) -> bool:
        """Add ``prep`` (its globals renamed ``c<i>_...``) unless its type
        definitions clash with the pack's."""
        mod = prep.mod
        types = {d.header.name: type_def_text(d) for d in mod.type_definitions.values()}
        ctors = {c.name: d.header.name for d in mod.type_definitions.values()
                 for c in d.constructors}
        if any(self.types.get(n, t) != t for n, t in types.items()) or any(
                self.ctors.get(c, n) != n for c, n in ctors.items()):
            return False
        i = len(self.preps)
        printer = _Printer(False)
        texts = {gv.name: printer.print_def(gv, f) for gv, f in mod.functions.items()}
        assert not printer.metadata_section(), prep.entry.name
        refs = {n: set(re.findall(r"@(\w+)", t)) & texts.keys() for n, t in texts.items()}
        pre = prelude_defs()
        shared = {n for n, t in texts.items() if pre.get(n) == t}
        while True:
            keep = {n for n in shared if refs[n] <= shared}
            if keep == shared:
                break
            shared = keep
        rename = {n: f"c{i}_{n}" for n in texts if n not in shared}
        self.types.update(types)
        self.ctors.update(ctors)
        for n in shared:
            self.shared[n] = texts[n]
        for n, t in texts.items():
            if n not in shared:
                self.defs.append(re.sub(r"@(\w+)\b",
                                        lambda m: "@" + rename.get(m.group(1), m.group(1)), t))
        self.preps.append(prep)
        return True

    def module(self) -> IRModule:
        text = HEADER + "\n\n".join([*self.types.values(), *self.shared.values(), *self.defs])
        mod = aot.parse(text, "corpus_pack.relay", prelude=False)
        params: list[Var] = []
        calls = []
        for i, prep in enumerate(self.preps):
            fresh = tuple(Var(f"c{i}_a{k}", t) for k, t in enumerate(prep.ptypes))
            params.extend(fresh)
            calls.append(Call(mod.get_global_var(f"c{i}_main"), fresh))
        mod.add("main", Function(tuple(params), Tuple(tuple(calls))))
        return mod


def _describe(prep: Prepared) -> str:
    note = f" ({prep.entry.note})" if prep.entry.note else ""
    return f"{prep.entry.name}{note}:\n{prep.entry.text}"


def pool_in_use(fn: Any) -> int:
    """Bytes of the object pool in use (dataflow models have none)."""
    return fn.pool_in_use() if hasattr(fn, "pool_in_use") else 0


def run_alone(prep: Prepared, report: Report, **options: Any) -> None:
    """Compile ``prep`` by itself and compare (or check its run-time error)."""
    try:
        fn = compile_and_load(prep.mod, name="alone", **options)
    except Exception as e:  # noqa: BLE001  (any failure to build is reported)
        report.failures.append(f"does not compile: {_describe(prep)}\n{type(e).__name__}: {e}")
        return
    try:
        got = fn(*prep.args)
    except aot.DiagnosticError as e:
        if prep.error is not None:
            kind = next((c for i, c in RUNTIME_ERRORS.items() if i in prep.error), None)
            if kind is not None and kind in e.message:
                report.errors_matched.append(prep.entry.name)
                return
        report.failures.append(f"fails in C: {_describe(prep)}\nC: {e}\n"
                               f"interpreter: {prep.error or 'ok'}")
        return
    except Exception as e:  # noqa: BLE001
        report.failures.append(f"crashes in C: {_describe(prep)}\n{type(e).__name__}: {e}")
        return
    if prep.error is not None:
        report.failures.append(f"C returned a value where the interpreter failed "
                               f"({prep.error}): {_describe(prep)}")
        return
    compare(prep, got, report)
    if pool_in_use(fn):
        report.failures.append(f"{pool_in_use(fn)} pool bytes in use after the call: "
                               f"{_describe(prep)}")


def compare(prep: Prepared, got: Any, report: Report) -> None:
    try:
        assert_values_match(got, prep.want, prep.entry.name)
    except AssertionError as e:
        report.failures.append(f"wrong result: {_describe(prep)}\n{e}")
        return
    report.matched.append(prep.entry.name)


def run_packs(preps: list[Prepared], report: Report, tag: str, **options: Any) -> None:
    """Compile the entries in packs and compare every one (see the module
    docstring); entries the interpreter fails on are compiled alone."""
    packs: list[Pack] = []
    for prep in preps:
        if prep.error is not None:
            if not any(i in prep.error for i in RUNTIME_ERRORS):
                report.skip(f"interpreter fails: {prep.error.splitlines()[0]}", prep.entry.name)
            else:
                run_alone(prep, report, **options)
            continue
        target = next((p for p in packs if len(p.preps) < PACK_SIZE and p.admit(prep)), None)
        if target is None:
            packs.append(Pack())
            assert packs[-1].admit(prep)
    for k, pack in enumerate(packs):
        run_pack(pack.preps, report, f"{tag}{k}", options)


def run_pack(preps: list[Prepared], report: Report, name: str, options: dict) -> None:
    """One build for ``preps``; if it fails, each half is tried again, so a
    culprit ends up compiled alone (and named) in a few builds."""
    if len(preps) == 1:
        run_alone(preps[0], report, **options)
        return
    pack = Pack()
    assert all(pack.admit(p) for p in preps)
    try:
        fn = compile_and_load(pack.module(), name=name, **options)
        got = fn(*[a for p in preps for a in p.args])
    except Exception:  # noqa: BLE001  (the halves name the culprit)
        half = len(preps) // 2
        run_pack(preps[:half], report, name + "a", options)
        run_pack(preps[half:], report, name + "b", options)
        return
    if pool_in_use(fn):
        report.failures.append(f"pack {name}: {pool_in_use(fn)} pool bytes in use after the call")
    assert isinstance(got, tuple) and len(got) == len(preps)
    for prep, g in zip(preps, got):
        compare(prep, g, report)


def run_entries(entries: list[Entry], report: Report, tag: str, **options: Any) -> None:
    """Prepare ``entries`` and run them in packs; ``options`` go to
    aot.compile."""
    preps = [p for p in (prepare(e, report) for e in entries) if p is not None]
    run_packs(preps, report, tag, **options)


# ================================================================== tier A without main

def no_main_entries(report: Report) -> list[Entry]:
    entries = []
    for rec in records("A"):
        if ill_typed(rec) or has_main(rec):
            continue
        if diverges(rec):
            report.skip("diverges (manifest)", rec["id"])
            continue
        parsed = load(rec)
        mod = aot.infer_types(parsed)
        text = print_module(parsed)
        names = [g for g in source_globals(rec) if g in mod]
        if not names:
            made = constructor_entries(rec, mod, text)
            entries.extend(made)
            if not made:
                report.skip("defines no function and no constructor", rec["id"])
            continue
        for g in names:
            fn = mod[g]
            if any(is_dynamic(p.checked_type) for p in fn.params):
                entries.append(Entry(f"{rec['id']}:@{g}", text))   # refused below
                continue
            entries.append(entry_for(rec, mod, text, g))
    return entries


def test_tier_a_globals_without_main_compile_and_match():
    report = Report("tier A globals of programs without main "
                    "(+ constructors of type-only programs)")
    run_entries(no_main_entries(report), report, "corpusnomain")
    assert report.matched
    report.check()


def test_wrapper_builds_closure_reference_and_adt_arguments():
    """No tier-A main takes a closure; the wrapper machinery that the
    corpus globals (and tier L) rely on, on a main that takes everything
    Python cannot pass."""
    text = HEADER + """
type Cell { Fun(fn (float32) -> float32), Val(float32) }
def @main[A](%f: fn (float32, int32) -> float32, %g: fn (Option[int32]) -> List[A],
             %r: Ref[int32], %c: Cell, %x: float32, %k: A) {
  ref_write(%r, ref_read(%r) + 2);
  (%f(%x, 3), @length(%g(Some(1))), ref_read(%r), %k,
   match (%c) { Fun(%h) => %h(%x), Val(%v) => %v })
}
"""
    mod = aot.infer_types(aot.parse(text))
    entry = entry_for({"id": "synthetic"}, mod, text, "main")
    assert "fn (%x0: float32, %x1: int32) { %x0 }" in entry.text, entry.text
    assert "ref(zeros(shape=[], dtype=\"int32\"))" in entry.text, entry.text
    report = Report("synthetic wrapper")
    run_entries([entry], report, "wrapper")
    assert report.matched == ["synthetic"]
    report.check()


# ================================================================== tier L

def _std(name: str) -> str:
    return (CORPUS / "std" / name).read_text()


PRELUDE_MAINS = {
    "lists": """
def @main(%xs: List[int32], %ys: List[int32]) {
  (@map(fn (%x: int32) { %x * 2 }, %xs),
   @foldl(fn (%a: int32, %b: int32) { %a - %b }, 100, %xs),
   @foldr(fn (%a: int32, %b: int32) { %a - %b }, 100, %xs),
   @concat(%xs, %ys),
   @filter(fn (%x: int32) { %x > 2 }, %xs),
   @zip(%xs, %ys),
   @rev(%xs),
   @sum(%ys),
   @length(%ys))
}""",
    "partial": """
def @main(%xs: List[int32], %v: int32) {
  let %ne = Cons(%v, %xs);
  (@hd(%ne), @tl(%ne), @nth(%ne, @length(%ne) - 1), @nth(%ne, 0),
   @update(%ne, @length(%ne) - 1, 42), @update(%ne, 0, -1),
   @foldr1(fn (%a: int32, %b: int32) { %a * 3 - %b }, %ne))
}""",
    "accum": """
def @main(%xs: List[float32]) {
  (@map_accuml(fn (%acc: float32, %x: float32) { (%acc + %x, %acc * %x) }, 1f, %xs),
   @map_accumr(fn (%acc: float32, %x: float32) { (%acc + %x, %acc * %x) }, 1f, %xs))
}""",
    "unfold": """
def @main(%n: int32) {
  let %step = fn (%k: int32) -> Option[(int32, float32)] {
    if (%k > 0) { Some((%k - 1, cast(%k, dtype="float32") * 0.5f)) } else { None }
  };
  (@unfoldr(%step, %n + 3), @unfoldl(%step, %n + 3), @unfoldr(%step, 0))
}""",
    "functions": """
def @main(%x: float32, %k: int32) {
  (@id(%x),
   @compose(fn (%a: float32) { %a * 2f }, fn (%b: float32) { %b + 1f })(%x),
   @flip(fn (%a: float32, %b: int32) { %a - cast(%b, dtype="float32") })(%k, %x),
   @iterate(fn (%a: float32) { %a * 3f }, %k)(%x),
   @iterate(fn (%a: float32) { %a * 3f }, 0)(%x))
}""",
    "trees": """
def @main(%t: Tree[int32]) {
  (@tmap(fn (%x: int32) { %x + 1 }, %t), @size(%t),
   @size(Rose(1f, Cons(Rose(2f, Nil), Cons(Rose(3f, Cons(Rose(4f, Nil), Nil)), Nil)))))
}""",
    "tensor_lists": """
def @main(%xs: List[Tensor[(2, 3), float32]], %w: Tensor[(3, 4), float32]) {
  (@foldl(fn (%a: Tensor[(2, 3), float32], %b: Tensor[(2, 3), float32]) { %a + %b },
          zeros(shape=[2, 3], dtype="float32"), %xs),
   @map(fn (%x: Tensor[(2, 3), float32]) { nn.relu(nn.matmul(%x, %w)) }, %xs),
   @zip(@rev(%xs), @map(fn (%x: Tensor[(2, 3), float32]) { sum(%x) }, %xs)))
}""",
}

NAT_MAINS = {
    "nat": """
def @main(%n: nat, %m: nat, %x: int32) {
  let %l = Cons(%x, Cons(%x + 1, Cons(%x + 2, Nil)));
  (@nat_double(%n), @nat_add(%n, %m), @nat_nth(%l, succ(zero)), @nat_nth(%l, zero),
   @nat_update(%l, succ(succ(zero)), 7), @nat_iterate(fn (%y: int32) { %y * 2 + 1 }, %n)(%x),
   @length(@map(fn (%y: int32) { %y }, %l)))
}""",
}

GRADIENT_MAINS = {
    "gradcell": """
def @main(%x: float32, %y: float32) {
  let %mul = fn (%a: float32, %b: float32) { %a * %b };
  let %add = fn (%a: float32, %b: float32) { %a + %b };
  let %one = One(fn () { 1f });
  let %zero = Zero(fn () { 0f });
  (@FromGradCell(Raw(%x)), @FromGradCell(%one), @FromGradCell(%zero),
   @FromGradCell(@MultiplyGradCell(%mul, Raw(%x), Raw(%y))),
   @FromGradCell(@MultiplyGradCell(%mul, %one, Raw(%y))),
   @FromGradCell(@MultiplyGradCell(%mul, Raw(%x), %zero)),
   @FromGradCell(@MultiplyGradCell(%mul, Raw(%x), %one)),
   @FromGradCell(@AddGradCell(%add, Raw(%x), Raw(%y))),
   @FromGradCell(@AddGradCell(%add, %zero, Raw(%y))),
   @FromGradCell(@AddGradCell(%add, Raw(%x), %zero)),
   @FromGradCell(@AddGradCell(%add, %one, %one)))
}""",
}


def tier_l_entries() -> list[Entry]:
    prelude, nat, gradient = _std("prelude.rly"), _std("nat.rly"), _std("gradient.rly")
    out = [Entry(f"std/prelude.rly:{k}", prelude + m, prelude=False)
           for k, m in PRELUDE_MAINS.items()]
    nat = nat.replace(HEADER.strip(), "")              # one version header per module
    out += [Entry(f"std/nat.rly:{k}", prelude + nat + m, prelude=False)
            for k, m in NAT_MAINS.items()]
    out += [Entry(f"std/gradient.rly:{k}", gradient + m, prelude=False)
            for k, m in GRADIENT_MAINS.items()]
    return out


#: The functions of the standard library the mains above must call.
STD_FUNCTIONS = {"prelude.rly": PRELUDE_MAINS, "nat.rly": NAT_MAINS,
                 "gradient.rly": GRADIENT_MAINS}


@pytest.mark.parametrize("lib", sorted(STD_FUNCTIONS))
def test_tier_l_mains_call_every_function(lib):
    defined = set(re.findall(r"\bdef\s+@(\w+)", _std(lib)))
    called = set(re.findall(r"@(\w+)\(", "".join(STD_FUNCTIONS[lib].values())))
    assert defined and defined <= called, sorted(defined - called)


def test_tier_l_compiles_and_matches():
    report = Report("tier L (std/prelude.rly, nat.rly, gradient.rly; core.rly defines only "
                    "an extern type)")
    run_entries(tier_l_entries(), report, "corpusstd")
    assert len(report.matched) == len(tier_l_entries())
    report.check()


def test_tier_l_partial_functions_fail_cleanly_in_c():
    """@hd of an empty list reaches no clause: the interpreter and the C both
    say so with a DiagnosticError, and the next call works."""
    entry = Entry("std/prelude.rly:hd_nil", _std("prelude.rly") + """
def @main(%xs: List[int32]) {
  @hd(@filter(fn (%x: int32) { %x > 100 }, %xs))
}""", prelude=False)
    mod = aot.parse(entry.text, entry.name, prelude=False)
    xs = random_value(aot.infer_types(mod)["main"].params[0].checked_type,
                      np.random.default_rng(1), aot.infer_types(mod))
    with pytest.raises(aot.DiagnosticError, match="no clause matches"):
        aot.interpret(mod, xs)
    fn = compile_and_load(mod, name="hdnil")
    with pytest.raises(aot.DiagnosticError, match="no clause matched"):
        fn(xs)
    assert fn.pool_in_use() == 0


def tier_l_global_entries(report: Report) -> list[Entry]:
    """Every global of the standard library through a generated wrapper
    (closure arguments built in Relay, type parameters instantiated)."""
    entries = []
    for rec in records("L"):
        parsed = load(rec)
        mod = aot.infer_types(parsed)
        text = print_module(parsed)
        names = [g for g in source_globals(rec) if g in mod]
        if not names:
            report.skip("defines no function", rec["id"])
        for g in names:
            entry = entry_for(rec, mod, text, g)
            entry.prelude = False
            entries.append(entry)
    return entries


def test_tier_l_globals_through_generated_wrappers():
    """Partial functions (@hd of an empty list, ...) fail in the interpreter
    on some random arguments; the C must fail the same way."""
    report = Report("tier L globals through generated wrappers")
    entries = tier_l_global_entries(report)
    run_entries(entries, report, "corpusstdg")
    assert len(report.matched) + len(report.errors_matched) == len(entries)
    report.check()
