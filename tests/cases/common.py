"""Spelling a case as a Relay program, shared by every family table.

A case table holds plain data (shapes, dtypes, attributes); each test layer
turns a row into what it runs: tests/ops calls the operator record
directly, tests/emit and tests/e2e parse the program :func:`program`
spells.
"""

from __future__ import annotations

from typing import Mapping, Sequence

Param = tuple[str, tuple[int, ...], str]


def tensor_type(shape: Sequence[int], dtype: str) -> str:
    """Relay's spelling of a tensor type (the bare dtype for a 0-d one)."""
    shape = tuple(shape)
    if not shape:
        return dtype
    dims = ", ".join(str(d) for d in shape)
    return f"Tensor[({dims}{',' if len(shape) == 1 else ''}), {dtype}]"


def program(params: Sequence[Param], body: str) -> str:
    """``def @main(params) { body }``."""
    ps = ", ".join(f"%{name}: {tensor_type(shape, dt)}" for name, shape, dt in params)
    return f"def @main({ps}) {{\n  {body}\n}}\n"


def attr_text(attrs: Mapping[str, object]) -> str:
    """Attributes as Relay call text: ``strides=[1, 2], layout="NHWC"``."""
    parts = []
    for k, v in attrs.items():
        if isinstance(v, str):
            parts.append(f'{k}="{v}"')
        elif isinstance(v, (list, tuple)):
            parts.append(f"{k}=[{', '.join(str(e) for e in v)}]")
        elif isinstance(v, float):
            parts.append(f"{k}={v!r}f")
        else:
            parts.append(f"{k}={v}")
    return ", ".join(parts)


def as_text(rows: Sequence[tuple], at: int = 1) -> list[tuple]:
    """Table rows with their attribute dict (field ``at``) spelt as Relay
    text, for the layers that parse programs (and name cases by the text)."""
    return [(*row[:at], attr_text(row[at]), *row[at + 1:]) for row in rows]
