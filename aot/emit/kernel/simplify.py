"""Simplification of kernel IR, so printed indices read like hand-written C.

Design note
-----------
One bottom-up pass over each expression (:func:`simplify_expr`, built on
the iterative :func:`~aot.emit.kernel.walk.postorder`): children are
simplified first, then one node is rewritten by a short list of local
rules.  Every rule is exact under the IR's semantics -- the result equals
the original for every input, NaN and wrap-around included:

* **Constant folding** through :func:`~aot.emit.kernel.evaluate.evaluate`, the
  reference semantics (so ``INT_MIN / -1``, ``x / 0``, float16 rounding and
  saturating casts fold exactly as they run).  Calls are never folded:
  ``libm`` decides their last bits at run time.
* **Integer identities**: ``x + 0``, ``x - 0``, ``x * 1``, ``x * 0``,
  ``x / 1``, ``x % 1``, shifts by 0, ``x | 0``, ``x ^ 0``, ``x & 0``,
  ``x & ~x``, ``x | ~x``, ``x ^ ~x``, ``x & ~0``, ``x | ~0`` (gcc's folder
  turns some of these into constants it then warns about).
  Floats get none (``x + 0.0`` is not ``x`` for ``x = -0.0``).
* **Quotient and remainder**: ``(a / k) * k + a % k`` -> ``a`` for a
  constant ``k > 0`` (truncating or floor pair), also as the last two
  terms of a sum.
* **Constant offsets** of integer sums are gathered to the right:
  ``((i + 1) + j) - 3`` becomes ``i + j - 2``; products of constants
  likewise (``(i * 4) * 8`` -> ``i * 32``).  Wrapping arithmetic is
  associative modulo 2^bits; ``no_wrap`` arithmetic is re-associated only
  with operands of the same flag (see the ``no_wrap`` promise in
  :mod:`aot.emit.kernel.ir`), and only when the merged constant fits.
* **Decided comparisons**: an integer comparison whose operands' value
  ranges already decide it (``u >= 0`` on unsigned, ``(int32_t)u8 < 256``)
  folds to a constant -- gcc's ``-Wtype-limits`` and clang's tautological
  comparison warnings would otherwise reject the C.  So does a conversion
  to bool decided that way, and ``(x & 4) == 3``-style comparisons gcc
  proves false.
* **Same operands** (integers and bool): ``x & x``, ``x | x``, ``min(x, x)``
  -> ``x``; ``x ^ x``, ``x - x`` -> 0; comparisons ``x < x`` fold.
* **Logic and selects**: ``x && 1`` -> ``x``, ``x || 1`` -> ``1`` (clang
  warns about constant logical operands), ``!!x`` -> ``x``, a select on a
  constant condition or with equal arms.
* **Float min / max with a constant** (``float32``/``float64``, the
  constant not NaN): the NaN-propagating helper needs two comparisons
  (``(a > b || a != a) ? a : b``); against a constant one suffices --
  ``max(x, c)`` is ``x <= c ? c : x`` (NaN compares false and stays),
  ``max(c, x)`` is ``c > x ? c : x``, ``min(x, c)`` is ``x >= c ? c : x``,
  ``min(c, x)`` is ``c < x ? c : x``, ties resolving to the same operand as
  the helper (so signed zeros come out the same).  ReLU and ReLU6 are
  these; on a Cortex-M4F each saves a compare and a flag transfer per
  element.

Statements (:func:`simplify_stmt`): loops of extent 0 vanish, loops of
extent 1 become their body with the variable replaced by the start; a
constant ``if`` keeps one branch; nested blocks without declarations are
spliced into their parent (a block that declares stays a C scope); empty
statements disappear.  :func:`simplify_kernel` also removes scalar
temporaries that are never read (which would otherwise be unused-variable
warnings).
"""

from __future__ import annotations

import math
from typing import Mapping

from ...ir.dtype import DType
from .evaluate import evaluate
from .ir import (Assign, BinaryOperator, BinOp, Block, Cast, Comment, Const, Decl,
                 Expr, For, IfThenElse, Kernel, Select, Stmt, Store, UnaryOp,
                 UnaryOperator, Var, dtype_range)
from .ranges import decided_comparison
from .walk import children, postorder, stmt_exprs, walk_exprs, walk_stmts, with_children

__all__ = ["simplify_expr", "simplify_stmt", "simplify_kernel"]

_O = BinaryOperator


def simplify_expr(root: Expr, env: Mapping[Var, Expr] | None = None) -> Expr:
    """``root`` simplified; with ``env``, as if its variables in ``env`` had
    been replaced first (the values are used as they are)."""
    if not env:
        def combine(e: Expr, kids: list[Expr]) -> Expr:
            return _rewrite(with_children(e, kids) if kids else e)
        return postorder(root, children, combine)

    def bound(e: Expr, kids: list[Expr]) -> Expr:
        if isinstance(e, Var):
            value = env.get(e)
            if value is not None:
                return value
        return _rewrite(with_children(e, kids) if kids else e)
    return postorder(root, children, bound)


