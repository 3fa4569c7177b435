"""Random well-typed, terminating whole-language programs (Relay text).

Design note
-----------
Generation is *type directed*: :func:`gen_expr` is asked for an expression
of a given type and picks one of the productions that can build that type
from the variables in scope, asking recursively for the sub-expressions'
types.  Every program is therefore well typed by construction; the tests
still parse and type-check each one, so a generator bug shows up as a
failure, not as a silently skipped example.

The type universe is small on purpose (programs must build in about a
second): ``int32`` scalars, ``Tensor[(3,), float32]`` vectors, ``bool``
(only as conditions and filter predicates), tuples, the prelude's
``List`` and ``Option``, one user ADT per program (tensor fields, a
recursive constructor and an ``Option`` field for nested patterns),
function types (let-bound closures capturing their environment, prelude
combinators) and references.

Productions: let (annotated, now and then shadowing an earlier let), if
on comparisons, tuples and projections,
``match`` with random nested patterns (followed by a catch-all) or with one
clause per constructor, closures called directly or passed to the
prelude's ``map``/``filter``/``foldl``/``foldr``/``zip``/``rev``/
``concat``/``length``/``sum``/``compose``/``iterate``/``unfoldr``,
references (to tensors, lists and closures) created, written in sequence
and read (also from inside closures), global functions, and function
values: operators (``add``, ``nn.relu``...), constructors (``Cons``,
the user ADT's) and list-recursive globals passed where a closure could be;
closures returning closures (curried) and calls of any function in scope.
Main takes int32 scalars and float32 vectors, and sometimes lists,
options, tuples and the user ADT (converted into the C program).

Termination: globals are defined before they can be called and only
call themselves or earlier globals, so the call graph is a DAG plus self
loops.  A self call either decreases an ``int32`` fuel argument
(``if (%n <= 0) { base } else { ... @g(%n - 1, ...) ... }``, fuel at a
call site is at most 4) or recurses on the tail of a list it matched
(structural recursion).  ``unfoldr`` gets a seed counting down from at
most 4; ``iterate`` a count of at most 3.  Each body calls itself at most
once, so the work is polynomial in the fuel: at most 4, except that main
may call a global whose parameters and result are all int32 scalars or
vectors with fuel up to 40 (no value can double 40 times in memory).

Numerics: the interpreter defines int32 arithmetic as wrapping, but the
values are kept small anyway (literals in [-4, 4], multiplication only by
a literal) so no program depends on overflow.  Float operations are the
exactly rounded IEEE ones (add, subtract, multiply, maximum, minimum,
negative, abs, relu, int->float casts of small integers, max/min
reductions), so C and NumPy agree bit for bit; products of two vectors
are clipped to [-8, 8] so nothing reaches infinity.  No division, exp or
log, and no float->int casts (undefined in C when out of range).

Differentiable programs (``programs(differentiable=True)``): main takes
only int32 scalars and vectors and returns a vector or an (int32, vector)
pair, the domain of ``aot.gradient``; the body is generated as above.
:func:`as_float64` rewrites one to float64 for central differences
(tests/passes/test_higher_order_gradient.py checks higher-order
gradients against them).

Packing: :func:`pack` puts several programs (each generated with its own
name prefix, so globals, the ADT and its constructors are disjoint) into
one module whose ``@main`` returns the tuple of their results; one C build
then checks them all.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
from hypothesis import strategies as st

# ---------------------------------------------------------------- types


@dataclass(frozen=True)
class Ty:
    """A type of the generated language (rendered by :func:`ty_text`)."""


@dataclass(frozen=True)
class TInt(Ty):
    pass


@dataclass(frozen=True)
class TVec(Ty):
    pass


@dataclass(frozen=True)
class TBool(Ty):
    pass


@dataclass(frozen=True)
class TTuple(Ty):
    items: tuple[Ty, ...]


@dataclass(frozen=True)
class TList(Ty):
    elem: Ty


@dataclass(frozen=True)
class TOption(Ty):
    elem: Ty


@dataclass(frozen=True)
class TUser(Ty):
    """The program's own ADT (its name carries the program's prefix)."""


@dataclass(frozen=True)
class TFn(Ty):
    params: tuple[Ty, ...]
    ret: Ty


@dataclass(frozen=True)
class TRef(Ty):
    elem: Ty


INT, VEC, BOOL, USER = TInt(), TVec(), TBool(), TUser()
PAIR = TTuple((INT, VEC))
VEC_LEN = 3

#: types a value may have (let bindings, scrutinees, results of main)
DATA_TYPES: tuple[Ty, ...] = (
    INT, VEC, PAIR, TList(INT), TList(VEC), TOption(INT), TOption(VEC), USER,
    TList(PAIR), TTuple((TOption(INT), TList(VEC))),
)
#: function types of let-bound closures
FN_TYPES: tuple[Ty, ...] = (
    TFn((INT,), INT), TFn((VEC,), VEC), TFn((INT, VEC), VEC), TFn((VEC,), INT),
    TFn((VEC, INT), USER), TFn((VEC, VEC), VEC),
    TFn((INT,), TFn((VEC,), VEC)),  # curried: the inner closure captures the outer parameter
)
#: element types of references
REF_ELEMS: tuple[Ty, ...] = (INT, VEC, TList(INT), TFn((INT,), INT))


def user_ctors(prefix: str) -> list[tuple[str, tuple[Ty, ...]]]:
    """The constructors of a program's ADT ``Box_<prefix>``, in tag order."""
    return [
        (f"Pair_{prefix}", (VEC, INT)),
        (f"Opt_{prefix}", (TOption(INT), VEC)),
        (f"Link_{prefix}", (USER, INT)),
        (f"Empty_{prefix}", ()),
    ]


