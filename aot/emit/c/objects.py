"""The object IR (:mod:`aot.emit.objects.ir`) printed as C over
``runtime_c/aot_runtime.h``.

Design note
-----------
One statement, one fixed piece of C: the printer decides nothing the IR
does not say.  Every exit to ``done`` is ``st = <status>; goto done;``
(allocations and calls test their result first); ``done:`` prints the
function's cleanup and ``return st;`` (the label only when some statement
jumps to it: a function whose every path is a self tail call has none, and
one that never returns gets ``(void)out;``).  A :class:`~aot.emit.objects.ir.TailJump`
prints the release of every temporary (each set back to NULL), the
release of the parameters when they are owned, the parameter assignment
and ``goto top;``.  What C compilers would warn about is known from the
IR: a parameter no statement mentions gets ``(void)aN;``, so does
``self`` in closure code that never reads it, and ``args`` in closure
code without parameters.  Dtypes are spelled by :mod:`.types`.
"""

from __future__ import annotations

from typing import Sequence

from ..objects import ir as O
from ..objects.walk import iter_stmts, stmt_values, value_vars
from .types import c_storage_type

__all__ = ["print_statics", "print_prototypes", "print_functions", "print_entry_body"]

_INDENT = "    "
_STATUS = {O.Status.MATCH: "st = AOT_ERR_MATCH;",
           O.Status.BAD_TAG: "st = AOT_ERR_VALUE;  /* a tag the type does not have */"}
_CODE_PARAMS = "aot_ctx *ctx, aot_obj *self, aot_obj *const *args, aot_obj **out"


def spell(v: O.Value) -> str:
    """A value as a C expression."""
    if isinstance(v, O.Var):
        return v.name
    if isinstance(v, O.Field):
        return f"{spell(v.base)}->fields[{v.index}]"
    if isinstance(v, O.StaticRef):
        return f"{v.symbol}_ref" if v.indirect else f"(&{v.symbol})"
    assert isinstance(v, O.Deref), v
    return f"*{v.pointer}"


def _kind(kind: O.CellKind) -> str:
    return f"AOT_KIND_{kind.name}"


# ------------------------------------------------------------ statics

def _static(model: str, s: O.StaticObject) -> str:
    payload = ("NULL" if s.data is None and s.code is None else
               f".code = {s.code}" if s.code is not None else f"{model}_{s.data}")
    text = (f"/* {s.comment} */\nstatic aot_obj {s.symbol} = {{0u, (uint8_t){_kind(s.kind)}, "
            f"0u, {s.tag}u, 0u, 0u, {s.nbytes}u, {{{payload}}}}};")
    if s.indirect:
        text += f"\nstatic aot_obj *volatile {s.symbol}_ref = &{s.symbol};"
    return text


def print_statics(model: str, program: O.ObjectProgram) -> tuple[str, ...]:
    return tuple(_static(model, s) for s in program.statics)


# ---------------------------------------------------------- prototypes

def _signature(code: O.Code) -> str:
    if isinstance(code, O.Function) and code.kind is O.FunctionKind.GLOBAL:
        params = ", ".join(["aot_ctx *ctx", *(f"aot_obj *p{i}" for i in range(len(code.params))),
                            "aot_obj **out"])
    else:
        params = _CODE_PARAMS
    return f"static int32_t {code.name}({params})"


def print_prototypes(program: O.ObjectProgram) -> tuple[str, ...]:
    codes = {f.name: f for f in program.functions}
    return tuple(_signature(codes[name]) + ";" for name in program.declared)


# ----------------------------------------------------------- functions

def _forward(code: O.ForwardCode) -> list[str]:
    args = ", ".join(["ctx", *(f"args[{i}]" for i in range(code.arity)), "out"])
    return ["(void)self;", *(["(void)args;"] if code.arity == 0 else []),
            f"return {code.target}({args});"]


def _constructor(code: O.ConstructorCode) -> list[str]:
    return ["aot_obj *o;", "(void)self;",
            f"o = aot_new_cell(ctx, AOT_KIND_ADT, {code.tag}u, {code.arity}u);",
            "if (o == NULL) {", f"{_INDENT}return AOT_ERR_POOL;", "}",
            *(f"o->fields[{i}] = aot_retain(args[{i}]);" for i in range(code.arity)),
            "*out = o;", "return AOT_OK;"]


def _print_code(model: str, code: O.Code) -> str:
    if isinstance(code, O.Function):
        return _FunctionPrinter(model, code).function()
    body = _forward(code) if isinstance(code, O.ForwardCode) else _constructor(code)
    return (f"/* {code.comment} */\n{_signature(code)}\n{{\n"
            + "".join(f"{_INDENT}{line}\n" for line in body) + "}")


def print_functions(model: str, program: O.ObjectProgram) -> tuple[str, ...]:
    return tuple(_print_code(model, f) for f in program.functions)