# ================================================================ one node

def _rewrite(e: Expr) -> Expr:
    if isinstance(e, (BinOp, UnaryOp, Cast, Select)):
        if all(isinstance(k, Const) for k in children(e)):
            return _fold(e)
    if isinstance(e, Cast):
        if e.a.dtype is e.to:
            return e.a
        if e.to is DType.BOOL and e.a.dtype.is_int:     # x != 0
            decided = decided_comparison(BinOp(_O.NE, e.a, Const(0, e.a.dtype)))
            if decided is not None:
                return Const(int(decided), DType.BOOL)
        return e
    if isinstance(e, Select):
        if isinstance(e.cond, Const):
            return e.a if int(e.cond.value) else e.b
        return e.a if e.a == e.b else e
    if isinstance(e, UnaryOp):
        inner = e.a
        if e.op is UnaryOperator.NOT and isinstance(inner, UnaryOp) \
                and inner.op is UnaryOperator.NOT:
            return inner.a
        return e
    if isinstance(e, BinOp):
        if e.a == e.b and not e.a.dtype.is_float:
            same = _same_operands(e)
            if same is not None:
                return same
        if e.op.is_logical:
            return _logical(e)
        if e.op.is_comparison:
            return _comparison(e)
        if e.a.dtype.is_int:
            return _integer(e)
        if e.op in (_O.MIN, _O.MAX) and e.a.dtype in (DType.FLOAT32, DType.FLOAT64):
            return _float_extremum(e)
    return e


def _not_nan_const(e: Expr) -> bool:
    return isinstance(e, Const) and not math.isnan(float(e.value))


def _float_extremum(e: BinOp) -> Expr:
    """``min``/``max`` of a float and a non-NaN constant as one select
    (exact; see the module note)."""
    a, b = e.a, e.b
    if _not_nan_const(b):               # op(x, c): c when x <= c (max) / x >= c (min)
        cond = BinOp(_O.LE if e.op is _O.MAX else _O.GE, a, b)
        return Select(cond, b, a)
    if _not_nan_const(a):               # op(c, x): c when c > x (max) / c < x (min)
        cond = BinOp(_O.GT if e.op is _O.MAX else _O.LT, a, b)
        return Select(cond, a, b)
    return e


_IDEMPOTENT = (_O.BIT_AND, _O.BIT_OR, _O.MIN, _O.MAX, _O.AND, _O.OR)


def _same_operands(e: BinOp) -> Expr | None:
    """``x op x`` on integers or bool, when it simplifies."""
    if e.op in _IDEMPOTENT:
        return e.a
    if e.op in (_O.BIT_XOR, _O.SUB):
        return Const(0, e.dtype)
    return None


def _fold(e: Expr) -> Const:
    value = evaluate(e, {}, {})
    return Const(value, e.dtype)


def _logical(e: BinOp) -> Expr:
    for const, other in ((e.a, e.b), (e.b, e.a)):
        if isinstance(const, Const):
            truth = bool(const.value)
            if e.op is _O.AND:
                return other if truth else Const(0, DType.BOOL)
            return Const(1, DType.BOOL) if truth else other
    return e


# ============================================================ comparisons

def _comparison(e: BinOp) -> Expr:
    t = e.a.dtype
    if not (t.is_int or t is DType.BOOL):
        return e
    decided = decided_comparison(e)
    return e if decided is None else Const(int(decided), DType.BOOL)


# ======================================================= integer arithmetic

def _wrap(value: int, t: DType) -> int:
    bits = t.bits
    value %= 1 << bits
    if t.is_signed and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


def _fits(value: int, t: DType) -> bool:
    lo, hi = dtype_range(t)
    return lo <= value <= hi


def _merge_constant(value: int, t: DType, no_wrap: bool) -> int | None:
    """A merged constant in ``t``, or None when a no-wrap one overflows."""
    if no_wrap:
        return value if _fits(value, t) else None
    return _wrap(value, t)


def _is_const(e: Expr, value: int) -> bool:
    return isinstance(e, Const) and int(e.value) == value


def _complements(x: Expr, y: Expr) -> bool:
    return isinstance(y, UnaryOp) and y.op is UnaryOperator.BIT_NOT and y.a == x