def ty_text(t: Ty, prefix: str) -> str:
    if isinstance(t, TInt):
        return "int32"
    if isinstance(t, TVec):
        return f"Tensor[({VEC_LEN},), float32]"
    if isinstance(t, TBool):
        return "bool"
    if isinstance(t, TTuple):
        return "(" + ", ".join(ty_text(x, prefix) for x in t.items) + ")"
    if isinstance(t, TList):
        return f"List[{ty_text(t.elem, prefix)}]"
    if isinstance(t, TOption):
        return f"Option[{ty_text(t.elem, prefix)}]"
    if isinstance(t, TUser):
        return f"Box_{prefix}"
    if isinstance(t, TFn):
        return "fn (" + ", ".join(ty_text(x, prefix) for x in t.params) + ") -> " \
            + ty_text(t.ret, prefix)
    if isinstance(t, TRef):
        return f"Ref[{ty_text(t.elem, prefix)}]"
    raise AssertionError(t)


# ---------------------------------------------------------- generation state


@dataclass
class GlobalFn:
    """A generated global: ``fuel`` globals take ``%n: int32`` first,
    ``list`` globals take the list they recurse on first."""
    name: str
    kind: str  # "fuel" | "list"
    first: Ty  # INT for fuel, TList(E) for list recursion
    params: tuple[Ty, ...]
    ret: Ty


@dataclass
class Ctx:
    """Per-program mutable state: fresh names and the globals so far."""
    prefix: str
    max_globals: int = 3
    counter: int = 0
    globals: list[GlobalFn] = field(default_factory=list)
    defs: list[str] = field(default_factory=list)
    n_started: int = 0  # globals whose bodies are being generated
    n_defined: int = 0

    def fresh(self, stem: str = "v") -> str:
        self.counter += 1
        return f"%{stem}{self.counter}"

    def t(self, ty: Ty) -> str:
        return ty_text(ty, self.prefix)


@dataclass(frozen=True)
class Env:
    """The variables in scope (name, type), innermost last."""
    ctx: Ctx
    vars: tuple[tuple[str, Ty], ...] = ()

    def bind(self, *pairs: tuple[str, Ty]) -> Env:
        """The scope with ``pairs`` added (a rebound name shadows the old binding)."""
        new = {n for n, _ in pairs}
        return Env(self.ctx, tuple(v for v in self.vars if v[0] not in new) + tuple(pairs))

    def of_type(self, ty: Ty) -> list[str]:
        return [n for n, t in self.vars if t == ty]

    def refs(self) -> list[tuple[str, Ty]]:
        return [(n, t.elem) for n, t in self.vars if isinstance(t, TRef)]


Draw = Callable

# A production: (weight, thunk returning the expression text).
Prod = tuple[int, Callable[[], str]]


def _choose(draw: Draw, prods: list[Prod]) -> str:
    """Run one production, picked with probability proportional to its
    weight (hypothesis shrinks towards the first ones: list leaves first)."""
    prods = [p for p in prods if p[0] > 0]
    assert prods
    total = sum(w for w, _ in prods)
    k = draw(st.integers(0, total - 1))
    for w, thunk in prods:
        if k < w:
            return thunk()
        k -= w
    raise AssertionError("unreachable")


def _pick(draw: Draw, items):
    return draw(st.sampled_from(list(items)))


def _int_lit(draw: Draw) -> str:
    return str(draw(st.integers(-4, 4)))


def _float_lit(draw: Draw) -> str:
    return draw(st.sampled_from(["0.5f", "-1.5f", "2f", "0f", "1.25f", "-0.75f"]))


# ----------------------------------------------------------------- leaves


