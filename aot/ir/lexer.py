"""Tokenizer for the Relay text format (version 0.0.5).

Design note
-----------
The lexer turns source text into a flat list of :class:`Token` in one
linear, non-recursive pass.  Whitespace and comments (``// ...`` and
nestable ``/* /* */ */``) are dropped.  It follows TVM's tokenizer where
that is sensible and is stricter or saner where TVM's is accidental:

* ``%name`` is one LOCAL token, ``%12`` one GRAPH token, ``@name`` one
  GLOBAL token; ``meta[relay.Constant][3]`` is one META token.
* Multi-character operators (``->``, ``=>``, ``==``, ``!=``, ``<=``,
  ``>=``) are single tokens, so ``f(x == y)`` is never mistaken for an
  attribute ``x=``.
* A minus sign is always its own token; the parser folds ``-`` into a
  directly following number literal (``-128i8`` is in range), whereas TVM
  lexes ``-1`` as one token even after an operand (``%a -1``).
* Number literals are ``digits[.digits][(e|E)[+-]digits]`` with an optional
  dtype suffix ``f`` ``f16`` ``f32`` ``f64`` ``i`` ``i8``...``i64`` ``u``
  ``u8``...``u64``; ``inff`` and ``nanf`` (with an optional width) are
  float literals.  After a ``.`` only digits are read, so ``%t.0.1`` is two
  projections, not ``%t`` followed by the float ``0.1``.
* ``#[version = "0.0.5"]`` is a VERSION token; ``#[metadata]`` swallows the
  rest of the file as a METADATA token holding the JSON text.

Errors (an unknown character, an unterminated string or comment, a bad
suffix) are collected as diagnostics while lexing continues, so one pass
reports them all.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from typing import NamedTuple

from ..diagnostics import Diagnostic, Span
from .dtype import DType


class T(enum.Enum):
    """Token kinds."""

    IDENT = "identifier"
    LOCAL = "local variable"
    GRAPH = "graph variable"
    GLOBAL = "global variable"
    NUMBER = "number"
    STRING = "string"
    BOOL = "boolean"
    META = "meta reference"
    VERSION = "version attribute"
    METADATA = "metadata section"
    UNDERSCORE = "`_`"
    # keywords
    LET = "`let`"
    FN = "`fn`"
    DEF = "`def`"
    IF = "`if`"
    ELSE = "`else`"
    TYPE = "`type`"
    MATCH = "`match`"
    MATCH_PARTIAL = "`match?`"
    EXTERN = "`extern`"
    FREE_VAR = "`free_var`"
    REF = "`ref`"
    REF_READ = "`ref_read`"
    REF_WRITE = "`ref_write`"
    # punctuation
    LPAREN = "`(`"
    RPAREN = "`)`"
    LSQUARE = "`[`"
    RSQUARE = "`]`"
    LCURLY = "`{`"
    RCURLY = "`}`"
    COMMA = "`,`"
    SEMI = "`;`"
    COLON = "`:`"
    PERIOD = "`.`"
    EQUAL = "`=`"
    ARROW = "`->`"
    FAT_ARROW = "`=>`"
    QUESTION = "`?`"
    PLUS = "`+`"
    MINUS = "`-`"
    STAR = "`*`"
    SLASH = "`/`"
    LT = "`<`"
    GT = "`>`"
    LE = "`<=`"
    GE = "`>=`"
    EQEQ = "`==`"
    NE = "`!=`"
    EOF = "end of input"


KEYWORDS: dict[str, T] = {
    "let": T.LET, "fn": T.FN, "def": T.DEF, "if": T.IF, "else": T.ELSE,
    "type": T.TYPE, "match": T.MATCH, "extern": T.EXTERN, "free_var": T.FREE_VAR,
    "ref": T.REF, "ref_read": T.REF_READ, "ref_write": T.REF_WRITE,
}

_PUNCT2: dict[str, T] = {
    "->": T.ARROW, "=>": T.FAT_ARROW, "==": T.EQEQ, "!=": T.NE, "<=": T.LE, ">=": T.GE,
}

_PUNCT1: dict[str, T] = {
    "(": T.LPAREN, ")": T.RPAREN, "[": T.LSQUARE, "]": T.RSQUARE, "{": T.LCURLY,
    "}": T.RCURLY, ",": T.COMMA, ";": T.SEMI, ":": T.COLON, ".": T.PERIOD, "=": T.EQUAL,
    "?": T.QUESTION, "+": T.PLUS, "-": T.MINUS, "*": T.STAR, "/": T.SLASH, "<": T.LT,
    ">": T.GT,
}

_WHITESPACE = re.compile(r"[ \t\r\n\f\v]+")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DIGITS = re.compile(r"[0-9]+")
_NUMBER = re.compile(r"[0-9]+(?P<frac>\.[0-9]+)?(?P<exp>[eE][+-]?[0-9]+)?"
                     r"(?P<suffix>[fiu][0-9]*)?(?![A-Za-z0-9_])")
_NUMBER_LOOSE = re.compile(r"[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?[A-Za-z0-9_]*")
_SPECIAL_FLOAT = re.compile(r"(?P<name>inf|nan)(?P<suffix>f(16|32|64)?)(?![A-Za-z0-9_])")
_META = re.compile(r"meta\[(?P<kind>[^\]\n]*)\]\[(?P<index>[^\]\n]*)\]")
_ATTR = re.compile(r"#\[(?P<body>[^\]\n]*)\]")
_VERSION = re.compile(r'version\s*=\s*(?P<value>"[^"]*")')

_SUFFIX_DTYPES: dict[str, DType] = {
    "f": DType.FLOAT32, "f16": DType.FLOAT16, "f32": DType.FLOAT32, "f64": DType.FLOAT64,
    "i": DType.INT32, "i8": DType.INT8, "i16": DType.INT16, "i32": DType.INT32,
    "i64": DType.INT64,
    "u": DType.UINT32, "u8": DType.UINT8, "u16": DType.UINT16, "u32": DType.UINT32,
    "u64": DType.UINT64,
}


@dataclass(frozen=True, slots=True)
class Number:
    """The value of a NUMBER token before any sign is applied.

    ``value`` is a Python ``int`` for integer literals and a ``float``
    (the double nearest to the text) for float literals; ``dtype`` is the
    suffix's dtype, or None when there is no suffix."""

    text: str
    value: int | float
    is_float: bool
    dtype: DType | None