def _integer(e: BinOp) -> Expr:
    a, b, t = e.a, e.b, e.a.dtype
    op = e.op
    if op.is_bitwise and (_complements(a, b) or _complements(b, a)):   # x | ~x
        return Const(0 if op is _O.BIT_AND else _all_ones(t), t)
    if op is _O.ADD:
        whole = _recombined(e)
        if whole is not None:
            return _sum(whole) if isinstance(whole, BinOp) and whole.op is _O.ADD else whole
    if op in (_O.ADD, _O.SUB):
        return _sum(e)
    if op is _O.MUL:
        return _product(e)
    if op in (_O.DIV, _O.FLOORDIV) and _is_const(b, 1):
        return a
    if op in (_O.MOD, _O.FLOORMOD) and _is_const(b, 1):
        return Const(0, t)
    if op.is_shift and _is_const(b, 0):
        return a
    if op in (_O.BIT_OR, _O.BIT_XOR):
        if _is_const(b, 0):
            return a
        if _is_const(a, 0):
            return b
    if op is _O.BIT_AND and (_is_const(a, 0) or _is_const(b, 0)):
        return Const(0, t)
    ones = _all_ones(t)
    if op in (_O.BIT_AND, _O.BIT_OR):
        for x, y in ((a, b), (b, a)):
            if _is_const(y, ones):      # x & ~0 is x; x | ~0 is ~0
                return x if op is _O.BIT_AND else y
    return e


_DIVMOD = {_O.DIV: _O.MOD, _O.FLOORDIV: _O.FLOORMOD}


def _quotient_times(m: Expr) -> tuple[Expr, int, BinaryOperator] | None:
    """``m`` as ``(a / k) * k`` with a constant ``k > 0``: ``(a, k, op)``."""
    if not (isinstance(m, BinOp) and m.op is _O.MUL):
        return None
    for q, c in ((m.a, m.b), (m.b, m.a)):
        if isinstance(c, Const) and isinstance(q, BinOp) and q.op in _DIVMOD \
                and _is_const(q.b, int(c.value)) and int(c.value) > 0:
            return q.a, int(c.value), q.op
    return None


def _pairs(m: Expr, r: Expr) -> Expr | None:
    """``a`` when ``m + r`` is ``(a / k) * k + a % k`` (or the floor pair)."""
    found = _quotient_times(m)
    if found is None:
        return None
    a, k, op = found
    if isinstance(r, BinOp) and r.op is _DIVMOD[op] and r.a == a and _is_const(r.b, k):
        return a
    return None


def _recombined(e: BinOp) -> Expr | None:
    """``(a / k) * k + a % k`` is ``a`` (``k > 0`` constant; C's truncating
    pair and the floor pair alike, no overflow possible), also as the last
    two terms of a sum ``x + (a / k) * k + a % k`` -> ``x + a``.  An output
    index of a pointwise convolution whose positions are flattened
    (``p / W`` and ``p % W`` as row and column) becomes ``p`` again."""
    for m, r in ((e.a, e.b), (e.b, e.a)):
        a = _pairs(m, r)
        if a is not None:
            return a
    inner = e.a
    if isinstance(inner, BinOp) and inner.op is _O.ADD and inner.no_wrap == e.no_wrap:
        for m, rest in ((inner.b, inner.a), (inner.a, inner.b)):
            a = _pairs(m, e.b)
            if a is not None and a.dtype is e.dtype:
                return BinOp(_O.ADD, rest, a, e.no_wrap)
    return None


def _all_ones(t: DType) -> int:
    return -1 if t.is_signed else (1 << t.bits) - 1


def _split_offset(e: Expr, no_wrap: bool) -> tuple[Expr | None, int]:
    """``e`` as ``base + k`` (``base`` None for a constant)."""
    if isinstance(e, Const):
        return None, int(e.value)
    if isinstance(e, BinOp) and e.op in (_O.ADD, _O.SUB) and e.no_wrap == no_wrap \
            and isinstance(e.b, Const):
        k = int(e.b.value)
        return e.a, k if e.op is _O.ADD else -k
    return e, 0


def _sum(e: BinOp) -> Expr:
    t, nw = e.a.dtype, e.no_wrap
    ba, ka = _split_offset(e.a, nw)
    bb, kb = _split_offset(e.b, nw)
    if e.op is _O.SUB:
        if bb is not None:      # c - x and x - y keep their shape
            return e
        k = ka - kb
        base = ba
    else:
        k = ka + kb
        if ba is not None and bb is not None:
            if ka == 0 and kb == 0:
                return e
            base = BinOp(_O.ADD, ba, bb, nw)
        else:
            base = ba if ba is not None else bb
    merged = _merge_constant(k, t, nw)
    if merged is None or base is None:
        return e
    return _with_offset(base, merged, t, nw)


def _with_offset(base: Expr, k: int, t: DType, no_wrap: bool) -> Expr:
    """``base + k`` written with a non-negative constant where possible."""
    if k == 0:
        return base
    if t.is_unsigned and k > 1 << (t.bits - 1):
        return BinOp(_O.SUB, base, Const((1 << t.bits) - k, t), no_wrap)
    if k < 0 and _fits(-k, t):
        return BinOp(_O.SUB, base, Const(-k, t), no_wrap)
    return BinOp(_O.ADD, base, Const(k, t), no_wrap)


