"""C99 printer for kernel IR.

Design note
-----------
Printing is two small steps, as pycparser splits its AST from its
generator:

1. **Spelling** (:class:`_Spell`): each kernel-IR expression becomes a tiny
   C expression tree (``CAtom``, ``CIndex``, ``CCall``, ``CCast``,
   ``CUnary``, ``CBinary``, ``CTernary``).  This is where the language's
   exact semantics are mapped onto C without undefined behaviour.
2. **Formatting** (:func:`~aot.emit.c.expr.format_c`, with the C tree in
   :mod:`aot.emit.c.expr`): the C tree becomes text with the *minimal*
   parentheses given by C's precedence and associativity table, plus the
   few "clarity" parentheses gcc's and clang's ``-Wparentheses`` insist on.

Spelling rules (the C the generated code relies on):

* **Types.** ``bool`` is ``uint8_t`` holding 0 or 1 (one byte, as NumPy;
  no ``stdbool.h``); integers are ``<stdint.h>`` types; the narrow floats
  (``float16``, ``bfloat16``, the float8 formats) are stored as their bits
  (``uint16_t``/``uint8_t``) and computed as ``float``; ``int4``/``uint4``
  are computed as ``int8_t``/``uint8_t`` (results wrapped to 4 bits: a
  mask, or for int4 ``(int8_t)((x & 15u ^ 8u) - 8u)``) and stored packed
  two per byte, read with ``aot_load_i4``/``aot_load_u4`` and written with
  ``aot_store_i4``/``aot_store_u4`` (a read-modify-write of the byte).
* **Wrapping integer arithmetic without UB.**  Signed ``+ - *``, ``<<`` and
  unary ``-`` (and the same on ``uint8``/``uint16``, which C promotes to
  ``int``) are computed in ``uint32_t`` (``uint64_t`` for 64-bit types)
  and converted back: ``(int32_t)((uint32_t)a + (uint32_t)b)``.  Chains stay
  in the unsigned domain (``(int8_t)((uint32_t)a * (uint32_t)b + (uint32_t)c)``)
  because the low bits of ``+ - * << ~`` depend only on the operands' low
  bits.  ``uint8``/``uint16`` results are narrowed with a mask rather than a
  cast (``((uint32_t)a + (uint32_t)b) & 255u``): gcc folds narrow unsigned
  arithmetic into ``~x`` forms and then warns when comparing them
  (-Wsign-compare); where such a ``uint32_t`` value meets a promoted ``int``
  in ``?:`` or a comparison, the int side is converted too.
  ``no_wrap`` arithmetic (index math) prints as plain C.
* **bool** ``& | ^`` print as ``&& || !=`` (clang warns about bitwise
  operators on truth values); a truth value under ``~`` is spelled
  ``(c ? 1 : 0)`` (gcc: -Wbool-operation).
* **Division and modulo** go through helpers (``aot_div_i32`` ...) that
  return 0 for a zero divisor and wrap ``INT_MIN / -1``; float ``%`` is
  ``fmodf``/``fmod``.  ``min``/``max`` are helpers (NaN-propagating on
  floats, NumPy's tie rule for signed zeros -- which differs for float16;
  and no operand is evaluated twice).
* **Casts.** float -> integer: ``aot_sat_f32_i8(x)`` etc. (truncate toward
  zero, saturate, NaN -> 0); -> bool: ``x != 0``; integer -> integer:
  ``(int8_t)x`` (masked for uint8/uint16); float16 results are rounded with
  ``aot_round_f16``, float16 loads/stores convert with ``aot_f16_to_f32`` /
  ``aot_f32_to_f16`` (a float16 copy stays a bit copy); the same for the
  other narrow floats with their helpers (``aot_round_bf16``,
  ``aot_e4m3fn_to_f32`` ...), a conversion from a double or an integer
  rounding through float (the interpreter's rule), one from a float8 to
  float16 or bfloat16 needing no rounding.
* **Literals** are bit-exact.  float32 (and float16, whose values are exact
  floats) print as the *shortest decimal that round-trips* with an ``f``
  suffix (``0.1f``, ``1e-45f``, ``3.4028235e+38f``), float64 likewise
  without suffix.  Chosen over hex floats for readability; exactness rests
  on correctly rounded decimal conversion, which C99 Annex F (F.5) requires
  for up to ``DECIMAL_DIG`` significant digits -- shortest forms have at
  most 9 (float) / 17 (double) -- and which gcc and clang implement (the
  tests compile every class of value and compare bits).  NaN and infinity
  are macros: ``AOT_NAN_F32``, ``AOT_INF_F32``, ``AOT_NAN_F64``,
  ``AOT_INF_F64`` (negated with a unary minus; every NaN prints as the
  quiet NaN, so NaN payloads are not preserved).  Integers:
  ``int8``/``int16``/``uint8``/``uint16``/``int32`` in plain decimal,
  ``INT32_MIN`` as ``(-2147483647 - 1)``, ``uint32`` with a ``u`` suffix,
  64-bit ones with ``INT64_C``/``UINT64_C`` (``INT64_MIN`` as
  ``(-INT64_C(9223372036854775807) - 1)``); ``bool`` as ``0``/``1``.

Assumptions about the C implementation (all hold for gcc, clang, armcc
and IAR on every target we care about): two's complement integers,
conversion of an out-of-range value to a signed type wraps modulo 2^N
(implementation-defined in C99, not undefined), ``>>`` of a negative value
is arithmetic, IEEE 754 floats with Annex F conversions,
``FLT_EVAL_METHOD == 0``.  Builds should pass ``-ffp-contract=off`` (clang
fuses ``a * b + c`` into an FMA by default, which changes results; gcc
does not in ``-std=c99`` mode).

The printer assumes a verified kernel (:func:`print_kernel` runs
:func:`~aot.emit.kernel.verify.verify_kernel`) and, for warning-free C, a
simplified one (:mod:`aot.emit.kernel.simplify` folds the comparisons compilers
call tautological; the verifier names them if simplify did not run).

Every helper and macro the printed code may use is listed in
:data:`~aot.emit.c.helpers.HELPERS` and :data:`~aot.emit.c.helpers.MACROS`
(the runtime header provides them); :func:`kernel_helpers` says which ones
one kernel uses.  The C types of dtypes are in :mod:`aot.emit.c.types`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import ml_dtypes
import numpy as np

from ...ir.dtype import DType
from .expr import (BINARY_PREC, CAtom, CBinary, CCall, CCast, CExpr, CIndex, CTernary, CUnary,
                   Prec, format_c, names_in)
from .helpers import HELPERS, MACROS
from .types import c_storage_type, c_value_type, helper_suffix, narrow_float_suffix
from ..kernel.ir import (BinaryOperator, BinOp, Block, Buffer, BufferScope, Call, Cast, Comment,
                         Const, Decl, Expr, For, ForKind, IfThenElse, Kernel, Load, Select, Stmt,
                         Store, UnaryOp, UnaryOperator, Var, Assign, dtype_range)
from ..kernel.verify import verify_kernel
from ..kernel.walk import buffers_in, children, postorder, stored_buffers

__all__ = ["format_float", "format_int", "print_expr", "print_stmt", "print_kernel",
           "printed_kernel", "PrintedKernel", "kernel_prototype", "kernel_helpers", "INDENT"]

INDENT = "    "


# ===================================================== wrapping arithmetic

def _unsigned_domain(dtype: DType) -> str | None:
    """The unsigned type wrapping arithmetic on ``dtype`` is done in, or None
    when C's own arithmetic on the type already wraps (uint32, uint64)."""
    if dtype in (DType.UINT32, DType.UINT64):
        return None
    return "uint64_t" if dtype.bits == 64 else "uint32_t"