def gen_leaf(draw: Draw, ty: Ty, env: Env) -> str:
    """An expression of type ``ty`` without recursion worth mentioning."""
    ctx = env.ctx
    prods: list[Prod] = []
    names = env.of_type(ty)
    if names:
        prods.append((6, lambda: _pick(draw, names)))
    reads = [n for n, e in env.refs() if e == ty]
    if reads:
        prods.append((2, lambda: f"ref_read({_pick(draw, reads)})"))
    if isinstance(ty, TInt):
        prods.append((2, lambda: _int_lit(draw)))
    elif isinstance(ty, TVec):
        prods.append((1, lambda: f'full({_float_lit(draw)}, shape=[{VEC_LEN}], dtype="float32")'))
    elif isinstance(ty, TBool):
        ints = env.of_type(INT)
        if ints:
            prods.append((3, lambda: f"({_pick(draw, ints)} {_pick(draw, CMP)} {_int_lit(draw)})"))
        prods.append((1, lambda: _pick(draw, ["True", "False"])))
    elif isinstance(ty, TTuple):
        prods.append((1, lambda: _tuple_text([gen_leaf(draw, x, env) for x in ty.items])))
    elif isinstance(ty, TList):
        prods.append((1, lambda: "Nil"))
        prods.append((2, lambda: f"Cons({gen_leaf(draw, ty.elem, env)}, Nil)"))
        prods.append((1, lambda: f"Cons({gen_leaf(draw, ty.elem, env)}, "
                                 f"Cons({gen_leaf(draw, ty.elem, env)}, Nil))"))
    elif isinstance(ty, TOption):
        prods.append((1, lambda: "None"))
        prods.append((3, lambda: f"Some({gen_leaf(draw, ty.elem, env)})"))
    elif isinstance(ty, TUser):
        prods.append((1, lambda: f"Empty_{ctx.prefix}"))
        prods.append((2, lambda: f"Pair_{ctx.prefix}({gen_leaf(draw, VEC, env)}, "
                                 f"{gen_leaf(draw, INT, env)})"))
        prods.append((1, lambda: f"Opt_{ctx.prefix}(Some({gen_leaf(draw, INT, env)}), "
                                 f"{gen_leaf(draw, VEC, env)})"))
    elif isinstance(ty, TFn):
        prods.append((1, lambda: _closure(draw, ty, env, 0)))
        values = _function_values(ty, ctx)
        if values:
            prods.append((2, lambda: _pick(draw, values)))
        ops = OP_VALUES.get(ty, ())
        if ops:
            # under an annotation: an operator's type comes from a relation
            # that needs its argument types (`@iterate(negative, 3)` has none)
            def op_value() -> str:
                name = ctx.fresh("o")
                return f"(let {name}: {ctx.t(ty)} = {_pick(draw, ops)}; {name})"
            prods.append((2, op_value))
    else:
        raise AssertionError(ty)
    return _choose(draw, prods)


#: operators used as function values, by function type
OP_VALUES: dict[Ty, tuple[str, ...]] = {
    TFn((VEC,), VEC): ("nn.relu", "negative", "abs"),
    TFn((INT,), INT): ("negative",),
    TFn((VEC, VEC), VEC): ("add", "maximum", "minimum", "subtract"),
    TFn((INT, INT), INT): ("add", "subtract", "maximum", "minimum"),
}


def _function_values(ty: TFn, ctx: Ctx) -> list[str]:
    """Named function values of type ``ty`` whose type needs no context:
    constructors and the globals that recurse on a list (a fuel global as
    a value could be called with any fuel)."""
    names = []
    if len(ty.params) == 2 and ty.params[1] == ty.ret == TList(ty.params[0]):
        names.append("Cons")
    for name, fields in user_ctors(ctx.prefix):
        if fields and fields == ty.params and ty.ret == USER:
            names.append(name)
    names += [f.name for f in ctx.globals
              if f.kind == "list" and (f.first,) + f.params == ty.params and f.ret == ty.ret]
    return names


def _tuple_text(items: list[str]) -> str:
    """A tuple expression or pattern (a 1-tuple needs its trailing comma)."""
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


def _args_text(items: list[str]) -> str:
    """The parenthesised fields of a constructor application or pattern."""
    return "(" + ", ".join(items) + ")"


CMP = ["<", "<=", ">", ">=", "==", "!="]

# ------------------------------------------------------------- expressions


