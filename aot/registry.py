"""A named table that modules register into.

Design note
-----------
The compiler has four tables of the same shape, and this class is the one
mechanism behind all of them: the operator records
(:mod:`aot.ir.registry`), their lowerings (:mod:`aot.emit.lower.registry`),
the ONNX converters (:mod:`aot.frontend.onnx.registry`) and the passes
(:mod:`aot.passes.manager`).  Each is filled the same way -- the modules of
a family register their entries when they are imported -- and read the same
way:

* **register once.**  A key names one entry.  Registering the same object
  again under its key is allowed (a decorator applied twice, a module
  imported under two names); a different object under a taken key is a
  bug, refused with an assertion naming the key.
* **lazy loading.**  The table knows how to import its family (``load``)
  and does so once, on the first read that needs it: iteration, or a
  lookup of a key that is not registered yet.  A program that only builds
  IR never imports the backend's lowerings; a lookup of an entry whose
  module is already imported costs nothing.  A load that fails is retried
  on the next read (the error is not swallowed into a half-filled table).
  A table may also know where one key probably lives (``load_one``, e.g.
  a pass named by its file): a miss tries that module first and loads the
  whole family only if the key is still missing, so a compile imports the
  passes it runs and not every pass of the package (a guess only ever
  adds entries: what a lookup finds is the same either way).
* **sorted iteration.**  Entries come out by sorted key, whatever order
  the modules happened to be imported in, so everything derived from a
  table (``aot ops``, the C output, error messages) is deterministic.
* **helpful misses.**  :meth:`Registry.lookup` raises :class:`NotRegistered`
  naming the kind of entry, the closest known keys and all known keys;
  :meth:`Registry.get` returns ``None`` for callers with their own message.

This module sits at the bottom of the package: it imports nothing from
the IR, the passes, the backend or the frontends.
"""

from __future__ import annotations

import difflib
from contextlib import contextmanager
from typing import Callable, Generic, Hashable, Iterator, TypeVar

__all__ = ["Registry", "NotRegistered"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class NotRegistered(LookupError):
    """A lookup of a key nobody registered."""


class Registry(Generic[K, V]):
    """Entries of one kind (``what``: "operator", "pass" ...) by key.
    ``load`` imports the modules that register into the table."""

    def __init__(self, what: str, load: Callable[[], object] | None = None,
                 load_one: Callable[[K], object] | None = None) -> None:
        self.what = what
        self._load = load
        self._load_one = load_one
        self._table: dict[K, V] = {}
        self._state = "idle" if load is not None else "loaded"

    def __repr__(self) -> str:
        return f"Registry({self.what}, {len(self._table)} entries, {self._state})"

    # --- filling ------------------------------------------------------------

    def register(self, key: K, entry: V) -> V:
        """Add ``entry`` under ``key``; returns ``entry``."""
        old = self._table.get(key)
        assert old is None or old is entry, f"{self.what} {key!r} registered twice"
        self._table[key] = entry
        return entry

    def unregister(self, key: K) -> V:
        """Remove and return the entry of ``key`` (tests' scratch entries)."""
        return self._table.pop(key)

    @contextmanager
    def scratch(self) -> Iterator[None]:
        """Entries registered, replaced or removed inside the block are put
        back as they were at its end (for tests).  The family is loaded
        first, so the restored table is the complete one."""
        self._ensure_loaded()
        saved = dict(self._table)
        try:
            yield
        finally:
            self._table.clear()
            self._table.update(saved)

    # --- reading ------------------------------------------------------------

    def get(self, key: K) -> V | None:
        """The entry of ``key``, or ``None``."""
        if key not in self._table:
            if self._state == "idle" and self._load_one is not None:
                self._load_one(key)
            if key not in self._table:
                self._ensure_loaded()
        return self._table.get(key)

    def lookup(self, key: K) -> V:
        """The entry of ``key``; :class:`NotRegistered` when there is none."""
        entry = self.get(key)
        if entry is None:
            raise NotRegistered(self._unknown_message(key))
        return entry

    def __contains__(self, key: object) -> bool:
        return self.get(key) is not None  # type: ignore[arg-type]

    def keys(self) -> list[K]:
        self._ensure_loaded()
        return sorted(self._table)  # type: ignore[type-var]

    def values(self) -> list[V]:
        return [self._table[k] for k in self.keys()]

    def items(self) -> list[tuple[K, V]]:
        return [(k, self._table[k]) for k in self.keys()]

    def __iter__(self) -> Iterator[V]:
        return iter(self.values())

    def __len__(self) -> int:
        self._ensure_loaded()
        return len(self._table)

    # --- internals ----------------------------------------------------------

    def _ensure_loaded(self) -> None:
        # "loading": a module of the family reads the table while it is being
        # imported; it sees the entries registered so far (no re-entry).
        if self._state != "idle":
            return
        assert self._load is not None
        self._state = "loading"
        try:
            self._load()
        except BaseException:
            self._state = "idle"
            raise
        self._state = "loaded"

    def _unknown_message(self, key: K) -> str:
        known = [str(k) for k in self.keys()]
        close = difflib.get_close_matches(str(key), known, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        return f"unknown {self.what} {key!r}{hint} (known: {', '.join(known) or 'none'})"
