"""Printer for the Relay text format (version 0.0.5).

Design note
-----------
The output is text that :mod:`aot.ir.parser` reads back to a structurally
equal module; it is deterministic (same module, same bytes).

**Graph form.**  As TVM prints Relay, operands are atomic: the arguments
and callee of a call, the fields of a tuple and the operands of ``ref``
operations are variables, globals, operators, constructors, literals,
projections of those (``%3.0``) or graph variables ``%n`` bound by an
earlier ``%n = ...;``.  Let values, binding right-hand sides, ``if``
conditions, ``match`` scrutinees and the result of each block print inline.
So a 10,000-node dataflow graph prints as 10,000 flat bindings, never as
deeply nested text.  A node used by more than one parent is bound too (and
stays shared when parsed back).

**Placement.**  The parser scopes graph bindings like ``let``, so
``%n = ...;`` must come before the first statement that uses it, in a
*region* (a function body, an ``if`` branch, a match clause, a
parenthesised let) that encloses every use.  A planning pass visits the
program parents-first (reverse post-order), records the region of every
use, and gives each bound node the lowest common ancestor of its use
regions as its *home*.  While printing, the first encounter of a bound
node prints it and queues ``%n = ...;`` in its home region, which emits
queued bindings just before the statement being printed.  Let chains print
as flat statement lists.  A recursive function that is also used
elsewhere prints as ``%n = fn ...; let %f = %n;`` (as TVM prints it): the
parser brings ``%f`` into scope for the binding right before such a
``let``, so the function stays shared.  Printing runs on the trampoline of
:mod:`aot.ir.visitor`, so no Python recursion grows with the program.

**Names.**  Variables keep their name hints, made unique per definition
(``%x``, ``%x_1``) and sanitised to identifiers; graph bindings are
numbered per definition.  Scalars print as literals whose dtype suffix and
digits round-trip bit for bit (checked against the parser's own reading);
other constants print as ``meta[relay.Constant][i]`` with a ``#[metadata]``
section at the end.
"""

from __future__ import annotations

import math
import re
from types import GeneratorType
from typing import Any, Generator, Iterable

import ml_dtypes
import numpy as np

from .adt import (Constructor, Pattern, PatternConstructor, PatternTuple, PatternVar,
                  PatternWildcard, TypeData)
from .analysis import free_vars
from .dtype import DType
from .expr import (Call, Constant, Expr, Function, GlobalVar, If, Let, Match, Op, RefCreate,
                   RefRead, RefWrite, Tuple, TupleGetItem, Var)
from .metadata import write_metadata
from .module import IRModule
from .visitor import ExprFunctor, children, post_order

VERSION_HEADER = '#[version = "0.0.5"]'

_ATOMIC = (Var, GlobalVar, Op, Constructor, Constant)


# ----------------------------------------------------------------- literals

_FLOAT_SUFFIX = {DType.FLOAT16: "f16", DType.FLOAT32: "f", DType.FLOAT64: "f64"}
_INT_SUFFIX = {DType.INT8: "i8", DType.INT16: "i16", DType.INT32: "", DType.INT64: "i64",
               DType.UINT8: "u8", DType.UINT16: "u16", DType.UINT32: "u32",
               DType.UINT64: "u64"}


def _reads_back(text: str, value: np.ndarray, dtype: DType) -> bool:
    """Whether the parser reads ``text`` (without suffix) as exactly
    ``value`` of ``dtype``: the double nearest the text, range-checked
    like the parser does, then rounded to the dtype."""
    negative = text.startswith("-")
    magnitude = float(text.lstrip("-"))
    if magnitude > float(ml_dtypes.finfo(dtype.np).max):
        return False
    parsed = np.array(-magnitude if negative else magnitude, dtype=dtype.np)
    return parsed.tobytes() == value.tobytes()