def gen_expr(draw: Draw, ty: Ty, env: Env, depth: int, leaf: bool = True) -> str:
    """A well-typed expression of type ``ty`` over the variables of
    ``env``; ``depth`` bounds the nesting of productions.  ``leaf=False``
    asks for a compound expression (unless depth is 0)."""
    if depth <= 0:
        return gen_leaf(draw, ty, env)
    d = depth - 1
    ctx = env.ctx
    g = lambda t, e=env: gen_expr(draw, t, e, d)  # noqa: E731
    prods: list[Prod] = [(3 if leaf else 0, lambda: gen_leaf(draw, ty, env))]

    # -- generic productions: any type
    prods.append((3, lambda: _let(draw, ty, env, d)))
    if not isinstance(ty, TBool):
        prods.append((2, lambda: f"(if ({g(BOOL)}) {{ {g(ty)} }} else {{ {g(ty)} }})"))
        prods.append((3, lambda: _match(draw, ty, env, d)))
        prods.append((1, lambda: _projection(draw, ty, env, d)))
        prods.append((1, lambda: _ref_new(draw, ty, env, d)))
        if env.refs():
            prods.append((2, lambda: _ref_write(draw, ty, env, d)))
    if not isinstance(ty, TBool):
        in_scope = [(n, t) for n, t in env.vars if isinstance(t, TFn) and t.ret == ty]
        if in_scope:
            def call_in_scope() -> str:
                name, fty = _pick(draw, in_scope)
                return f"{name}({', '.join(g(p) for p in fty.params)})"
            prods.append((3, call_in_scope))
    if not isinstance(ty, (TFn, TBool)):
        prods.append((2, lambda: _closure_call(draw, ty, env, d)))
        callable_ = [f for f in ctx.globals if f.ret == ty]
        if callable_:
            prods.append((3, lambda: _global_call(draw, _pick(draw, callable_), env, d)))
        if len(ctx.globals) + ctx.n_started < ctx.max_globals and depth >= 2:
            prods.append((2, lambda: _global_call(draw, _new_global(draw, ty, env, d), env, d)))

    # -- type-specific productions
    if isinstance(ty, TInt):
        prods += [
            (3, lambda: f"({g(INT)} {_pick(draw, ['+', '-'])} {g(INT)})"),
            (1, lambda: f"({g(INT)} * {_int_lit(draw)})"),
            (1, lambda: f"{_pick(draw, ['maximum', 'minimum'])}({g(INT)}, {g(INT)})"),
            (1, lambda: f"negative({g(INT)})"),
            (1, lambda: f"@length({g(_pick(draw, [TList(INT), TList(VEC), TList(PAIR)]))})"),
            (1, lambda: f"@sum({g(TList(INT))})"),
            (2, lambda: _fold(draw, ty, env, d)),
        ]
    elif isinstance(ty, TVec):
        prods += [
            (3, lambda: f"{_pick(draw, ['add', 'subtract', 'maximum', 'minimum'])}"
                        f"({g(VEC)}, {g(VEC)})"),
            (1, lambda: f"clip(multiply({g(VEC)}, {g(VEC)}), a_min=-8f, a_max=8f)"),
            (2, lambda: f"{_pick(draw, ['nn.relu', 'negative', 'abs'])}({g(VEC)})"),
            (1, lambda: f"{_pick(draw, ['add', 'multiply', 'subtract', 'maximum'])}"
                        f"({g(VEC)}, {_float_lit(draw)})"),
            (1, lambda: f'add({g(VEC)}, cast({g(INT)}, dtype="float32"))'),
            (2, lambda: _fold(draw, ty, env, d)),
        ]
    elif isinstance(ty, TBool):
        prods += [
            (4, lambda: f"({g(INT)} {_pick(draw, CMP)} {g(INT)})"),
            (1, lambda: f"({_pick(draw, ['max', 'min'])}({g(VEC)}) "
                        f"{_pick(draw, ['<', '>', '<=', '>='])} {_float_lit(draw)})"),
            (1, lambda: f"{_pick(draw, ['logical_and', 'logical_or'])}({g(BOOL)}, {g(BOOL)})"),
            (1, lambda: f"logical_not({g(BOOL)})"),
        ]
    elif isinstance(ty, TTuple):
        prods.append((4, lambda: _tuple_text([g(x) for x in ty.items])))
    elif isinstance(ty, TList):
        e = ty.elem
        prods += [
            (4, lambda: f"Cons({g(e)}, {g(ty)})"),
            (2, lambda: _map(draw, ty, env, d)),
            (2, lambda: f"@filter({g(TFn((e,), BOOL))}, {g(ty)})"),
            (1, lambda: f"@rev({g(ty)})"),
            (1, lambda: f"@concat({g(ty)}, {g(ty)})"),
            (1, lambda: _unfoldr(draw, ty, env, d)),
        ]
        if e == PAIR:
            prods.append((6, lambda: f"@zip({g(TList(INT))}, {g(TList(VEC))})"))
    elif isinstance(ty, TOption):
        prods.append((3, lambda: f"Some({g(ty.elem)})"))
    elif isinstance(ty, TUser):
        def ctor() -> str:
            name, fields = _pick(draw, user_ctors(ctx.prefix))
            return name + (_args_text([g(f) for f in fields]) if fields else "")
        prods.append((5, ctor))
    elif isinstance(ty, TFn):
        prods.append((5, lambda: _closure(draw, ty, env, d)))
        if len(ty.params) == 1 and ty.params[0] == ty.ret:
            prods.append((2, lambda: f"@compose({g(ty)}, {g(ty)})"))
            prods.append((2, lambda: f"@iterate({g(ty)}, {draw(st.integers(0, 3))})"))
    else:
        raise AssertionError(ty)
    return _choose(draw, prods)


def _let(draw: Draw, ty: Ty, env: Env, d: int) -> str:
    bound = _pick(draw, DATA_TYPES + FN_TYPES)
    shadowable = [n for n, _ in env.vars if n.startswith("%v")]
    value_env = env
    if shadowable and draw(st.integers(0, 7)) == 0:
        # rebinding shadows; the value may not use the old binding (a
        # let-bound name is in scope in its own value, for recursion)
        name = _pick(draw, shadowable)
        value_env = Env(env.ctx, tuple(v for v in env.vars if v[0] != name))
    else:
        name = env.ctx.fresh()
    value = gen_expr(draw, bound, value_env, d)
    body = gen_expr(draw, ty, env.bind((name, bound)), d)
    return f"(let {name}: {env.ctx.t(bound)} = {value}; {body})"


