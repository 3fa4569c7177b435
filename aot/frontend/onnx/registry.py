"""The converter registry: one record per ONNX operator.

A :class:`Converter` says which operator it imports (``op_type`` in
``domain``), which ONNX schema versions it implements (the
``since_version`` of each schema it was written and checked against) and
the function doing it.  For a node, the importer resolves the schema the
model's opset selects (``onnx.defs.get_schema(op_type, opset,
domain).since_version``); a converter accepts the node only when that
version is one it declares.  So a newer opset that changes an operator is
refused with a diagnostic until someone checks the new schema and adds its
version, instead of being imported with the old meaning.

Declared versions cover every schema selected by opsets 11 to 21 (a test
checks this), plus the later schemas (opset 22+) whose only change is
wider type constraints (bfloat16, float8, int4 ...): types the IR does not
have are refused by dtype anyway, so the meaning for ours is unchanged.

Converter functions take the node (:class:`~aot.frontend.onnx.graph.Node`,
giving inputs, attributes, constants and a builder) and return one IR
expression per ONNX output (``None`` for an output they do not produce,
which the node must then not use).  Converter modules live in
:mod:`aot.frontend.onnx.ops`, one per operator family, and register with
:func:`converter` when imported (into :data:`CONVERTERS`, a
:class:`~aot.registry.Registry`, which imports them on first use).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Sequence

from ...registry import Registry

if TYPE_CHECKING:
    from ...ir.expr import Expr
    from .graph import Node

ConvertFn = Callable[["Node"], Sequence["Expr | None"]]

#: the domain of the standard operators (``""``; ``ai.onnx`` is an alias)
DEFAULT_DOMAIN = ""


@dataclass(frozen=True, slots=True)
class Converter:
    op_type: str
    #: since_versions of the ONNX schemas this converter implements
    versions: tuple[int, ...]
    convert: ConvertFn
    domain: str = DEFAULT_DOMAIN

    def __repr__(self) -> str:
        return f"Converter({self.op_type}, {list(self.versions)})"


def _load_families() -> None:
    from . import ops  # noqa: F401  (registers every family)


#: converters by (domain, op_type)
CONVERTERS: Registry[tuple[str, str], Converter] = Registry("converter", _load_families)


def register(conv: Converter) -> Converter:
    assert conv.versions == tuple(sorted(set(conv.versions))), conv
    return CONVERTERS.register((conv.domain, conv.op_type), conv)


def converter(op_type: str, versions: Sequence[int],
              domain: str = DEFAULT_DOMAIN) -> Callable[[ConvertFn], ConvertFn]:
    """Decorator registering ``fn`` as the converter of ``op_type``."""
    def wrap(fn: ConvertFn) -> ConvertFn:
        register(Converter(op_type, tuple(versions), fn, domain))
        return fn
    return wrap


def lookup(op_type: str, domain: str = DEFAULT_DOMAIN) -> Converter | None:
    return CONVERTERS.get((normalize_domain(domain), op_type))


def all_converters() -> list[Converter]:
    return CONVERTERS.values()


def normalize_domain(domain: str) -> str:
    return DEFAULT_DOMAIN if domain in ("", "ai.onnx") else domain