def float_literal(value: np.ndarray) -> str | None:
    """A literal for a 0-d float array, or None when no literal reproduces
    it exactly (a NaN other than the canonical one)."""
    dtype = DType.from_numpy(value.dtype)
    suffix = _FLOAT_SUFFIX[dtype]
    x = float(value)
    if math.isnan(x):
        canonical = np.array(np.nan, dtype=dtype.np)
        return f"nan{suffix or 'f'}" if value.tobytes() == canonical.tobytes() else None
    if math.isinf(x):
        return f"{'-' if x < 0 else ''}inf{suffix or 'f'}"
    scalar = value[()]
    magnitude = abs(x)
    if magnitude != 0.0 and (magnitude < 1e-4 or magnitude >= 1e16):
        short = np.format_float_scientific(scalar, unique=True, trim="-")
    else:
        short = np.format_float_positional(scalar, unique=True, trim="-")
    for text in (short, repr(x)):
        if _reads_back(text, value, dtype):
            return text + (suffix or "f")
    raise AssertionError(f"no exact literal for {value!r}")


def scalar_literal(value: np.ndarray) -> str | None:
    """The literal text of a 0-d constant, or None if it needs metadata."""
    dtype = DType.from_numpy(value.dtype)
    if dtype is DType.BOOL:
        return "True" if bool(value) else "False"
    if dtype not in _FLOAT_SUFFIX and dtype not in _INT_SUFFIX:
        return None     # bfloat16, float8, int4, uint4: no literal syntax
    if dtype.is_float:
        return float_literal(value)
    return f"{int(value)}{_INT_SUFFIX[dtype]}"


def _float_attr(x: float) -> str:
    if math.isnan(x):
        return "nanf64"
    if math.isinf(x):
        return f"{'-' if x < 0 else ''}inff64"
    text = repr(x)
    return text + ("f" if abs(x) <= float(np.finfo(np.float32).max) else "f64")


def _quote(s: str) -> str:
    body = s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return f'"{body}"'