# ================================================================= literals

def format_int(value: int, dtype: DType) -> CAtom:
    """An integer literal of ``dtype`` (see the module note)."""
    if dtype is DType.BOOL:
        assert value in (0, 1), value
        return CAtom(str(value))
    info = ml_dtypes.iinfo(dtype.np)
    assert int(info.min) <= value <= int(info.max), (value, dtype)
    if dtype is DType.INT64:
        if value == int(info.min):
            return CAtom(f"(-INT64_C({int(info.max)}) - 1)")
        if value < 0:
            return CAtom(f"-INT64_C({-value})", Prec.UNARY)
        return CAtom(f"INT64_C({value})", Prec.POSTFIX)
    if dtype is DType.UINT64:
        return CAtom(f"UINT64_C({value})", Prec.POSTFIX)
    if dtype is DType.UINT32:
        return CAtom(f"{value}u")
    if dtype is DType.INT32 and value == int(info.min):
        return CAtom("(-2147483647 - 1)")
    return CAtom(str(value), Prec.UNARY if value < 0 else Prec.PRIMARY)


def _unsigned_literal(value: int, domain: str) -> CAtom:
    if domain == "uint64_t":
        return CAtom(f"UINT64_C({value % 2 ** 64})", Prec.POSTFIX)
    return CAtom(f"{value % 2 ** 32}u")


