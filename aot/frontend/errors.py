"""Diagnostics of the importers (ONNX, TFLite).

A model file has no lines and columns, so an importer diagnostic names the
model file and the node (operator) instead of a span::

    model.onnx: error: node 'conv1' (Conv): auto_pad=SAME_LOWER with dilations is not supported
    model.tflite: error: operator #3 (CUSTOM 'MyOp'): custom operators are not supported

:class:`FileDiagnostic` is a :class:`~aot.diagnostics.Diagnostic` whose
location is the whole file; it renders ``source: error: message`` (a
``Span`` would print a meaningless ``:0:0``).  Everything the importer
rejects is raised as a :class:`~aot.diagnostics.DiagnosticError` holding
these.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..diagnostics import Diagnostic, DiagnosticError


@dataclass(frozen=True, slots=True)
class FileDiagnostic(Diagnostic):
    """A diagnostic about a whole file (a model): no line, no caret."""

    source: str = ""

    def render(self) -> str:
        where = f"{self.source}: " if self.source else ""
        return f"{where}{self.severity.value}: {self.message}"


def file_error(source: str, message: str) -> DiagnosticError:
    """Build (not raise) a single-error DiagnosticError about ``source``."""
    return DiagnosticError([FileDiagnostic(message, source=source)])


def file_errors(source: str, messages: list[str]) -> DiagnosticError:
    assert messages
    return DiagnosticError([FileDiagnostic(m, source=source) for m in messages])


class ConvertError(Exception):
    """Raised by a converter for a node it cannot import; the graph walk
    turns it into a diagnostic naming the node.  ``message`` is the
    reason only (``auto_pad=SAME_LOWER ...``)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
