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

from ...registry import Registry

if TYPE_CHECKING:
    from ...ir.expr import Expr
    from .graph import Op

ConvertFn = Callable[["Op"], Sequence["Expr"]]


def _load_families() -> None:
    from . import ops  # noqa: F401  (registers every family)


#: converters by builtin operator name (``"CONV_2D"``)
CONVERTERS: Registry[str, ConvertFn] = Registry("TFLite converter", _load_families)


def converter(*names: str) -> Callable[[ConvertFn], ConvertFn]:
    """Decorator registering ``fn`` as the converter of the builtin
    operators ``names`` (``"CONV_2D"``)."""
    def wrap(fn: ConvertFn) -> ConvertFn:
        for name in names:
            CONVERTERS.register(name, fn)
        return fn
    return wrap


def lookup(name: str) -> ConvertFn | None:
    return CONVERTERS.get(name)


def supported_operators() -> list[str]:
    return CONVERTERS.keys()