def format_float(value: float, dtype: DType) -> CAtom:
    """A bit-exact literal of a float32/float16 value (as a float) or a
    float64 value (see the module note)."""
    assert dtype.is_float, dtype
    wide = dtype is DType.FLOAT64
    negative = bool(np.signbit(value))
    if np.isnan(value) or np.isinf(value):
        name = ("AOT_NAN_" if np.isnan(value) else "AOT_INF_") + ("F64" if wide else "F32")
        return CAtom(f"-{name}", Prec.UNARY) if negative else CAtom(name)
    if wide:
        text = repr(float(value))
    else:
        f32 = np.float32(value)
        assert float(f32) == value or dtype is DType.FLOAT32, (value, dtype)
        text = str(f32)
        assert np.float32(text) == f32, (value, text)
    assert "." in text or "e" in text, text
    if not wide:
        text += "f"
    return CAtom(text, Prec.UNARY if negative else Prec.PRIMARY)


def _literal(c: Const) -> CAtom:
    if c.dtype.is_float:
        return format_float(float(c.value), c.dtype)
    return format_int(int(c.value), c.dtype)


def _zero(dtype: DType) -> CAtom:
    return _literal(Const(0, dtype))


# ================================================================ spelling

# uint8/uint16 results are narrowed with a mask, not a cast: a value of type
# uint32_t in the type's range.  gcc folds narrow unsigned arithmetic into
# ``~x`` forms and then warns when comparing them (-Wsign-compare, "promoted
# bitwise complement"); a masked uint32_t is not narrowed by that check.
_MASKED = (DType.UINT8, DType.UINT16, DType.UINT4)


def _narrow(inner: CExpr, dtype: DType) -> CExpr:
    """An unsigned-domain value converted back to ``dtype``."""
    if dtype in _MASKED:
        return CBinary("&", inner, CAtom(f"{int(ml_dtypes.iinfo(dtype.np).max)}u"))
    if dtype is DType.INT4:     # the low 4 bits, sign-extended
        low = CBinary("^", CBinary("&", inner, CAtom("15u")), CAtom("8u"))
        return CCast("int8_t", CBinary("-", low, CAtom("8u")))
    return CCast(c_storage_type(dtype), inner)


def _same_signedness(a: _Spelled, b: _Spelled) -> tuple[_Spelled, _Spelled]:
    """Two uint8/uint16 operands with the same C signedness."""
    if a.unsigned_int == b.unsigned_int:
        return a, b
    if a.unsigned_int:
        return a, _Spelled(CCast("uint32_t", b.c), b.wrapped, unsigned_int=True)
    return _Spelled(CCast("uint32_t", a.c), a.wrapped, unsigned_int=True), b


def _preserves_value(src: DType, dst: DType) -> bool:
    """Every value of integer dtype ``src`` is a value of ``dst``."""
    lo, hi = dtype_range(dst)
    slo, shi = dtype_range(src)
    return lo <= slo and shi <= hi


