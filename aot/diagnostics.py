"""Source spans and user-facing diagnostics.

Every IR node may carry a :class:`Span`.  User errors (bad syntax, type
errors, runtime errors of the reference interpreter) are raised as
:class:`DiagnosticError`, which holds one or more :class:`Diagnostic` and
renders them the way compilers do::

    model.relay:3:7: error: unknown operator `nn.conv9d`
      %0 = nn.conv9d(%x);
           ^~~~~~~~~

Internal failures are plain ``AssertionError``/``RuntimeError``: they are
bugs, not user errors.

The text of every parsed source is remembered in :data:`SOURCES` so that a
diagnostic raised much later (by type inference, say) can still show the
offending line.
"""

from __future__ import annotations

import enum
import warnings
from dataclasses import dataclass

#: source name -> full text, filled by the parser.
SOURCES: dict[str, str] = {}


def register_source(name: str, text: str) -> None:
    SOURCES[name] = text


@dataclass(frozen=True, slots=True)
class Span:
    """A region of a source file; lines and columns are 1-based.  A span
    of an imported model (ONNX, TFLite) names the model's node instead
    (``node``; lines and columns 0): :func:`node_span`."""

    source: str
    line: int
    col: int
    end_line: int
    end_col: int
    node: str = ""

    def __str__(self) -> str:
        if self.node and not self.line:
            return f"{self.source}: node '{self.node}'"
        return f"{self.source}:{self.line}:{self.col}"

    def merge(self, other: Span | None) -> Span:
        if other is None or other.source != self.source or self.node:
            return self
        return Span(self.source, self.line, self.col, other.end_line, other.end_col)


def node_span(source: str, node: str) -> Span:
    """The span of node ``node`` of the imported model ``source``: what
    carries the model's own names through the passes to the kernels."""
    return Span(source, 0, 0, 0, 0, node)


class Severity(enum.Enum):
    ERROR = "error"
    WARNING = "warning"
    NOTE = "note"


@dataclass(frozen=True, slots=True)
class Diagnostic:
    message: str
    span: Span | None = None
    severity: Severity = Severity.ERROR

    def render(self) -> str:
        where = f"{self.span}: " if self.span is not None else ""
        head = f"{where}{self.severity.value}: {self.message}"
        excerpt = _excerpt(self.span) if self.span is not None else ""
        return head + excerpt


def _excerpt(span: Span) -> str:
    text = SOURCES.get(span.source)
    if text is None:
        return ""
    lines = text.splitlines()
    if not 1 <= span.line <= len(lines):
        return ""
    line = lines[span.line - 1].expandtabs(1)
    start = max(span.col - 1, 0)
    if span.end_line == span.line and span.end_col > span.col:
        width = span.end_col - span.col
    else:
        width = 1
    width = max(1, min(width, len(line) - start)) if start < len(line) else 1
    caret = " " * start + "^" + "~" * (width - 1)
    return f"\n  {line}\n  {caret}"


class DiagnosticError(Exception):
    """One or more user-facing errors.  ``str()`` renders all of them."""

    def __init__(self, diagnostics: list[Diagnostic] | Diagnostic | str,
                 span: Span | None = None):
        if isinstance(diagnostics, str):
            diagnostics = [Diagnostic(diagnostics, span)]
        elif isinstance(diagnostics, Diagnostic):
            diagnostics = [diagnostics]
        assert diagnostics, "DiagnosticError needs at least one diagnostic"
        self.diagnostics: list[Diagnostic] = list(diagnostics)
        super().__init__(self.render())

    @property
    def message(self) -> str:
        return self.diagnostics[0].message

    @property
    def span(self) -> Span | None:
        return self.diagnostics[0].span

    def render(self) -> str:
        return "\n".join(d.render() for d in self.diagnostics)

    def __str__(self) -> str:
        return self.render()


def error(message: str, span: Span | None = None) -> DiagnosticError:
    """Build (not raise) a single-error DiagnosticError."""
    return DiagnosticError([Diagnostic(message, span)])


class DiagnosticCollector:
    """Collects several errors so a pass can report them all at once."""

    def __init__(self) -> None:
        self.diagnostics: list[Diagnostic] = []

    def error(self, message: str, span: Span | None = None) -> None:
        self.diagnostics.append(Diagnostic(message, span))

    def extend(self, exc: DiagnosticError) -> None:
        self.diagnostics.extend(exc.diagnostics)

    def __bool__(self) -> bool:
        return bool(self.diagnostics)

    def raise_if_any(self) -> None:
        if self.diagnostics:
            raise DiagnosticError(self.diagnostics)


class AotWarning(UserWarning):
    """A problem in the input that does not stop the compile (the command
    line prints it as ``source: warning: message``)."""


def warn(source: str, message: str) -> None:
    """Report ``message`` about ``source`` as an :class:`AotWarning`."""
    warnings.warn(f"{source}: warning: {message}", AotWarning, stacklevel=2)