def _ref_new(draw: Draw, ty: Ty, env: Env, d: int) -> str:
    elem = _pick(draw, REF_ELEMS)
    name = env.ctx.fresh("r")
    init = gen_expr(draw, elem, env, d)
    inner = env.bind((name, TRef(elem)))
    if draw(st.booleans()):
        body = _ref_write(draw, ty, inner, d, name)
    else:
        body = gen_expr(draw, ty, inner, d)
    return f"(let {name}: {env.ctx.t(TRef(elem))} = ref({init}); {body})"


def _ref_write(draw: Draw, ty: Ty, env: Env, d: int, name: str | None = None) -> str:
    """``ref_write(r, v); body`` for a reference ``r`` in scope."""
    refs = env.refs()
    name, elem = _pick(draw, refs) if name is None else (name, dict(refs)[name])
    value = gen_expr(draw, elem, env, d)
    body = gen_expr(draw, ty, env, d)
    return f"(ref_write({name}, {value}); {body})"


def _projection(draw: Draw, ty: Ty, env: Env, d: int) -> str:
    other = _pick(draw, [INT, VEC, TOption(INT)])
    index = draw(st.integers(0, 1))
    items = (ty, other) if index == 0 else (other, ty)
    return f"({gen_expr(draw, TTuple(items), env, d)}).{index}"


def _closure(draw: Draw, ty: TFn, env: Env, d: int) -> str:
    """A function literal; its body may use (capture) everything in scope."""
    ctx = env.ctx
    params = [(ctx.fresh("p"), p) for p in ty.params]
    body = gen_expr(draw, ty.ret, env.bind(*params), d)
    sig = ", ".join(f"{n}: {ctx.t(t)}" for n, t in params)
    return f"fn ({sig}) -> {ctx.t(ty.ret)} {{ {body} }}"


def _closure_call(draw: Draw, ty: Ty, env: Env, d: int) -> str:
    params = _pick(draw, [(INT,), (VEC,), (INT, VEC), (TList(INT),)])
    fty = TFn(params, ty)
    callee = gen_expr(draw, fty, env, d)
    args = ", ".join(gen_expr(draw, p, env, d) for p in params)
    if callee.startswith("%"):
        return f"{callee}({args})"
    name = env.ctx.fresh("f")
    return f"(let {name}: {env.ctx.t(fty)} = {callee}; {name}({args}))"


def _fold(draw: Draw, ty: Ty, env: Env, d: int) -> str:
    """``foldl``/``foldr`` to ``ty`` with any function value of the right
    type (a closure literal, an operator, a constructor, ...)."""
    elems = [INT, VEC, PAIR] + ([ty] if ty in (INT, VEC) else [])
    if isinstance(ty, TList):
        elems.append(ty.elem)
    elem = _pick(draw, elems)
    left = draw(st.booleans())
    fty = TFn((ty, elem), ty) if left else TFn((elem, ty), ty)
    fn = gen_expr(draw, fty, env, d)
    init = gen_expr(draw, ty, env, d)
    xs = gen_expr(draw, TList(elem), env, d)
    fold = "@foldl" if left else "@foldr"
    return _pinned(env.ctx, fn, TList(elem), xs, lambda x: f"{fold}({fn}, {init}, {x})")


def _pinned(ctx: Ctx, fn: str, xs_ty: Ty, xs: str, use: Callable[[str], str]) -> str:
    """``use(xs)``, with ``xs`` let-bound under its type annotation unless
    ``fn`` is a closure literal: ``fn`` may be (or evaluate to) an operator,
    and ``@foldr(add, %z, Nil)`` leaves the element type to the operator's
    type relation, which cannot solve it."""
    if not fn.startswith("fn ("):
        name = ctx.fresh("xs")
        return f"(let {name}: {ctx.t(xs_ty)} = {xs}; {use(name)})"
    return use(xs)


def _map(draw: Draw, ty: TList, env: Env, d: int) -> str:
    src = _pick(draw, [INT, VEC, PAIR])
    f = gen_expr(draw, TFn((src,), ty.elem), env, d)
    xs = gen_expr(draw, TList(src), env, d)
    return _pinned(env.ctx, f, TList(src), xs, lambda x: f"@map({f}, {x})")


def _unfoldr(draw: Draw, ty: TList, env: Env, d: int) -> str:
    """``unfoldr`` with a seed counting down to 0 (at most 4 elements)."""
    ctx = env.ctx
    s = ctx.fresh("s")
    step_ty = TOption(TTuple((INT, ty.elem)))
    elem = gen_expr(draw, ty.elem, env.bind((s, INT)), d)
    seed = f"minimum({gen_expr(draw, INT, env, d)}, 4)"
    fn = (f"fn ({s}: int32) -> {ctx.t(step_ty)} {{ if ({s} <= 0) {{ None }} "
          f"else {{ Some(({s} - 1, {elem})) }} }}")
    return f"@unfoldr({fn}, {seed})"