def _is_truth(c: CExpr) -> bool:
    """A C expression the compilers treat as a truth value."""
    if isinstance(c, CBinary):
        return BINARY_PREC[c.op] in (Prec.RELATIONAL, Prec.EQUALITY) or c.op in ("&&", "||")
    if isinstance(c, CUnary):
        return c.op == "!"
    if isinstance(c, CTernary):
        return _is_truth(c.then) and _is_truth(c.else_)
    return False


def _untruth(c: CExpr) -> CExpr:
    """``c`` with a truth value under its integer casts spelled ``t ? 1 : 0``
    (gcc warns about ``~`` applied to a truth value, casts or not)."""
    if isinstance(c, CCast):
        return CCast(c.ctype, _untruth(c.operand))
    if _is_truth(c):
        return CTernary(c, CAtom("1"), CAtom("0"))
    return c


def _is_all_ones(e: Expr) -> bool:
    return isinstance(e, Const) and int(e.value) == int(ml_dtypes.iinfo(e.dtype.np).max)


@dataclass(frozen=True, slots=True)
class _Spelled:
    """C spelling of one kernel-IR expression.  ``wrapped``: for integer
    results computed in an unsigned domain, that unsigned expression (it is
    congruent to the value modulo 2^bits), so a wrapping parent can use it
    without converting back and forth.  ``unsigned_int``: a uint8/uint16
    value spelled with C type ``uint32_t`` (masked) rather than a promoted
    ``int``; where both kinds meet in ``?:`` or a comparison the int side is
    converted, or gcc warns (-Wsign-compare) when it cannot prove the int
    side non-negative."""
    c: CExpr
    wrapped: CExpr | None = None
    unsigned_int: bool = False  # uint8/uint16 only: C type unsigned, not a promoted int


_O = BinaryOperator
_BOOL_BITWISE = {_O.BIT_AND: "&&", _O.BIT_OR: "||", _O.BIT_XOR: "!="}
_RING_C = {_O.ADD: "+", _O.SUB: "-", _O.MUL: "*"}
_PLAIN_C = {_O.BIT_AND: "&", _O.BIT_OR: "|", _O.BIT_XOR: "^", _O.SHR: ">>", _O.EQ: "==",
            _O.NE: "!=", _O.LT: "<", _O.LE: "<=", _O.GT: ">", _O.GE: ">=", _O.AND: "&&",
            _O.OR: "||"}