def attr_value(value: Any) -> str:
    """Text of a raw attribute value (see :meth:`Attrs.to_raw`)."""
    if isinstance(value, np.generic):
        value = value.item()
    if value is None:
        return "None"
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _float_attr(value)
    if isinstance(value, str):
        return _quote(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(attr_value(v) for v in value) + "]"
    if hasattr(value, "value"):  # an enum or DType that escaped to_raw
        return attr_value(value.value)
    raise AssertionError(f"cannot print attribute value {value!r}")


def attrs_text(raw: dict[str, Any] | Iterable[tuple[str, Any]]) -> list[str]:
    items = raw.items() if isinstance(raw, dict) else raw
    return [f"{key}={attr_value(value)}" for key, value in items]


# ----------------------------------------------------------------- layout

def _indent(lines: Iterable[str]) -> str:
    out = []
    for entry in lines:
        for line in entry.split("\n"):
            out.append("  " + line if line else line)
    return "\n".join(out)


def _tuple_text(items: list[str]) -> str:
    """Tuple syntax shared by tuple expressions and tuple patterns: a
    one-element tuple keeps its trailing comma (``(%x,)``)."""
    if len(items) == 1:
        return f"({items[0]},)"
    return "(" + ", ".join(items) + ")"


_NAME_BAD = re.compile(r"[^A-Za-z0-9_]")


def _sanitize(hint: str) -> str:
    name = _NAME_BAD.sub("_", hint)
    if not name:
        return "x"
    if name[0].isdigit():
        return "v" + name
    return name


def type_def_text(data: TypeData) -> str:
    params = ""
    if data.type_vars:
        params = "[" + ", ".join(str(tv) for tv in data.type_vars) + "]"
    if data.extern:
        return f"extern type {data.header.name}{params}"
    ctors = []
    for ctor in data.constructors:
        fields = ""
        if ctor.inputs:
            fields = "(" + ", ".join(str(t) for t in ctor.inputs) + ")"
        ctors.append(f"{ctor.name}{fields},")
    body = _indent(ctors)
    return f"type {data.header.name}{params} {{\n{body}\n}}" if ctors else \
        f"type {data.header.name}{params} {{\n}}"


# ----------------------------------------------------------------- planning

class _Root:
    def __repr__(self) -> str:
        return "ROOT"


ROOT = _Root()
RegionKey = Any


#: Nodes all of whose children are operands (no binding variables, no
#: regions): calls, tuples, projections and the ref operations.
_OPERAND_PARENTS = (Call, Tuple, TupleGetItem, RefCreate, RefRead, RefWrite)


def _expr_children(e: Expr) -> tuple[Expr, ...]:
    """Sub-expressions that are uses: :func:`~aot.ir.visitor.children`
    without the binding variables (function params, the let variable,
    pattern variables)."""
    if isinstance(e, Function):
        return (e.body,)
    if isinstance(e, Let):
        return (e.value, e.body)
    if isinstance(e, Match):
        return (e.data, *(c.rhs for c in e.clauses))
    return children(e)


def _operands(e: Expr) -> tuple[Expr, ...]:
    """Sub-expressions that print as atoms (or ``%n``) in graph form."""
    return children(e) if isinstance(e, _OPERAND_PARENTS) else ()


def _nullary_constructor_call(e: Expr) -> bool:
    """A call such as ``Nil`` that prints as the constructor's bare name
    (and reads back as a fresh call)."""
    return isinstance(e, Call) and isinstance(e.op, Constructor) and not e.args \
        and not e.op.inputs and e.attrs.to_raw() == {}


def _atomic(e: Expr) -> bool:
    """Printed as a name or literal, never bound (a nullary constructor
    call counts)."""
    return isinstance(e, _ATOMIC) or _nullary_constructor_call(e)


class _Plan:
    """Which nodes are bound, and in which region each binding goes."""

    def __init__(self, root: Expr) -> None:
        self.root = root
        nodes = post_order(root)
        uses: dict[Any, int] = {}
        for node in nodes:
            for child in _expr_children(node):
                uses[child] = uses.get(child, 0) + 1
        self.uses = uses
        bound = {n for n in nodes if uses.get(n, 0) >= 2 and not _atomic(n)}
        for node in nodes:
            for child in _operands(node):
                if _atomic(child) or child in bound:
                    continue
                if isinstance(child, TupleGetItem) and not isinstance(node, TupleGetItem):
                    continue  # `f(%t.0)`: its own operand is atomic or bound
                bound.add(child)
        self.bound = bound
        self.parent: dict[RegionKey, RegionKey | None] = {ROOT: None}
        self.depth: dict[RegionKey, int] = {ROOT: 0}
        self.home: dict[Expr, RegionKey] = {}
        self._place(nodes)
        self.recursive = self._recursive_lets(nodes)

    @staticmethod
    def _recursive_lets(nodes: list[Expr]) -> dict[Var, set[Expr]]:
        """For each ``let %f = fn ...`` whose function mentions ``%f``: the
        nodes of the function that (transitively) mention it.  A binding of
        such a node cannot go before the ``let``."""
        out: dict[Var, set[Expr]] = {}
        for node in nodes:
            if not (isinstance(node, Let) and isinstance(node.value, Function)):
                continue
            inner = post_order(node.value)
            if node.var not in set(inner):
                continue
            mentions: set[Expr] = {node.var}
            for n in inner:
                if any(c in mentions for c in _expr_children(n)):
                    mentions.add(n)
            out[node.var] = mentions
        return out

    def _region(self, key: RegionKey, parent: RegionKey) -> RegionKey:
        self.parent[key] = parent
        self.depth[key] = self.depth[parent] + 1
        return key

    def _lca(self, regions: list[RegionKey]) -> RegionKey:
        a = regions[0]
        for b in regions[1:]:
            while self.depth[a] > self.depth[b]:
                a = self.parent[a]
            while self.depth[b] > self.depth[a]:
                b = self.parent[b]
            while a is not b:
                a = self.parent[a]
                b = self.parent[b]
        return a

    def _place(self, nodes: list[Expr]) -> None:
        use_regions: dict[Expr, list[RegionKey]] = {}
        body_position: set[Expr] = set()

        def use(child: Expr, region: RegionKey, in_body: bool = False) -> None:
            if _atomic(child):
                return
            use_regions.setdefault(child, []).append(region)
            if in_body and isinstance(child, Let):
                body_position.add(child)

        for node in reversed(nodes):
            if _atomic(node) and node is not self.root:
                continue
            if node is self.root:
                region = ROOT
                if isinstance(node, Let):
                    body_position.add(node)
            else:
                region = self._lca(use_regions[node])
            self.home[node] = region
            if isinstance(node, Function):
                use(node.body, self._region((node, "body"), region), True)
            elif isinstance(node, If):
                use(node.cond, region)
                use(node.true_branch, self._region((node, "then"), region), True)
                use(node.false_branch, self._region((node, "else"), region), True)
            elif isinstance(node, Match):
                use(node.data, region)
                for clause in node.clauses:
                    use(clause.rhs, self._region((clause, "rhs"), region), True)
            elif isinstance(node, Let):
                inner = region
                if node not in body_position or node in self.bound:
                    inner = self._region((node, "inline"), region)
                use(node.value, inner)
                use(node.body, inner, True)
            else:
                for child in _expr_children(node):
                    use(child, region)


class _Region:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.pending: list[str] = []
        #: the recursive let variable whose value is being printed, if any
        self.binding: Var | None = None

    def flush(self) -> None:
        self.lines.extend(self.pending)
        self.pending.clear()


# ----------------------------------------------------------------- printer

def _gen(value: Any) -> Generator[Expr, Any, str]:
    """Run ``value`` as a sub-generator if it is one."""
    if isinstance(value, GeneratorType):
        return (yield from value)
    return value


class _Printer(ExprFunctor[str]):
    memoize = False

    def __init__(self, show_types: bool = False) -> None:
        super().__init__()
        self.show_types = show_types
        self.meta: list[np.ndarray] = []
        self.meta_index: dict[Constant, int] = {}
        self.plan: _Plan | None = None
        self.def_header: str | None = None
        self._reset(None)

    def _reset(self, root: Expr | None) -> None:
        self.var_names: dict[Var, str] = {}
        self.used_names: set[str] = set()
        self.graph_names: dict[Expr, tuple[str, RegionKey]] = {}
        self.counter = 0
        self.active: dict[RegionKey, _Region] = {}
        self.stack: list[RegionKey] = [ROOT]
        self.plan = _Plan(root) if root is not None else None

    # ------------------------------------------------------------ drivers
    def _drive(self, gen: Generator[Expr, Any, Any]) -> Any:
        send: Any = None
        while True:
            try:
                child = gen.send(send)
            except StopIteration as stop:
                return stop.value
            send = self.visit(child)

    def print_def(self, gv: GlobalVar, func: Function) -> str:
        self._reset(func)
        self.def_header = f"def @{gv.name}"
        root = self.active[ROOT] = _Region()
        text = self._drive(self._function(func))
        assert not root.pending, "a binding was placed outside its definition"
        self.def_header = None
        return text

    def print_root(self, expr: Expr) -> list[str]:
        self._reset(expr)
        decls = [f"free_var {self._var_decl(v)};" for v in free_vars(expr)]
        lines = self._drive(self._region(ROOT, expr))
        return decls + lines

    def metadata_section(self) -> str:
        if not self.meta:
            return ""
        return "#[metadata]\n" + write_metadata(self.meta) + "\n"

    # ------------------------------------------------------------ dispatch
    def _dispatch(self, node: Expr) -> Any:
        assert self.plan is not None
        if node in self.plan.bound:
            return self._bound(node)
        return self._inline(node)

    visit_var = visit_global_var = visit_constant = visit_op = visit_constructor = _dispatch
    visit_tuple = visit_tuple_getitem = visit_call = visit_function = _dispatch
    visit_let = visit_if = visit_match = _dispatch
    visit_ref_create = visit_ref_read = visit_ref_write = _dispatch

    def _bound(self, node: Expr) -> Generator[Expr, Any, str]:
        assert self.plan is not None
        entry = self.graph_names.get(node)
        if entry is not None and entry[1] in self.active:
            return entry[0]
        target = self.plan.home[node]
        binding = self.active[target].binding
        if binding is not None and node in self.plan.recursive[binding]:
            # first used inside the recursive function that defines `binding`:
            # bind it where it is used (a later use outside binds it again)
            target = self.stack[-1]
        text = yield from _gen(self._inline(node))
        name = f"%{self.counter}"
        self.counter += 1
        self.active[target].pending.append(f"{name} = {text}{self._ty(node)};")
        self.graph_names[node] = (name, target)
        return name

    def _inline(self, node: Expr) -> Any:
        """``node`` printed in place (not as ``%n``): a string, or a
        generator that yields its sub-expressions to the trampoline."""
        method = _INLINE.get(type(node))
        if method is None:
            raise AssertionError(f"cannot print {type(node).__name__}")
        return method(self, node)

    def _ty(self, node: Expr) -> str:
        if self.show_types and node.checked_type is not None:
            return f" /* ty={node.checked_type} */"
        return ""

    # ------------------------------------------------------------ names
    def _var_name(self, var: Var) -> str:
        name = self.var_names.get(var)
        if name is not None:
            return name
        assert self.plan is not None
        hint = var.name_hint
        if hint == "_" and self.plan.uses.get(var, 0) == 0:
            name = "%_"
        else:
            # `%_` is reserved for unused variables (several may share it)
            base = _sanitize(hint)
            candidate = base if base != "_" else "_1"
            k = 1
            while candidate in self.used_names:
                candidate = f"{base}_{k}" if base != "_" else f"_{k + 1}"
                k += 1
            self.used_names.add(candidate)
            name = "%" + candidate
        self.var_names[var] = name
        return name

    def _var_decl(self, var: Var) -> str:
        name = self._var_name(var)
        if var.type_annotation is None:
            return name
        return f"{name}: {var.type_annotation}"

    # ------------------------------------------------------------ regions
    def _region(self, key: RegionKey, expr: Expr,
                inline_let: bool = False) -> Generator[Expr, Any, list[str]]:
        """Print a region: its let chain as statements, then its result."""
        assert self.plan is not None
        region = self.active[key] = _Region() if key not in self.active else self.active[key]
        if key is not ROOT:
            self.stack.append(key)
        cur = expr
        first = True
        while isinstance(cur, Let) and ((first and inline_let) or cur not in self.plan.bound):
            first = False
            if cur.var in self.plan.recursive:
                region.binding = cur.var
            value = yield cur.value
            region.binding = None
            region.flush()
            if cur.var.name_hint == "_" and cur.var.type_annotation is None \
                    and self.plan.uses.get(cur.var, 0) == 0:
                region.lines.append(f"{value}{self._ty(cur.value)};")
            else:
                region.lines.append(f"let {self._var_decl(cur.var)} = {value}"
                                    f"{self._ty(cur.value)};")
            cur = cur.body
        result = yield cur
        region.flush()
        region.lines.append(result + self._ty(cur))
        if key is not ROOT:
            del self.active[key]
            self.stack.pop()
        return region.lines

    def _inline_let(self, node: Let) -> Generator[Expr, Any, str]:
        lines = yield from self._region((node, "inline"), node, inline_let=True)
        return "(\n" + _indent(lines) + "\n)"

    # ------------------------------------------------------------ nodes
    def _global_var(self, node: GlobalVar) -> str:
        return f"@{node.name}"

    def _name(self, node: Op | Constructor) -> str:
        return node.name

    def _constant(self, node: Constant) -> str:
        if node.data.ndim == 0:
            literal = scalar_literal(node.data)
            if literal is not None:
                return literal
        index = self.meta_index.get(node)
        if index is None:
            index = self.meta_index[node] = len(self.meta)
            self.meta.append(node.data)
        return f"meta[relay.Constant][{index}]"

    def _tuple(self, node: Tuple) -> Generator[Expr, Any, str]:
        fields = []
        for f in node.fields:
            fields.append((yield f))
        return _tuple_text(fields)

    def _tuple_getitem(self, node: TupleGetItem) -> Generator[Expr, Any, str]:
        assert self.plan is not None
        base = yield node.tuple_value
        value = node.tuple_value
        if value in self.plan.bound or isinstance(value, (Var, Tuple, TupleGetItem)):
            return f"{base}.{node.index}"
        return f"({base}).{node.index}"

    def _call(self, node: Call) -> Generator[Expr, Any, str]:
        assert self.plan is not None
        callee = yield node.op
        args = []
        for a in node.args:
            args.append((yield a))
        if _nullary_constructor_call(node):
            return callee
        raw = node.attrs.to_raw()
        if node.op not in self.plan.bound and isinstance(node.op, (Function, Let, If, Match)):
            callee = f"({callee})"
        return f"{callee}(" + ", ".join(args + attrs_text(raw)) + ")"

    def _function(self, node: Function) -> Generator[Expr, Any, str]:
        assert self.plan is not None
        type_params = ""
        if node.type_params:
            type_params = "[" + ", ".join(str(tv) for tv in node.type_params) + "]"
        if self.def_header is not None and node is self.plan.root:
            head = f"{self.def_header}{type_params}"
        else:
            head = f"fn {type_params}" if type_params else "fn "
        params = [self._var_decl(p) for p in node.params]
        params += attrs_text(node.attrs.items)
        ret = f" -> {node.ret_type}" if node.ret_type is not None else ""
        body = yield from self._region((node, "body"), node.body)
        return f"{head}({', '.join(params)}){ret} {{\n{_indent(body)}\n}}"

    def _if(self, node: If) -> Generator[Expr, Any, str]:
        cond = yield node.cond
        then = yield from self._region((node, "then"), node.true_branch)
        other = yield from self._region((node, "else"), node.false_branch)
        return f"if ({cond}) {{\n{_indent(then)}\n}} else {{\n{_indent(other)}\n}}"

    def _match(self, node: Match) -> Generator[Expr, Any, str]:
        assert self.plan is not None
        data = yield node.data
        if not (isinstance(node.data, Tuple) and node.data not in self.plan.bound):
            data = f"({data})"
        clauses = []
        for clause in node.clauses:
            pattern = self._pattern(clause.lhs)
            lines = yield from self._region((clause, "rhs"), clause.rhs)
            if len(lines) == 1:
                clauses.append(f"{pattern} => {lines[0]},")
            else:
                clauses.append(f"{pattern} => {{\n{_indent(lines)}\n}},")
        keyword = "match" if node.complete else "match?"
        return f"{keyword} {data} {{\n{_indent(clauses)}\n}}"

    def _pattern(self, pattern: Pattern) -> str:
        if isinstance(pattern, PatternWildcard):
            return "_"
        if isinstance(pattern, PatternVar):
            return self._var_decl(pattern.var)
        if isinstance(pattern, PatternConstructor):
            if not pattern.patterns:
                return pattern.constructor.name
            subs = ", ".join(self._pattern(p) for p in pattern.patterns)
            return f"{pattern.constructor.name}({subs})"
        if isinstance(pattern, PatternTuple):
            return _tuple_text([self._pattern(p) for p in pattern.patterns])
        raise AssertionError(f"unknown pattern {pattern!r}")

    def _ref_create(self, node: RefCreate) -> Generator[Expr, Any, str]:
        value = yield node.value
        return f"ref({value})"

    def _ref_read(self, node: RefRead) -> Generator[Expr, Any, str]:
        ref = yield node.ref
        return f"ref_read({ref})"

    def _ref_write(self, node: RefWrite) -> Generator[Expr, Any, str]:
        ref = yield node.ref
        value = yield node.value
        return f"ref_write({ref}, {value})"


#: How each node kind prints inline (dispatch by exact class, as
#: :class:`~aot.ir.visitor.ExprFunctor` does).
_INLINE: dict[type, Any] = {
    Var: _Printer._var_name,
    GlobalVar: _Printer._global_var,
    Op: _Printer._name,
    Constructor: _Printer._name,
    Constant: _Printer._constant,
    Tuple: _Printer._tuple,
    TupleGetItem: _Printer._tuple_getitem,
    Call: _Printer._call,
    Function: _Printer._function,
    Let: _Printer._inline_let,
    If: _Printer._if,
    Match: _Printer._match,
    RefCreate: _Printer._ref_create,
    RefRead: _Printer._ref_read,
    RefWrite: _Printer._ref_write,
}


# ----------------------------------------------------------------- API

def print_module(mod: IRModule, *, show_types: bool = False) -> str:
    """The module as Relay text: version header, type definitions, then
    the global functions in module order, then the metadata section."""
    printer = _Printer(show_types)
    parts = [VERSION_HEADER]
    for data in mod.type_definitions.values():
        parts.append(type_def_text(data))
    for gv, func in mod.functions.items():
        parts.append(printer.print_def(gv, func))
    text = "\n\n".join(parts) + "\n"
    meta = printer.metadata_section()
    return text + ("\n" + meta if meta else "")


def print_expr(expr: Expr, *, show_types: bool = False) -> str:
    """One expression as Relay text (``free_var`` declarations for its free
    variables, and a metadata section if it holds tensor constants)."""
    printer = _Printer(show_types)
    lines = printer.print_root(expr)
    text = "\n".join(lines)
    meta = printer.metadata_section()
    return text + ("\n" + meta if meta else "")


__all__ = ["print_module", "print_expr", "scalar_literal", "attr_value", "type_def_text"]