# ------------------------------------------------------------------- match


def gen_pattern(draw: Draw, ty: Ty, env: Env, depth: int) -> tuple[str, list[tuple[str, Ty]]]:
    """A random (possibly refutable, possibly nested) pattern for ``ty``
    and the variables it binds."""
    ctx = env.ctx
    choices = ["wild", "var"]
    if depth > 0 and isinstance(ty, (TList, TOption, TUser, TTuple)):
        choices += ["ctor"] * 3
    kind = _pick(draw, choices)
    if kind == "wild":
        return "_", []
    if kind == "var":
        name = ctx.fresh("q")
        return name, [(name, ty)]
    if isinstance(ty, TList):
        ctors = [("Cons", (ty.elem, ty)), ("Nil", ())]
    elif isinstance(ty, TOption):
        ctors = [("Some", (ty.elem,)), ("None", ())]
    elif isinstance(ty, TUser):
        ctors = user_ctors(ctx.prefix)
    else:
        assert isinstance(ty, TTuple)
        ctors = [("", ty.items)]
    name, fields = _pick(draw, ctors)
    binds: list[tuple[str, Ty]] = []
    subs = []
    for f in fields:
        text, b = gen_pattern(draw, f, env, depth - 1)
        subs.append(text)
        binds += b
    if not fields:
        return name, binds
    return name + (_args_text(subs) if name else _tuple_text(subs)), binds


def _ctor_clauses(ty: Ty, prefix: str) -> list[tuple[str, tuple[Ty, ...]]] | None:
    if isinstance(ty, TList):
        return [("Cons", (ty.elem, ty)), ("Nil", ())]
    if isinstance(ty, TOption):
        return [("Some", (ty.elem,)), ("None", ())]
    if isinstance(ty, TUser):
        return user_ctors(prefix)
    return None


def _match(draw: Draw, ty: Ty, env: Env, d: int) -> str:
    ctx = env.ctx
    scrut_ty = _pick(draw, DATA_TYPES)
    # the scrutinee is annotated: `Nil`, `None` or `if (...) { Nil } else
    # { Nil }` alone leave the element type open, and a clause computing
    # `maximum(%head, 0f)` or `%head == -2` cannot fix it (broadcasting is
    # not invertible); found by scripts/fuzz.py
    name = ctx.fresh("s")
    scrut = f"(let {name}: {ctx.t(scrut_ty)} = {gen_expr(draw, scrut_ty, env, d)}; {name})"
    clauses: list[str] = []
    full = _ctor_clauses(scrut_ty, ctx.prefix)
    if full is not None and draw(st.booleans()):
        # one clause per constructor, in a random order, flat patterns
        order = draw(st.permutations(full))
        for name, fields in order:
            binds = []
            subs = []
            for f in fields:
                if draw(st.booleans()):
                    n = ctx.fresh("q")
                    binds.append((n, f))
                    subs.append(n)
                else:
                    subs.append("_")
            pat = name + (_args_text(subs) if fields else "")
            clauses.append(f"{pat} => {gen_expr(draw, ty, env.bind(*binds), d)}")
    else:
        for _ in range(draw(st.integers(1, 3))):
            pat, binds = gen_pattern(draw, scrut_ty, env, 3)
            clauses.append(f"{pat} => {gen_expr(draw, ty, env.bind(*binds), d)}")
        pat, binds = gen_pattern(draw, scrut_ty, env, 0)  # a catch-all
        clauses.append(f"{pat} => {gen_expr(draw, ty, env.bind(*binds), d)}")
    return f"(match ({scrut}) {{ " + ", ".join(clauses) + " })"


# ----------------------------------------------------------------- globals


def _new_global(draw: Draw, ret: Ty, env: Env, d: int) -> GlobalFn:
    """Define a terminating recursive global returning ``ret`` (its body
    sees only its parameters; it is callable from the rest of the program
    only once defined)."""
    ctx = env.ctx
    ctx.n_started += 1
    ctx.n_defined += 1
    name = f"@g_{ctx.prefix}_{ctx.n_defined}"
    params = tuple(draw(st.lists(st.sampled_from([INT, VEC, TList(INT)]), min_size=0, max_size=2)))
    kind = _pick(draw, ["fuel", "list"])
    first = INT if kind == "fuel" else TList(_pick(draw, [INT, VEC]))
    head = ctx.fresh("n") if kind == "fuel" else ctx.fresh("xs")
    pnames = [(ctx.fresh("a"), p) for p in params]
    penv = Env(ctx).bind((head, first), *pnames)
    depth = min(d, 2)
    tail_call = draw(st.booleans())

    def step(step_env: Env, smaller: str) -> str:
        args = ", ".join([smaller] + [gen_expr(draw, p, step_env, 1) for p in params])
        call = f"{name}({args})"
        if tail_call:
            return call
        r = ctx.fresh("rec")
        rest = gen_expr(draw, ret, step_env.bind((r, ret)), depth)
        return f"let {r}: {ctx.t(ret)} = {call}; {rest}"

    if kind == "fuel":
        base = gen_expr(draw, ret, penv, depth)
        body = f"if ({head} <= 0) {{ {base} }} else {{ {step(penv, f'{head} - 1')} }}"
    else:
        x, t = ctx.fresh("x"), ctx.fresh("t")
        cons_env = penv.bind((x, first.elem), (t, first))
        cons = step(cons_env, t)
        base = gen_expr(draw, ret, penv, depth)
        body = f"match ({head}) {{ Cons({x}, {t}) => {{ {cons} }}, Nil => {{ {base} }} }}"
    sig = ", ".join(f"{n}: {ctx.t(t)}" for n, t in [(head, first)] + pnames)
    ctx.defs.append(f"def {name}({sig}) -> {ctx.t(ret)} {{\n  {body}\n}}\n")
    fn = GlobalFn(name, kind, first, params, ret)
    ctx.n_started -= 1
    ctx.globals.append(fn)
    return fn