class _Spell:
    """Kernel IR expression -> C tree."""

    def expr(self, root: Expr) -> CExpr:
        return postorder(root, children, self._combine).c

    @staticmethod
    def call(name: str, *args: CExpr) -> CCall:
        assert not name.startswith("aot_") or name in HELPERS, name
        return CCall(name, tuple(args))

    def round(self, t: DType, c: CExpr) -> CExpr:
        """``c``, a float result of dtype ``t``, rounded to ``t`` if narrow."""
        if not t.is_narrow_float:
            return c
        return self.call(f"aot_round_{narrow_float_suffix(t)}", c)

    def _combine(self, e: Expr, kids: list[_Spelled]) -> _Spelled:
        if isinstance(e, Const):
            return _Spelled(_literal(e))
        if isinstance(e, Var):
            return _Spelled(CAtom(e.name))
        if isinstance(e, Load):
            if e.lanes == 4:
                return _Spelled(self.call(f"aot_load4_{helper_suffix(e.buffer.dtype)}",
                                          CAtom(e.buffer.name), kids[0].c))
            bt = e.buffer.dtype
            if bt.packed:
                return _Spelled(self.call(f"aot_load_{'i4' if bt is DType.INT4 else 'u4'}",
                                          CAtom(e.buffer.name), kids[0].c))
            element: CExpr = CIndex(e.buffer.name, kids[0].c)
            if bt.is_narrow_float:
                element = self.call(f"aot_{narrow_float_suffix(bt)}_to_f32", element)
            return _Spelled(element)
        if isinstance(e, BinOp):
            return self.binop(e, kids[0], kids[1])
        if isinstance(e, UnaryOp):
            return self.unary(e, kids[0])
        if isinstance(e, Cast):
            return self.cast(e, kids[0])
        if isinstance(e, Select):
            a, b = _same_signedness(kids[1], kids[2])
            return _Spelled(CTernary(kids[0].c, a.c, b.c), unsigned_int=a.unsigned_int)
        if isinstance(e, Call):
            c: CExpr = CCall(e.name, tuple(k.c for k in kids))
            return _Spelled(self.round(e.dtype, c))
        raise AssertionError(f"not an expression: {e!r}")

    # ----------------------------------------------------- unsigned domain

    @staticmethod
    def unsigned(e: Expr, s: _Spelled, domain: str) -> CExpr:
        """``e`` as an operand of wrapping arithmetic in ``domain``."""
        if s.wrapped is not None:
            return s.wrapped
        if isinstance(e, Const) and int(e.value) >= 0:
            return _unsigned_literal(int(e.value), domain)
        c = s.c
        if isinstance(e, Cast) and isinstance(c, CCast) and e.a.dtype.is_int \
                and _preserves_value(e.a.dtype, e.to):
            c = c.operand   # (uint32_t)(int32_t)x is (uint32_t)x for a narrower x
        return CCast(domain, c)

    def wrapping(self, dtype: DType, build: Callable[..., CExpr],
                 *operands: tuple[Expr, _Spelled]) -> _Spelled:
        """Integer ``build(operand C trees)`` wrapping modulo 2^bits."""
        domain = _unsigned_domain(dtype)
        if domain is None:
            c = build(*(s.c for _, s in operands))
            return _Spelled(c, c)
        inner = build(*(self.unsigned(e, s, domain) for e, s in operands))
        return _Spelled(_narrow(inner, dtype), inner, unsigned_int=dtype in _MASKED)

    # ------------------------------------------------------------ binary

    def binop(self, e: BinOp, a: _Spelled, b: _Spelled) -> _Spelled:
        t = e.a.dtype
        op = e.op
        if op in _RING_C:
            sym = _RING_C[op]
            if t.is_float:
                return _Spelled(self.round(t, CBinary(sym, a.c, b.c)))
            if e.no_wrap:
                return _Spelled(CBinary(sym, a.c, b.c))
            return self.wrapping(t, lambda x, y: CBinary(sym, x, y), (e.a, a), (e.b, b))
        if op is _O.SHL:
            domain = _unsigned_domain(t)
            if domain is None:
                c = CBinary("<<", a.c, b.c)
                return _Spelled(c, c)
            inner = CBinary("<<", self.unsigned(e.a, a, domain), b.c)
            return _Spelled(_narrow(inner, t), inner, unsigned_int=t in _MASKED)
        if op is _O.BIT_XOR and t in _MASKED:
            for x, sx, y in ((e.a, a, e.b), (e.b, b, e.a)):
                if _is_all_ones(y):     # x ^ 0xff is ~x: spelled as ~ is (see there)
                    return self.wrapping(t, lambda v: CUnary("~", v), (x, sx))
        if t is DType.BOOL and op in _BOOL_BITWISE:
            # on 0/1 operands; clang warns about & | on truth values
            return _Spelled(CBinary(_BOOL_BITWISE[op], a.c, b.c))
        if op.is_comparison and t in _MASKED:
            a, b = _same_signedness(a, b)
            return _Spelled(CBinary(_PLAIN_C[op], a.c, b.c))
        if op in _PLAIN_C:
            unsigned_int = a.unsigned_int or (b.unsigned_int and op is not _O.SHR)
            return _Spelled(CBinary(_PLAIN_C[op], a.c, b.c), unsigned_int=unsigned_int)
        if op in (_O.MIN, _O.MAX):
            # float16 breaks ties apart (bfloat16 and float8 as float32); the
            # min and max of values of a type are values of it: no rounding
            sfx = "f16" if t is DType.FLOAT16 else helper_suffix(t)
            return _Spelled(self.call(f"aot_{op.value}_{sfx}", a.c, b.c))
        return _Spelled(self.division(op, t, a.c, b.c))

    def division(self, op: BinaryOperator, t: DType, a: CExpr, b: CExpr) -> CExpr:
        sfx = helper_suffix(t)
        if t.is_int:
            name = {_O.DIV: "div", _O.MOD: "mod", _O.FLOORDIV: "floordiv",
                    _O.FLOORMOD: "floormod"}[op]
            if t.is_unsigned:   # floor and truncation agree on unsigned values
                name = {"floordiv": "div", "floormod": "mod"}.get(name, name)
            quotient: CExpr = self.call(f"aot_{name}_{sfx}", a, b)
            if t is DType.INT4 and name in ("div", "floordiv"):    # -8 / -1 wraps
                quotient = _narrow(CCast("uint32_t", quotient), t)
            return quotient
        if op is _O.MOD:    # fmod is exact: no float16 rounding needed
            return self.call("fmod" if t is DType.FLOAT64 else "fmodf", a, b)
        if op is _O.DIV:
            c: CExpr = CBinary("/", a, b)
        else:
            c = self.call(f"aot_{'floordiv' if op is _O.FLOORDIV else 'floormod'}_{sfx}", a, b)
        return self.round(t, c)

    # ------------------------------------------------------------- unary

    def unary(self, e: UnaryOp, a: _Spelled) -> _Spelled:
        t = e.a.dtype
        if e.op is UnaryOperator.NOT:
            return _Spelled(CUnary("!", a.c))
        if e.op is UnaryOperator.BIT_NOT:
            a = _Spelled(_untruth(a.c), a.wrapped)
            if t in _MASKED:    # ~ of the promoted int would leave the range
                return self.wrapping(t, lambda v: CUnary("~", v), (e.a, a))
            return _Spelled(CUnary("~", a.c))
        if t.is_float:
            return _Spelled(CUnary("-", a.c))
        return self.wrapping(t, lambda x: CUnary("-", x), (e.a, a))

    # -------------------------------------------------------------- cast

    def int_cast(self, src: DType, dst: DType, a: _Spelled) -> _Spelled:
        if _preserves_value(src, dst):
            return _Spelled(CCast(c_value_type(dst), a.c))
        if dst.packed:      # wraps to 4 bits
            operand = a.wrapped if (a.wrapped is not None
                                    and _unsigned_domain(src) == "uint32_t") \
                else CCast("uint32_t", a.c)
            return _Spelled(_narrow(operand, dst), operand, unsigned_int=dst is DType.UINT4)
        # wraps.  An unsigned form of the operand is congruent to its value
        # modulo 2^src.bits, so it can stand for it when dst is no wider.
        domain = _unsigned_domain(dst)
        low_bits = a.wrapped if (a.wrapped is not None and dst.bits <= src.bits) else None
        same_domain = domain is not None and domain == _unsigned_domain(src)
        if dst in _MASKED:
            operand = low_bits if (low_bits is not None and same_domain) \
                else CCast("uint32_t", a.c)
            return _Spelled(_narrow(operand, dst), operand, unsigned_int=True)
        c = CCast(c_storage_type(dst), low_bits if low_bits is not None else a.c)
        if domain is None:
            return _Spelled(c, c)
        return _Spelled(c, low_bits if same_domain else None)

    def cast(self, e: Cast, a: _Spelled) -> _Spelled:
        src, dst = e.a.dtype, e.to
        if src is dst:
            return a
        if dst is DType.BOOL:
            return _Spelled(CBinary("!=", a.c, _zero(src)))
        if src is DType.BOOL:
            return _Spelled(CCast(c_value_type(dst), a.c))
        if dst.is_int:
            if src.is_float:
                to = {DType.INT4: "i4", DType.UINT4: "u4"}.get(dst) or helper_suffix(dst)
                name = f"aot_sat_{helper_suffix(src)}_{to}"
                return _Spelled(self.call(name, a.c))
            return self.int_cast(src, dst, a)
        # dst is a float type
        if dst is DType.FLOAT16 and src is DType.FLOAT64:   # rounded once
            return _Spelled(self.call("aot_f16_to_f32", self.call("aot_f64_to_f16", a.c)))
        if dst.is_narrow_float:
            if src.is_float8 and dst in (DType.FLOAT16, DType.BFLOAT16):
                return _Spelled(a.c)        # every float8 value is one of dst
            # rounded from float32 (a double or an integer converts to float
            # first: the interpreter's rule, see ``cast_array``)
            operand = a.c if src is DType.FLOAT32 or src.is_narrow_float \
                else CCast("float", a.c)
            return _Spelled(self.round(dst, operand))
        if src.is_narrow_float and dst is DType.FLOAT32:
            return _Spelled(a.c)
        return _Spelled(CCast(c_storage_type(dst), a.c))


