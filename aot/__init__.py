"""aot: an ahead-of-time compiler from a Relay-style IR to standalone C99.

The public API (see README.md)::

    mod = aot.parse(text, source_name="model.relay")
    mod = aot.infer_types(mod)
    value = aot.interpret(mod, *args, entry="main")
"""

from __future__ import annotations

from typing import Any

from .diagnostics import Diagnostic, DiagnosticError, Span
from .ir import IRModule

__version__ = "0.1.0"


def parse(text: str, source_name: str = "<string>", **options: Any) -> IRModule:
    """Parse Relay text (a module, or a bare expression which becomes
    ``@main``).  Raises DiagnosticError on bad input."""
    from .ir.parser import parse_module
    return parse_module(text, source_name, **options)


def infer_types(mod: IRModule) -> IRModule:
    """A new, fully typed module; DiagnosticError on type errors."""
    from .passes.type_infer import infer_types as _infer
    return _infer(mod)


def interpret(mod: IRModule, *args: Any, entry: str = "main") -> Any:
    """Evaluate ``@entry`` of ``mod`` on ``args`` with the reference
    interpreter (type-checking the module first)."""
    from .interpreter import run
    return run(mod, *args, entry=entry)


def prelude() -> IRModule:
    """The standard library (List, Option, Tree, nat and their functions)."""
    from .ir.prelude import load_prelude
    return load_prelude()


__all__ = ["parse", "infer_types", "interpret", "prelude", "IRModule", "Diagnostic",
           "DiagnosticError", "Span", "__version__"]