def _global_call(draw: Draw, fn: GlobalFn, env: Env, d: int) -> str:
    if fn.kind == "fuel":
        # From main, a global over scalars and vectors may loop longer (self
        # tail calls become loops); one with list parameters or results may
        # not: a step like @concat(%a, %a) doubles a list per level.
        scalar = all(t in (INT, VEC) for t in (fn.first,) + fn.params + (fn.ret,))
        most = 40 if scalar and not env.ctx.n_started else 4
        first = _pick(draw, [str(draw(st.integers(0, most))),
                             f"minimum({gen_expr(draw, INT, env, d)}, 4)"])
    else:
        first = gen_expr(draw, fn.first, env, d)
    args = [first] + [gen_expr(draw, p, env, d) for p in fn.params]
    return f"{fn.name}({', '.join(args)})"


# ---------------------------------------------------------------- programs


@dataclass(frozen=True)
class CtorSpec:
    """An ADT argument before it meets a module: constructor name and
    fields (see :func:`realize`)."""
    name: str
    fields: tuple = ()


@dataclass(frozen=True)
class Program:
    """One generated program: its text (a module with ``@main``), the
    types of main's parameters and the arguments to call it with
    (tensors, tuples and :class:`CtorSpec`; :meth:`arguments` builds
    runtime values for a parsed module)."""
    prefix: str
    text: str
    params: tuple[Ty, ...]
    args: tuple
    ret: Ty

    def arguments(self, mod) -> tuple:
        return tuple(realize(a, mod) for a in self.args)


def realize(spec: object, mod) -> object:
    """The runtime value (interpreter format) of an argument spec, with
    the constructors of ``mod``."""
    from aot.values import ConstructorValue
    if isinstance(spec, CtorSpec):
        ctor = mod.constructor(spec.name)
        assert ctor is not None, spec.name
        return ConstructorValue(ctor, tuple(realize(f, mod) for f in spec.fields))
    if isinstance(spec, tuple):
        return tuple(realize(f, mod) for f in spec)
    return spec


def spec_text(spec: object) -> str:
    if isinstance(spec, CtorSpec):
        return spec.name + (_args_text([spec_text(f) for f in spec.fields]) if spec.fields else "")
    if isinstance(spec, tuple):
        return _tuple_text([spec_text(f) for f in spec])
    return np.array2string(np.asarray(spec), separator=", ")


def _type_def(prefix: str) -> str:
    ctors = []
    for name, fields in user_ctors(prefix):
        ctors.append(name + ("(" + ", ".join(ty_text(f, prefix) for f in fields) + ")"
                             if fields else ""))
    return f"type Box_{prefix} {{\n  " + ",\n  ".join(ctors) + ",\n}\n"


def _arg(draw: Draw, ty: Ty, prefix: str, depth: int = 2) -> object:
    """A random argument of type ``ty`` (small lists, shallow ADTs)."""
    if ty == INT:
        return np.array(draw(st.integers(-6, 6)), dtype=np.int32)
    if ty == VEC:
        quarters = draw(st.lists(st.integers(-12, 12), min_size=VEC_LEN, max_size=VEC_LEN))
        return np.array(quarters, dtype=np.float32) / np.float32(4)
    if isinstance(ty, TTuple):
        return tuple(_arg(draw, t, prefix, depth) for t in ty.items)
    if isinstance(ty, TList):
        items = [_arg(draw, ty.elem, prefix, depth) for _ in range(draw(st.integers(0, 3)))]
        value = CtorSpec("Nil")
        for item in reversed(items):
            value = CtorSpec("Cons", (item, value))
        return value
    if isinstance(ty, TOption):
        if draw(st.booleans()):
            return CtorSpec("Some", (_arg(draw, ty.elem, prefix, depth),))
        return CtorSpec("None")
    if isinstance(ty, TUser):
        ctors = user_ctors(prefix)
        if depth <= 0:
            ctors = [c for c in ctors if USER not in c[1]]
        name, fields = _pick(draw, ctors)
        return CtorSpec(name, tuple(_arg(draw, f, prefix, depth - 1) for f in fields))
    raise AssertionError(ty)


