"""The standard library, written in the IR's own text format
(``prelude.relay`` beside this file), parsed and type-checked once."""

from __future__ import annotations

import functools
from pathlib import Path

from .module import IRModule

PRELUDE_PATH = Path(__file__).with_name("prelude.relay")


@functools.cache
def _load() -> IRModule:
    from ..passes.type_infer import infer_types
    from .parser import parse_module
    mod = parse_module(PRELUDE_PATH.read_text(), str(PRELUDE_PATH), prelude=False)
    return infer_types(mod)


def load_prelude() -> IRModule:
    """The typed prelude module (a fresh copy: callers may add to it)."""
    return _load().copy()


def prelude_names() -> set[str]:
    """Every global, type and constructor name the prelude defines."""
    mod = _load()
    names = {gv.name for gv in mod.functions}
    for data in mod.type_definitions.values():
        names.add(data.header.name)
        names.update(c.name for c in data.constructors)
    return names