def print_entry_body(model: str, entry: O.Function) -> tuple[str, ...]:
    """The body of ``<model>_run_ctx`` (its context is the parameter
    ``context``), unindented (the template indents it)."""
    return tuple(_FunctionPrinter(model, entry, depth=0).entry_lines())


def _mentioned(fn: O.Function) -> set[str]:
    """The locals the body reads, and the parameters a tail jump assigns."""
    names = {n for s in iter_stmts(fn.body) for v in stmt_values(s) for n in value_vars(v)}
    return names | set(fn.params) if fn.loops else names


class _FunctionPrinter:
    def __init__(self, model: str, fn: O.Function, depth: int = 1) -> None:
        self.model = model
        self.fn = fn
        self.depth = depth
        self.lines: list[str] = []
        #: whether a printed statement jumps to ``done`` (a function whose
        #: every path is a self tail call has no such exit: no label then)
        self.exits = False

    def line(self, text: str) -> None:
        self.lines.append(_INDENT * self.depth + text)

    def nested(self, lines: Sequence[str]) -> None:
        for text in lines:
            self.line(text)

    # ------------------------------------------------------------ frame

    def _head(self) -> list[str]:
        fn = self.fn
        src = "p{}" if fn.kind is O.FunctionKind.GLOBAL else "args[{}]"
        head = ["int32_t st = AOT_OK;"]
        head += [f"aot_obj *{p} = {src.format(i)};" for i, p in enumerate(fn.params)]
        if fn.loops:
            head.append("int owned = 0;  /* the parameters are ours after a tail call */")
        head += [f"aot_obj *{name} = NULL;" for name in (*fn.temps, *fn.locals)]
        used = _mentioned(fn)
        head += [f"(void){p};  /* unused */" for p in fn.params if p not in used]
        if not any(isinstance(s, O.Return) for s in iter_stmts(fn.body)):
            head.append("(void)out;  /* no path returns: every one loops or fails */")
        if fn.kind is O.FunctionKind.CLOSURE:
            head += [] if "self" in used else ["(void)self;"]
            head += [] if fn.params else ["(void)args;"]
        return head + ["st = aot_enter(ctx);", "if (st != AOT_OK) {", f"{_INDENT}return st;", "}"]

    def function(self) -> str:
        fn = self.fn
        out = [f"/* {fn.comment} */", _signature(fn), "{"]
        out += [_INDENT + line for line in self._head()]
        if fn.loops:
            out.append("top:")
        self.block(fn.body)
        self._done(fn.cleanup)
        return "\n".join(out + self.lines + ["}"])

    def entry_lines(self) -> list[str]:
        decls = ["aot_ctx *ctx;", "int32_t st = AOT_OK;"]
        decls += [f"aot_obj *{name} = NULL;" for name in self.fn.temps]
        decls += ["if (context == NULL) {", f"{_INDENT}return {self.model.upper()}_ERR_NULL;", "}",
                  "ctx = &context->state;",
                  "aot_stack_mark(ctx);  /* the stack budget counts from here */"]
        self.block(self.fn.body)
        self._done(self.fn.cleanup)
        return decls + self.lines

    def _done(self, cleanup: O.Block) -> None:
        """The exit: the label (when a statement jumps to it), the cleanup,
        ``return st;``."""
        if self.exits:
            self.lines.append("done:")
        self.block(cleanup)
        self.line("return st;")

    # ------------------------------------------------------- statements

    def block(self, block: O.Block) -> None:
        for s in block:
            getattr(self, "_" + type(s).__name__)(s)

    def _inner(self, block: O.Block) -> None:
        self.depth += 1
        self.block(block)
        self.depth -= 1

    def _fail(self, status: str) -> None:
        self.exits = True
        self.nested([status, "goto done;"])

    def _check_alloc(self, dst: str) -> None:
        self.exits = True
        self.nested([f"if ({dst} == NULL) {{", f"{_INDENT}st = AOT_ERR_POOL;",
                     f"{_INDENT}goto done;", "}"])

    def _check_status(self) -> None:
        self.exits = True
        self.nested(["if (st != AOT_OK) {", f"{_INDENT}goto done;", "}"])

    def _AllocTensor(self, s: O.AllocTensor) -> None:
        self.line(f"{s.dst} = aot_new_tensor(ctx, {s.nbytes}u);")
        self._check_alloc(s.dst)

    def _AllocCell(self, s: O.AllocCell) -> None:
        self.line(f"{s.dst} = aot_new_cell(ctx, {_kind(s.kind)}, {s.tag}u, {s.nfields}u);")
        self._check_alloc(s.dst)

    def _SetField(self, s: O.SetField) -> None:
        self.line(f"{spell(s.obj)}->fields[{s.index}] = aot_retain({spell(s.value)});")

    def _SetCode(self, s: O.SetCode) -> None:
        self.line(f"{spell(s.obj)}->u.code = {s.code};")

    def _Retain(self, s: O.Retain) -> None:
        self.line(f"{s.dst} = aot_retain({spell(s.src)});")

    def _Take(self, s: O.Take) -> None:
        self.line(f"{s.dst} = {spell(s.src)};")

    def _Release(self, s: O.Release) -> None:
        self.line(f"aot_release(ctx, {s.var});")

    def _Clear(self, s: O.Clear) -> None:
        self.line(f"{s.var} = NULL;")

    def _CallKernel(self, s: O.CallKernel) -> None:
        args = [f"(const {c_storage_type(a.dtype)} *){spell(a.value)}->u.data" for a in s.inputs]
        args += [f"{self.model}_{c}" for c in s.constants]
        args += [f"({c_storage_type(o.dtype)} *)aot_tensor_out({o.temp})" for o in s.outputs]
        self.line(f"{s.kernel}({', '.join(args)});")

    def _CallFunction(self, s: O.CallFunction) -> None:
        args = ["ctx", *(spell(a) for a in s.args), "&" + s.dst]
        self.line(f"st = {s.function}({', '.join(args)});")
        self._check_status()

    def _CallClosure(self, s: O.CallClosure) -> None:
        f = spell(s.closure)
        if s.args:
            self.nested(["{", f"{_INDENT}aot_obj *argv[{len(s.args)}];",
                         *(f"{_INDENT}argv[{i}] = {spell(a)};" for i, a in enumerate(s.args)),
                         f"{_INDENT}st = {f}->u.code(ctx, {f}, argv, &{s.dst});", "}"])
        else:
            self.line(f"st = {f}->u.code(ctx, {f}, NULL, &{s.dst});")
        self._check_status()

    def _If(self, s: O.If) -> None:
        self.line(f"if (aot_truth({spell(s.cond)})) {{")
        self._inner(s.then)
        self.line("} else {")
        self._inner(s.otherwise)
        self.line("}")

    def _Switch(self, s: O.Switch) -> None:
        self.line(f"switch ({spell(s.scrutinee)}->tag) {{")
        labels = [*(f"case {tag}:" for tag, _ in s.cases), "default:"]
        for label, block in zip(labels, [*(b for _, b in s.cases), s.default]):
            self.line(f"{label} {{")
            self._inner(block)
            self.nested([f"{_INDENT}break;", "}"])
        self.line("}")

    def _Raise(self, s: O.Raise) -> None:
        self._fail(_STATUS[s.status])

    def _Return(self, s: O.Return) -> None:
        self._fail(f"*out = aot_retain({spell(s.value)});")

    def _TailJump(self, s: O.TailJump) -> None:
        for t in self.fn.temps:
            self.nested([f"aot_release(ctx, {t});", f"{t} = NULL;"])
        self._ReleaseParams(O.ReleaseParams(self.fn.params))
        self.nested([f"{p} = {a};" for p, a in zip(self.fn.params, s.args)])
        self.nested(["owned = 1;", "goto top;"])

    def _CheckPointers(self, s: O.CheckPointers) -> None:
        self.nested(["if (" + " || ".join(f"{p} == NULL" for p in s.pointers) + ") {",
                     f"{_INDENT}return {self.model.upper()}_ERR_NULL;", "}"])

    def _ClearOutput(self, s: O.ClearOutput) -> None:
        self.line(f"*{s.pointer} = NULL;")

    def _BeginCall(self, s: O.BeginCall) -> None:
        self.line("ctx->in_call = 1;")

    def _CopyIn(self, s: O.CopyIn) -> None:
        self.line(f"memcpy(aot_tensor_out({s.dst}), {s.src}, {s.nbytes}u);")

    def _CopyOut(self, s: O.CopyOut) -> None:
        self.line(f"memcpy({s.dst}, {spell(s.src)}->u.data, {s.nbytes}u);")

    def _StoreOutput(self, s: O.StoreOutput) -> None:
        self.line(f"*{s.dst} = aot_retain({spell(s.src)});")

    def _ReleaseParams(self, s: O.ReleaseParams) -> None:
        self.nested(["if (owned) {", *(f"{_INDENT}aot_release(ctx, {p});" for p in s.params),
                     "}"])

    def _Leave(self, s: O.Leave) -> None:
        self.line("aot_leave(ctx);")

    def _CollectCycles(self, s: O.CollectCycles) -> None:
        if not s.roots:
            self.line("aot_collect_cycles(ctx, NULL, 0u);")
            return
        n = len(s.roots)
        self.nested(["{", f"{_INDENT}aot_obj *roots[{n}];",
                     *(f"{_INDENT}roots[{i}] = {spell(r)};" for i, r in enumerate(s.roots)),
                     f"{_INDENT}aot_collect_cycles(ctx, roots, {n}u);", "}"])

    def _EndCall(self, s: O.EndCall) -> None:
        self.nested(["ctx->in_call = 0;", "ctx->depth = 0;"])
