"""Exhaustiveness of ``match``: which cases do no clause handle?

Design note
-----------
We search for values the clauses miss with *candidate patterns*, starting
from the single candidate ``_`` (every value).  For each candidate:

* if some clause covers it entirely, it is handled;
* otherwise find the first clause that *might* cover it if the candidate
  were more precise: somewhere the clause has a constructor (or tuple)
  where the candidate has ``_``.  Split the candidate there into one
  candidate per constructor of that ADT (fields ``_``), or into a tuple of
  ``_`` of the clause's arity, and continue with the pieces;
* if no clause can cover it even after refinement, it is an unhandled case.

Splitting only happens where a clause pattern has structure, so the search
is bounded by the size of the clause patterns and terminates (unlike a
naive expansion over recursive types).  Unhandled candidates print as
patterns: ``Cons(_, _)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Union

from .adt import (Constructor, Pattern, PatternConstructor, PatternTuple, PatternVar,
                  PatternWildcard, TypeData)
from .types import GlobalTypeVar


@dataclass(frozen=True)
class _Wild:
    def __str__(self) -> str:
        return "_"


@dataclass(frozen=True)
class _Ctor:
    ctor: Constructor
    fields: tuple[Cand, ...]

    def __str__(self) -> str:
        if not self.fields:
            return self.ctor.name
        return f"{self.ctor.name}(" + ", ".join(str(f) for f in self.fields) + ")"


@dataclass(frozen=True)
class _Tup:
    fields: tuple[Cand, ...]

    def __str__(self) -> str:
        return "(" + ", ".join(str(f) for f in self.fields) + ")"


Cand = Union[_Wild, _Ctor, _Tup]
WILD = _Wild()

# Outcome of matching a clause pattern against a candidate: True (covers),
# False (cannot cover), or a path (tuple of field indices) to a wildcard in
# the candidate that the clause would need refined, with the clause's
# sub-pattern found there.
_Outcome = Union[bool, tuple[tuple[int, ...], Pattern]]


def _cover(p: Pattern, c: Cand, path: tuple[int, ...] = ()) -> _Outcome:
    if isinstance(p, (PatternWildcard, PatternVar)):
        return True
    if isinstance(c, _Wild):
        return (path, p)
    if isinstance(p, PatternConstructor):
        if not isinstance(c, _Ctor) or c.ctor.name != p.constructor.name:
            return False
        subs: tuple[Pattern, ...] = p.patterns
    elif isinstance(p, PatternTuple):
        if not isinstance(c, _Tup) or len(c.fields) != len(p.patterns):
            return False
        subs = p.patterns
    else:
        raise AssertionError(f"unknown pattern {p!r}")
    refine: _Outcome | None = None
    for i, (sp, sc) in enumerate(zip(subs, c.fields)):
        out = _cover(sp, sc, path + (i,))
        if out is False:
            return False
        if out is not True and refine is None:
            refine = out
    return True if refine is None else refine


def _replace(c: Cand, path: tuple[int, ...], new: Cand) -> Cand:
    if not path:
        return new
    i, rest = path[0], path[1:]
    if isinstance(c, _Ctor):
        fields = list(c.fields)
        fields[i] = _replace(fields[i], rest, new)
        return _Ctor(c.ctor, tuple(fields))
    assert isinstance(c, _Tup)
    fields = list(c.fields)
    fields[i] = _replace(fields[i], rest, new)
    return _Tup(tuple(fields))


def unmatched_cases(patterns: list[Pattern],
                    type_data: Callable[[GlobalTypeVar], TypeData]) -> list[str]:
    """The cases (as pattern text) that none of ``patterns`` handles."""
    work: list[Cand] = [WILD]
    missing: list[str] = []
    budget = 10_000  # guards against pathological inputs; never hit in practice
    while work and budget:
        budget -= 1
        cand = work.pop()
        refine: tuple[tuple[int, ...], Pattern] | None = None
        covered = False
        for p in patterns:
            out = _cover(p, cand)
            if out is True:
                covered = True
                break
            if out is not False and refine is None:
                refine = out
        if covered:
            continue
        if refine is None:
            missing.append(str(cand))
            continue
        path, sub = refine
        if isinstance(sub, PatternConstructor):
            data = type_data(sub.constructor.belong_to)
            pieces: list[Cand] = [_Ctor(k, tuple(WILD for _ in k.inputs))
                                  for k in data.constructors]
        else:
            assert isinstance(sub, PatternTuple)
            pieces = [_Tup(tuple(WILD for _ in sub.patterns))]
        work.extend(_replace(cand, path, piece) for piece in reversed(pieces))
    return missing
