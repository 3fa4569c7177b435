"""Attribute classes declared with aot.ir.attrs.attrs_class: Attrs's
equality, hash and repr are exactly what @dataclass would generate."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import ClassVar

import pytest

from aot.ir.attrs import Attrs, attrs_class
from aot.ir.registry import all_ops


def pair(decorate):
    @decorate
    class Base(Attrs):
        type_key: ClassVar[str] = "Base"
        x: int = 1
        y: tuple[int, ...] = (1, 2)
        quiet: str = field(default="q", compare=False, repr=False)
        loud: float = field(default=0.5, hash=False)

    @decorate
    class Child(Base):
        z: int | None = None
    return Base, Child


FAST = pair(attrs_class)
PLAIN = pair(dataclass(frozen=True, slots=True))


@pytest.mark.parametrize("which", [0, 1])
def test_equality_hash_and_repr_are_the_generated_ones(which):
    fast, plain = FAST[which], PLAIN[which]
    assert fast.__dataclass_params__.eq is False          # nothing generated
    for kw in ({}, {"x": 3, "y": (4,)}, {"quiet": "other"}, {"loud": 2.0}, {"x": 2, "loud": -1.0}):
        a, b = fast(**kw), plain(**kw)
        assert repr(a) == repr(b)
        assert hash(a) == hash(b)
        for kw2 in ({}, {"quiet": "zz"}, {"x": 3, "y": (4,)}, {"loud": 2.0}):
            assert (a == fast(**kw2)) == (b == plain(**kw2))
        assert dataclasses.replace(a, x=7) == fast(**{**kw, "x": 7})
        with pytest.raises(dataclasses.FrozenInstanceError):
            a.x = 5                                          # type: ignore[misc]
    assert FAST[0]() != FAST[1]() and PLAIN[0]() != PLAIN[1]()   # classes differ


def test_a_class_with_its_own_equality_gets_the_plain_dataclass():
    @attrs_class
    class Own(Attrs):
        x: int = 1

        def __eq__(self, other: object) -> bool:
            return True

        __hash__ = Attrs.__hash__

    assert Own.__dataclass_params__.eq is True and Own(1) == Own(2)


def test_the_catalogue_attrs_compare_hash_and_print_by_their_fields():
    for op in all_ops():
        cls = op.attrs_type
        a = op.builder_defaults()
        names = [f.name for f in dataclasses.fields(cls)]
        values = tuple(getattr(a, n) for n in names if next(
            f for f in dataclasses.fields(cls) if f.name == n).compare)
        assert a == cls(**{n: getattr(a, n) for n in names}), op.name
        assert hash(a) == hash(values), op.name
        assert repr(a) == f"{cls.__qualname__}(" + ", ".join(
            f"{f.name}={getattr(a, f.name)!r}" for f in dataclasses.fields(cls) if f.repr) + ")"
