"""The converter registry: one converter per TFLite builtin operator.

A converter takes the operator (:class:`~aot.frontend.tflite.graph.Op`:
its input expressions, tensors with their quantization, options and a
builder) and returns one IR expression per output tensor.  Converter
modules live in :mod:`aot.frontend.tflite.ops`, one per operator family,
and register with :func:`converter` when imported.

Operator versions (``OperatorCode.version``) are not checked: TFLite bumps
them when a kernel accepts new tensor types or options, never to change
the meaning of an existing one, and every converter checks the types and
options it is given.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Sequence

if TYPE_CHECKING:
    from ...ir.expr import Expr
    from .graph import Op

ConvertFn = Callable[["Op"], Sequence["Expr"]]

_REGISTRY: dict[str, ConvertFn] = {}


def converter(*names: str) -> Callable[[ConvertFn], ConvertFn]:
    """Decorator registering ``fn`` as the converter of the builtin
    operators ``names`` (``"CONV_2D"``)."""
    def wrap(fn: ConvertFn) -> ConvertFn:
        for name in names:
            assert name not in _REGISTRY, f"converter for {name} registered twice"
            _REGISTRY[name] = fn
        return fn
    return wrap


def lookup(name: str) -> ConvertFn | None:
    _ensure_loaded()
    return _REGISTRY.get(name)


def supported_operators() -> list[str]:
    _ensure_loaded()
    return sorted(_REGISTRY)


_loaded = False


def _ensure_loaded() -> None:
    global _loaded
    if not _loaded:
        _loaded = True
        from . import ops  # noqa: F401  (registers every family)
