"""Operator family: einsum (Einstein summation over a tuple of tensors).

``einsum((a, b, ...), equation)``, as Relay has it (``EinsumAttrs``):
``equation`` names each operand's axes by letters, ``"ij,jk->ik"``; the
result has the axes after ``->`` (without ``->``: every letter used once,
in alphabetical order) and sums the product of the operands over every
other letter.

Design note
-----------
:func:`parse` turns the equation into one letter list per operand and one
for the result.  A letter repeated within an operand reads its diagonal
(``"ii->i"``).  Letters are ``a-z`` and ``A-Z``.  ``...`` stands for the
axes no letter names (inside, letters the equation does not use stand for
them, the rightmost axis taking the last of them); like NumPy,
the ellipses of all operands are aligned on the right and broadcast (an
extent of 1 stretches), and they come first in an implicit result.  Each
letter's extent is the one its operands agree on (1 broadcasts).

Semantics, shared by the reference and the C lowering: the operands share
one dtype, which is the result's.  Integers multiply and accumulate
exactly (int64) and the result wraps to the dtype; floats multiply and
accumulate in float64 and round once.  The summed letters are visited in
order of first appearance, the last one fastest (the reference computes
the float64 sum with NumPy, whose order may differ: the float results
agree to float64 rounding, which a float32 or float16 result absorbs).
"""

from __future__ import annotations

import string
from dataclasses import dataclass

from ..attrs import attrs_class
from typing import ClassVar, Sequence

from .common import Attrs, PatternKind, RelationError, TensorType, Type, as_array, defop, np
from .shape_util import tuple_tensor_arg
from ..dtype import np_kind

FAMILY = "einsum"
_LETTERS = string.ascii_letters


@attrs_class
class EinsumAttrs(Attrs):
    type_key: ClassVar[str] = "EinsumAttrs"
    equation: str = ""


@dataclass(frozen=True, slots=True)
class Equation:
    """Operand and result letters (ellipsis axes as upper-case stand-ins),
    each letter's extent, and the summed letters in visiting order."""

    inputs: tuple[str, ...]
    output: str
    extents: dict[str, int]
    summed: str


def _letters(term: str, rank: int, what: str, spare: str) -> str:
    """``term`` with ``...`` replaced by the stand-ins of its axes."""
    if term.count("...") > 1:
        raise RelationError(f"{what} has more than one ellipsis")
    if "..." not in term:
        if len(term) != rank:
            raise RelationError(f"{what} names {len(term)} axes, the operand has {rank}")
        return term
    head, tail = term.split("...")
    n = rank - len(head) - len(tail)
    if n < 0:
        raise RelationError(f"{what} names more axes than the operand's {rank}")
    if n > len(spare):
        raise RelationError(f"{what}: too many axes for the letters left")
    return head + spare[len(spare) - n:] + tail


def parse(equation: str, shapes: Sequence[Sequence[int]]) -> Equation:
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise RelationError(f"equation {equation!r} names {len(terms)} operands, got "
                            f"{len(shapes)}")
    for term in terms + ([rhs] if arrow else []):
        bad = set(term.replace("...", "")) - set(_LETTERS)
        if bad:
            raise RelationError(f"equation {equation!r}: axes are named by letters, not "
                                f"{''.join(sorted(bad))!r}")
    spare = "".join(c for c in _LETTERS if c not in eq)
    inputs = tuple(_letters(t, len(s), f"operand {i} ({t!r})", spare)
                   for i, (t, s) in enumerate(zip(terms, shapes)))
    extents: dict[str, int] = {}
    for letters, shape in zip(inputs, shapes):
        for c, d in zip(letters, shape):
            d = int(d)
            if extents.get(c, 1) != 1 and d != 1 and d != extents[c]:
                raise RelationError(f"equation {equation!r}: axis {c!r} has extents "
                                    f"{extents[c]} and {d}")
            extents[c] = d if extents.get(c, 1) == 1 else extents[c]
    ellipsis = "".join(c for c in spare if c in extents)
    if arrow:
        if ellipsis and "..." not in rhs:
            raise RelationError(f"equation {equation!r}: the result drops the ellipsis axes")
        output = rhs.replace("...", ellipsis)
        if len(set(output)) != len(output):
            raise RelationError(f"equation {equation!r}: the result repeats an axis")
        missing = set(output) - set(extents)
        if missing:
            raise RelationError(f"equation {equation!r}: result axis {sorted(missing)[0]!r} "
                                "is no operand's")
    else:
        counts = {c: sum(t.count(c) for t in inputs) for c in extents}
        output = ellipsis + "".join(sorted(c for c in extents
                                           if c not in spare and counts[c] == 1))
    order = "".join(dict.fromkeys("".join(inputs)))
    summed = "".join(c for c in order if c not in output)
    return Equation(inputs, output, extents, summed)


def _einsum_rel(args: Sequence[Type], attrs: EinsumAttrs) -> Type | None:
    ts = tuple_tensor_arg(args, 0)
    if ts is None:
        return None
    if not ts:
        raise RelationError("einsum needs at least one operand")
    if any(t.dtype != ts[0].dtype for t in ts):
        raise RelationError(f"the operands must share a dtype, got "
                            f"{', '.join(str(t.dtype) for t in ts)}")
    if any(not isinstance(d, int) for t in ts for d in t.shape):
        raise RelationError("einsum needs static shapes")
    eq = parse(attrs.equation, [tuple(int(d) for d in t.shape) for t in ts])
    return TensorType(tuple(eq.extents[c] for c in eq.output), ts[0].dtype)


def _einsum(args: Sequence[np.ndarray], attrs: EinsumAttrs, out: Type) -> np.ndarray:
    (xs,) = args
    eq = parse(attrs.equation, [x.shape for x in xs])
    dtype = xs[0].dtype
    wide = np.float64 if np_kind(dtype) == "f" else np.int64
    subs = ",".join(eq.inputs) + "->" + eq.output
    with np.errstate(all="ignore"):
        result = np.einsum(subs, *[x.astype(wide) for x in xs], optimize=False)
    return as_array(np.asarray(result), dtype)


defop("einsum", arity=1, rel=_einsum_rel, pattern=PatternKind.OUT_ELEMWISE_FUSABLE,
      compute=_einsum, doc="Einstein summation of a tuple of tensors by an equation "
                           "(\"ij,jk->ik\")", attrs=EinsumAttrs, family=FAMILY)

__all__ = ["EinsumAttrs", "Equation", "parse"]