def _product(e: BinOp) -> Expr:
    a, b, t, nw = e.a, e.b, e.a.dtype, e.no_wrap
    if isinstance(a, Const) and not isinstance(b, Const):
        a, b = b, a
    if _is_const(b, 0):
        return Const(0, t)
    if _is_const(b, 1):
        return a
    if isinstance(b, Const) and isinstance(a, BinOp) and a.op is _O.MUL \
            and a.no_wrap == nw and isinstance(a.b, Const):
        merged = _merge_constant(int(a.b.value) * int(b.value), t, nw)
        if merged is not None:
            return _product(BinOp(_O.MUL, a.a, Const(merged, t), nw))
    if a is e.a and b is e.b:
        return e
    return BinOp(_O.MUL, a, b, nw)


# =============================================================== statements

def _declares(s: Stmt) -> bool:
    return isinstance(s, Block) and any(isinstance(x, Decl) for x in s.stmts)


def _is_empty(s: Stmt) -> bool:
    return isinstance(s, Block) and not s.stmts


_EMPTY = Block(())


def simplify_stmt(s: Stmt) -> Stmt:
    return _simplify_stmt(s, {})


def _simplify_stmt(s: Stmt, env: dict[Var, Expr]) -> Stmt:
    """``s`` simplified, its variables in ``env`` replaced by their
    (simplified) values: a loop of extent 1 binds its variable to its start
    here, which gives what substituting the start into the body and then
    simplifying the body gives, without rewriting the body once per loop."""
    if isinstance(s, Block):
        out: list[Stmt] = []
        for x in s.stmts:
            x = _simplify_stmt(x, env)
            if isinstance(x, Block) and not _declares(x):
                out.extend(x.stmts)
            elif not _is_empty(x):
                out.append(x)
        return Block(tuple(out))
    if isinstance(s, For):
        start, extent = simplify_expr(s.start, env), simplify_expr(s.extent, env)
        if _is_const(extent, 0):
            return _EMPTY
        if _is_const(extent, 1):
            # the substituted start is simplified again where it lands
            return _simplify_stmt(s.body, {**env, s.var: simplify_expr(start)})
        body = _simplify_stmt(s.body, env)
        if _is_empty(body):
            return _EMPTY
        return For(s.var, start, extent, body, s.kind)
    if isinstance(s, IfThenElse):
        cond = simplify_expr(s.cond, env)
        if isinstance(cond, Const):
            chosen = s.then if int(cond.value) else s.else_
            return _EMPTY if chosen is None else _simplify_stmt(chosen, env)
        then = _simplify_stmt(s.then, env)
        else_ = None if s.else_ is None else _simplify_stmt(s.else_, env)
        if else_ is not None and _is_empty(else_):
            else_ = None
        if _is_empty(then):
            if else_ is None:
                return _EMPTY
            return IfThenElse(simplify_expr(UnaryOp(UnaryOperator.NOT, cond)), else_)
        return IfThenElse(cond, then, else_)
    if isinstance(s, Store):
        return Store(s.buffer, simplify_expr(s.index, env), simplify_expr(s.value, env))
    if isinstance(s, Decl):
        return s if s.init is None else Decl(s.var, simplify_expr(s.init, env))
    if isinstance(s, Assign):
        return Assign(s.var, simplify_expr(s.value, env))
    assert isinstance(s, Comment), s
    return s


def _read_names(s: Stmt) -> set[str]:
    names: set[str] = set()
    for st in walk_stmts(s):
        for root in stmt_exprs(st):
            names.update(e.name for e in walk_exprs(root) if isinstance(e, Var))
    return names


def _drop_temporaries(s: Stmt, dead: set[str]) -> Stmt:
    if isinstance(s, (Decl, Assign)) and s.var.name in dead:
        return _EMPTY
    if isinstance(s, Block):
        return Block(tuple(_drop_temporaries(x, dead) for x in s.stmts))
    if isinstance(s, For):
        return For(s.var, s.start, s.extent, _drop_temporaries(s.body, dead), s.kind)
    if isinstance(s, IfThenElse):
        return IfThenElse(s.cond, _drop_temporaries(s.then, dead),
                          None if s.else_ is None else _drop_temporaries(s.else_, dead))
    return s


def simplify_kernel(kernel: Kernel) -> Kernel:
    body = simplify_stmt(kernel.body)
    while True:
        declared = {st.var.name for st in walk_stmts(body) if isinstance(st, Decl)}
        dead = declared - _read_names(body)
        if not dead:
            break
        body = simplify_stmt(_drop_temporaries(body, dead))
    return Kernel(kernel.name, kernel.params, body, kernel.comment)