def print_expr(e: Expr) -> str:
    """C text of one expression (for tests and debugging)."""
    return format_c(_Spell().expr(e))


# =============================================================== statements

class _StmtPrinter:
    def __init__(self, spell: _Spell) -> None:
        self.spell = spell
        self.lines: list[str] = []
        #: the runtime helpers and macros of every C tree printed so far
        self.helpers: set[str] = set()

    def emit(self, level: int, text: str) -> None:
        self.lines.append(INDENT * level + text)

    def format(self, c: CExpr) -> str:
        self.helpers.update(n for n in names_in(c) if n in HELPERS or n in MACROS)
        return format_c(c)

    def expr(self, e: Expr) -> str:
        return self.format(self.spell.expr(e))

    def body(self, s: Stmt, level: int) -> None:
        """The statements of a braced body (a Block's braces are the body's)."""
        if isinstance(s, Block):
            for x in s.stmts:
                self.stmt(x, level)
        else:
            self.stmt(s, level)

    def stmt(self, s: Stmt, level: int) -> None:
        if isinstance(s, Block):
            self.emit(level, "{")
            self.body(s, level + 1)
            self.emit(level, "}")
        elif isinstance(s, For):
            self.loop(s, level)
        elif isinstance(s, Store):
            value = self.spell.expr(s.value)
            bt = s.buffer.dtype
            if bt.is_narrow_float:
                f = narrow_float_suffix(bt)
                if isinstance(value, CCall) and value.fn == f"aot_{f}_to_f32":
                    value = value.args[0]   # a copy of the bits stays a bit copy
                else:
                    if isinstance(value, CCall) and value.fn == f"aot_round_{f}":
                        value = value.args[0]   # the store rounds as well
                    value = self.spell.call(f"aot_f32_to_{f}", value)
            index = self.format(self.spell.expr(s.index))
            if bt.packed:
                store = f"aot_store_{'i4' if bt is DType.INT4 else 'u4'}"
                self.helpers.add(store)
                self.emit(level, f"{store}({s.buffer.name}, {index}, {self.format(value)});")
            else:
                self.emit(level, f"{s.buffer.name}[{index}] = {self.format(value)};")
        elif isinstance(s, Decl):
            ctype = c_value_type(s.var.dtype)
            init = "" if s.init is None else f" = {self.expr(s.init)}"
            self.emit(level, f"{ctype} {s.var.name}{init};")
        elif isinstance(s, Assign):
            self.emit(level, f"{s.var.name} = {self.expr(s.value)};")
        elif isinstance(s, IfThenElse):
            self.branch(s, level)
        elif isinstance(s, Comment):
            for line in _comment_lines(s.text):
                self.emit(level, line)
        else:
            raise AssertionError(f"unknown statement {type(s).__name__}")

    def loop(self, s: For, level: int) -> None:
        v = s.var.name
        if s.kind is not ForKind.SERIAL:
            self.emit(level, f"/* loop hint: {s.kind.value} */")
        stop: Expr
        if isinstance(s.start, Const) and int(s.start.value) == 0:
            stop = s.extent
        elif isinstance(s.start, Const) and isinstance(s.extent, Const):
            stop = Const(int(s.start.value) + int(s.extent.value), s.var.dtype)
        else:
            stop = BinOp(_O.ADD, s.start, s.extent, no_wrap=True)
        cond = self.format(CBinary("<", CAtom(v), self.spell.expr(stop)))
        self.emit(level, f"for ({c_value_type(s.var.dtype)} {v} = {self.expr(s.start)}; "
                         f"{cond}; ++{v}) {{")
        self.body(s.body, level + 1)
        self.emit(level, "}")

    def branch(self, s: IfThenElse, level: int) -> None:
        self.emit(level, f"if ({self.expr(s.cond)}) {{")
        while True:
            self.body(s.then, level + 1)
            if s.else_ is None:
                break
            if isinstance(s.else_, IfThenElse):
                s = s.else_
                self.emit(level, f"}} else if ({self.expr(s.cond)}) {{")
                continue
            self.emit(level, "} else {")
            self.body(s.else_, level + 1)
            break
        self.emit(level, "}")