@dataclass(frozen=True, slots=True)
class MetaRef:
    kind: str
    index: int


class Token(NamedTuple):
    kind: T
    text: str
    span: Span
    #: NUMBER: Number; STRING/IDENT/LOCAL/GLOBAL: str; GRAPH: int; BOOL: bool;
    #: META: MetaRef; VERSION: the quoted version; METADATA: (JSON text, line, col).
    value: object = None
    #: offset of the first character in the source
    offset: int = 0

    def describe(self) -> str:
        if self.kind in (T.IDENT, T.LOCAL, T.GLOBAL, T.GRAPH, T.NUMBER, T.STRING, T.BOOL,
                         T.META):
            return f"{self.kind.value} `{self.text}`"
        return self.kind.value


class Lexer:
    def __init__(self, text: str, source: str) -> None:
        self.text = text
        self.source = source
        self.pos = 0
        self.line = 1
        self.col = 1
        self.tokens: list[Token] = []
        self.diagnostics: list[Diagnostic] = []

    # ---------------------------------------------------------------- helpers
    def _advance(self, n: int) -> None:
        """Move ``n`` characters forward, keeping line and column."""
        chunk = self.text[self.pos:self.pos + n]
        newlines = chunk.count("\n")
        if newlines:
            self.line += newlines
            self.col = n - chunk.rfind("\n")
        else:
            self.col += n
        self.pos += n

    def _span_from(self, line: int, col: int) -> Span:
        return Span(self.source, line, col, self.line, self.col)

    def _emit(self, kind: T, n: int, value: object = None) -> None:
        line, col, start = self.line, self.col, self.pos
        text = self.text[start:start + n]
        self._advance(n)
        self.tokens.append(Token(kind, text, self._span_from(line, col), value, start))

    def _error(self, message: str, line: int, col: int, end_line: int | None = None,
               end_col: int | None = None) -> None:
        span = Span(self.source, line, col, end_line if end_line is not None else line,
                    end_col if end_col is not None else col + 1)
        self.diagnostics.append(Diagnostic(message, span))

    # ---------------------------------------------------------------- main loop
    def run(self) -> list[Token]:
        text = self.text
        n = len(text)
        while self.pos < n:
            c = text[self.pos]
            if c in " \t\r\n\f\v":
                m = _WHITESPACE.match(text, self.pos)
                assert m is not None
                self._advance(m.end() - self.pos)
            elif text.startswith("//", self.pos):
                end = text.find("\n", self.pos)
                self._advance((n if end < 0 else end) - self.pos)
            elif text.startswith("/*", self.pos):
                self._block_comment()
            elif c == '"':
                self._string()
            elif c == "%":
                self._percent()
            elif c == "@":
                self._at()
            elif c == "#":
                if self._attribute():
                    break  # a metadata section runs to the end of the file
            elif "0" <= c <= "9":
                self._number()
            elif ("a" <= c <= "z") or ("A" <= c <= "Z") or c == "_":
                self._word()
            elif text[self.pos:self.pos + 2] in _PUNCT2:
                self._emit(_PUNCT2[text[self.pos:self.pos + 2]], 2)
            elif c in _PUNCT1:
                self._emit(_PUNCT1[c], 1)
            else:
                self._error(f"unexpected character `{c}`", self.line, self.col)
                self._advance(1)
        self.tokens.append(Token(T.EOF, "", Span(self.source, self.line, self.col, self.line,
                                                 self.col + 1), None, self.pos))
        return self.tokens

    # ---------------------------------------------------------------- pieces
    def _block_comment(self) -> None:
        line, col = self.line, self.col
        text = self.text
        depth = 0
        i = self.pos
        while i < len(text):
            if text.startswith("/*", i):
                depth += 1
                i += 2
            elif text.startswith("*/", i):
                depth -= 1
                i += 2
                if depth == 0:
                    break
            else:
                i += 1
        if depth != 0:
            self._error("unterminated block comment", line, col, line, col + 2)
        self._advance(i - self.pos)

    def _string(self) -> None:
        line, col, start = self.line, self.col, self.pos
        text = self.text
        i = self.pos + 1
        out: list[str] = []
        escapes = {'"': '"', "\\": "\\", "n": "\n", "t": "\t"}
        while i < len(text) and text[i] != '"' and text[i] != "\n":
            if text[i] == "\\" and i + 1 < len(text) and text[i + 1] in escapes:
                out.append(escapes[text[i + 1]])
                i += 2
            else:
                out.append(text[i])
                i += 1
        if i >= len(text) or text[i] != '"':
            self._error("unterminated string literal", line, col)
            self._advance(i - self.pos)
            return
        self._advance(i + 1 - self.pos)
        self.tokens.append(Token(T.STRING, text[start:i + 1], self._span_from(line, col),
                                 "".join(out), start))

    def _percent(self) -> None:
        text = self.text
        m = _DIGITS.match(text, self.pos + 1)
        if m is not None and not _IDENT.match(text, m.end()):
            self._emit(T.GRAPH, m.end() - self.pos, int(m.group()))
            return
        m = _IDENT.match(text, self.pos + 1)
        if m is None:
            self._error("expected a variable name after `%`", self.line, self.col)
            self._advance(1)
            return
        self._emit(T.LOCAL, m.end() - self.pos, m.group())

    def _at(self) -> None:
        m = _IDENT.match(self.text, self.pos + 1)
        if m is None:
            self._error("expected a global name after `@`", self.line, self.col)
            self._advance(1)
            return
        self._emit(T.GLOBAL, m.end() - self.pos, m.group())

    def _attribute(self) -> bool:
        """``#[version = "..."]`` or ``#[metadata]``; True for metadata."""
        line, col = self.line, self.col
        m = _ATTR.match(self.text, self.pos)
        if m is None:
            self._error("`#` must start an attribute such as `#[version = \"0.0.5\"]`",
                        line, col)
            self._advance(1)
            return False
        body = m.group("body").strip()
        if body == "metadata":
            start = self.pos
            self._advance(m.end() - self.pos)
            json_start = self.pos
            json_line, json_col = self.line, self.col
            rest = self.text[json_start:]
            self._advance(len(rest))
            self.tokens.append(Token(T.METADATA, self.text[start:], self._span_from(line, col),
                                     (rest, json_line, json_col), start))
            return True
        version = _VERSION.fullmatch(body)
        if version is not None:
            self._emit(T.VERSION, m.end() - self.pos, version.group("value"))
            return False
        self._error(f"unsupported attribute `#[{body}]`", line, col, line,
                    col + m.end() - self.pos)
        self._advance(m.end() - self.pos)
        return False

    def _number(self) -> None:
        text = self.text
        line, col = self.line, self.col
        if self.tokens and self.tokens[-1].kind is T.PERIOD:
            # a tuple projection index: digits only
            m = _DIGITS.match(text, self.pos)
            assert m is not None
            self._emit(T.NUMBER, m.end() - self.pos,
                       Number(m.group(), int(m.group()), False, None))
            return
        m = _NUMBER.match(text, self.pos)
        if m is None:
            loose = _NUMBER_LOOSE.match(text, self.pos)
            assert loose is not None
            self._error(f"invalid number literal `{loose.group()}`", line, col, line,
                        col + len(loose.group()))
            self._emit(T.NUMBER, loose.end() - self.pos, Number(loose.group(), 0, False, None))
            return
        literal = m.group()
        suffix = m.group("suffix") or ""
        body = literal[:len(literal) - len(suffix)]
        looks_float = bool(m.group("frac") or m.group("exp"))
        dtype: DType | None = None
        if suffix:
            dtype = _SUFFIX_DTYPES.get(suffix)
            if dtype is None:
                self._error(f"invalid numeric suffix `{suffix}` in `{literal}`", line, col,
                            line, col + len(literal))
        is_float = looks_float or (dtype is not None and dtype.is_float) or \
            (bool(suffix) and suffix[0] == "f")
        if is_float and dtype is not None and not dtype.is_float:
            self._error(f"`{literal}`: an integer suffix on a floating-point literal", line,
                        col, line, col + len(literal))
            dtype = None
        value: int | float = float(body) if is_float else int(body)
        self._emit(T.NUMBER, len(literal), Number(literal, value, is_float, dtype))

    def _word(self) -> None:
        text = self.text
        special = _SPECIAL_FLOAT.match(text, self.pos)
        if special is not None:
            name = special.group()
            suffix = special.group("suffix")
            value = float("inf") if special.group("name") == "inf" else float("nan")
            self._emit(T.NUMBER, len(name), Number(name, value, True, _SUFFIX_DTYPES[suffix]))
            return
        meta = _META.match(text, self.pos)
        if meta is not None:
            line, col = self.line, self.col
            index_text = meta.group("index").strip()
            kind = meta.group("kind").strip()
            if not index_text.isdigit():
                self._error(f"the index of a meta reference must be a number, found "
                            f"`{index_text}`", line, col, line, col + len(meta.group()))
                index = 0
            else:
                index = int(index_text)
            self._emit(T.META, len(meta.group()), MetaRef(kind, index))
            return
        m = _IDENT.match(text, self.pos)
        assert m is not None
        word = m.group()
        if word == "match" and text.startswith("?", m.end()):
            self._emit(T.MATCH_PARTIAL, len(word) + 1)
        elif word in KEYWORDS:
            self._emit(KEYWORDS[word], len(word))
        elif word in ("True", "False"):
            self._emit(T.BOOL, len(word), word == "True")
        elif word == "_":
            self._emit(T.UNDERSCORE, 1)
        else:
            self._emit(T.IDENT, len(word), word)


def tokenize(text: str, source: str) -> tuple[list[Token], list[Diagnostic]]:
    """Tokens (ending with EOF) and the lexical errors found."""
    lexer = Lexer(text, source)
    tokens = lexer.run()
    return tokens, lexer.diagnostics


def suffix_dtype(suffix: str) -> DType | None:
    return _SUFFIX_DTYPES.get(suffix)