#: types of main's extra parameters (values converted into the C program)
ARG_TYPES: tuple[Ty, ...] = (TList(INT), TList(VEC), TOption(INT), USER, PAIR, TList(PAIR))


#: results of a differentiable program's main (aot.gradient seeds tensors)
DIFFERENTIABLE_RETS: tuple[Ty, ...] = (VEC, PAIR)


@st.composite
def programs(draw: Draw, prefix: str = "p0", depth: int = 4,
             differentiable: bool = False) -> Program:
    """A random program (see the module docstring).  ``differentiable``:
    main takes only int32 scalars and float vectors and returns a vector
    or an (int32, vector) pair -- the domain of ``aot.gradient`` -- while
    its body still uses closures, lists, ADTs, ``match``, ``if``,
    recursion and references (see :func:`as_float64`)."""
    ctx = Ctx(prefix)
    n_int = draw(st.integers(1, 2))
    n_vec = draw(st.integers(1, 2))
    n_data = 0 if differentiable else draw(st.integers(0, 2))
    params = (INT,) * n_int + (VEC,) * n_vec + tuple(_pick(draw, ARG_TYPES) for _ in range(n_data))
    names = [(ctx.fresh("x"), p) for p in params]
    ret = _pick(draw, DIFFERENTIABLE_RETS if differentiable else DATA_TYPES)
    body = gen_expr(draw, ret, Env(ctx).bind(*names), depth, leaf=False)
    sig = ", ".join(f"{n}: {ctx.t(t)}" for n, t in names)
    main = f"def @main({sig}) -> {ctx.t(ret)} {{\n  {body}\n}}\n"
    text = '#[version = "0.0.5"]\n' + _type_def(prefix) + "".join(ctx.defs) + main
    args = tuple(_arg(draw, p, prefix) for p in params)
    return Program(prefix, text, params, args, ret)


def as_float64(text: str) -> str:
    """A generated program with its float32 vectors and literals in
    float64, for central differences (the float operations the generator
    uses are all differentiable away from ties and kinks)."""
    import re
    return re.sub(r"\b(\d+(?:\.\d+)?)f\b", r"\1f64", text.replace("float32", "float64"))


@st.composite
def program_packs(draw: Draw, min_size: int = 2, max_size: int = 6,
                  depth: int = 4) -> list[Program]:
    """Several independent programs with disjoint names (see :func:`pack`)."""
    n = draw(st.integers(min_size, max_size))
    return [draw(programs(prefix=f"p{k}", depth=depth)) for k in range(n)]


def pack(progs: list[Program]) -> tuple[str, tuple]:
    """One module whose ``@main`` takes every program's arguments and
    returns the tuple of their results; each program's own main becomes
    ``@<prefix>_main``."""
    parts = ['#[version = "0.0.5"]\n']
    sig, calls, args = [], [], []
    for p in progs:
        body = p.text.split("\n", 1)[1]  # drop the version line
        assert body.count("def @main(") == 1
        parts.append(body.replace("def @main(", f"def @{p.prefix}_main(", 1))
        names = [f"%{p.prefix}_x{i}" for i in range(len(p.params))]
        sig += [f"{n}: {ty_text(t, p.prefix)}" for n, t in zip(names, p.params)]
        calls.append(f"@{p.prefix}_main({', '.join(names)})")
        args += p.args
    parts.append(f"def @main({', '.join(sig)}) {{\n  {_tuple_text(calls)}\n}}\n")
    return "".join(parts), tuple(args)


def conforms(value: object, ty: Ty, prefix: str) -> bool:
    """Whether a runtime value (interpreter format) has type ``ty``: a
    check on the generator (the program's declared result type) and on the
    value conversion of a backend."""
    stack = [(value, ty)]
    while stack:
        v, t = stack.pop()
        if isinstance(t, (TInt, TVec, TBool)):
            want = {TInt: ((), np.int32), TVec: ((VEC_LEN,), np.float32),
                    TBool: ((), np.bool_)}[type(t)]
            if not isinstance(v, np.ndarray) or v.shape != want[0] or v.dtype != want[1]:
                return False
        elif isinstance(t, TTuple):
            if not isinstance(v, tuple) or len(v) != len(t.items):
                return False
            stack += list(zip(v, t.items))
        elif isinstance(t, (TList, TOption, TUser)):
            if not hasattr(v, "constructor"):
                return False
            if isinstance(t, TUser):
                ctors = user_ctors(prefix)
            elif isinstance(t, TList):
                ctors = [("Cons", (t.elem, t)), ("Nil", ())]
            else:
                ctors = [("Some", (t.elem,)), ("None", ())]
            fields = dict(ctors).get(v.constructor.name)
            if fields is None or len(fields) != len(v.fields):
                return False
            stack += list(zip(v.fields, fields))
        else:
            return False  # functions and references are not results of main
    return True