def _comment_lines(text: str) -> list[str]:
    """A C comment; ``*/`` inside the text is defused."""
    lines = [line.rstrip().replace("*/", "* /") for line in text.strip("\n").split("\n")]
    if len(lines) == 1:
        return [f"/* {lines[0]} */" if lines[0] else "/* */"]
    return ["/*"] + [f" * {line}".rstrip() for line in lines] + [" */"]


def print_stmt(s: Stmt, level: int = 0) -> str:
    """C text of a statement (for tests and debugging), ``level`` indents."""
    printer = _StmtPrinter(_Spell())
    printer.stmt(s, level)
    return "\n".join(printer.lines) + "\n"


# ================================================================== kernels

def _param(b: Buffer, written: bool) -> str:
    const = "" if written else "const "
    restrict = "restrict " if b.restrict else ""
    return f"{const}{c_storage_type(b.dtype)} *{restrict}{b.name}"


def kernel_prototype(kernel: Kernel) -> str:
    """``static void name(params)`` without a trailing semicolon.  A
    parameter is ``const`` unless the kernel stores into it."""
    written = stored_buffers(kernel.body)
    params = ", ".join(_param(b, b.name in written) for b in kernel.params) or "void"
    return f"static void {kernel.name}({params})"


@dataclass(frozen=True, slots=True)
class PrintedKernel:
    """A kernel's C text and the runtime helpers and macros it uses
    (names of :data:`HELPERS` and :data:`MACROS`, sorted)."""
    text: str
    helpers: tuple[str, ...]


def printed_kernel(kernel: Kernel) -> PrintedKernel:
    """Verify ``kernel`` (KernelIRError on malformed IR) and print it."""
    verify_kernel(kernel)
    spell = _Spell()
    printer = _StmtPrinter(spell)
    if kernel.comment:
        printer.lines.extend(_comment_lines(kernel.comment))
    printer.lines.append(kernel_prototype(kernel))
    printer.lines.append("{")
    buffers = buffers_in(kernel.body)
    used = {b.name for b in buffers}
    for b in buffers:
        if b.scope is BufferScope.LOCAL:
            length = b.dtype.nbytes(b.size) if b.dtype.packed else b.size
            printer.emit(1, f"{c_storage_type(b.dtype)} {b.name}[{length}];")
    for p in kernel.params:
        if p.name not in used:
            printer.emit(1, f"(void){p.name};")
    printer.body(kernel.body, 1)
    printer.lines.append("}")
    return PrintedKernel("\n".join(printer.lines) + "\n", tuple(sorted(printer.helpers)))


def print_kernel(kernel: Kernel) -> str:
    """C99 text of a kernel: an optional comment, then the function.
    Verifies the kernel first (KernelIRError on malformed IR)."""
    return printed_kernel(kernel).text


def kernel_helpers(kernel: Kernel) -> tuple[str, ...]:
    """Names from :data:`HELPERS` and :data:`MACROS` the kernel uses, sorted."""
    return printed_kernel(kernel).helpers
