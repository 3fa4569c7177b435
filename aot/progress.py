"""The stages of a compile, their wall time, and the progress a user sees.

The driver (:mod:`aot.compiler`, the backend, the command line) marks its
stages with ``with stage("lowering"): ...``.  Outside a :class:`Progress`
that costs one context-variable lookup and records nothing, so library
users of ``aot.compile`` see and pay nothing.  The command line activates
a :class:`Progress` (``with progress:``) that

* accounts every second of the compile to a stage: a stage's time is its
  own, exclusive of the stages nested in it, so the stages' times add up
  to the wall time of the work they cover (what ``--pass-timing`` prints
  in full, see :func:`render_timing`);
* shows the stages as they happen, when asked to (``display``): on a
  terminal, the running stage with its elapsed time refreshed four times a
  second on one line (``\\r`` and erase-line), then one line per finished
  stage; on anything else (a log, a pipe), one plain line per finished
  stage and no control characters.

Stages the command line shows: ``import``, ``passes``, ``lowering``,
``planning``, ``rendering`` and ``C build`` (the last only when the library
is built).  A stage entered again (a second ``passes`` run) adds to its
total.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import IO, Iterator

__all__ = ["Progress", "stage", "current_progress", "render_timing"]

_CURRENT: contextvars.ContextVar[Progress | None] = contextvars.ContextVar(
    "aot_progress", default=None)

#: Seconds between refreshes of the running stage's line on a terminal.
TICK_S = 0.25


@dataclass
class _Open:
    name: str
    start: float
    nested: float = 0.0        # seconds spent in stages nested in this one


@dataclass
class Progress:
    """Stage times of one command, shown on ``stream`` when ``display``
    (``live``: a terminal, refreshed in place; else plain lines)."""

    display: bool = False
    live: bool = False
    stream: IO[str] = field(default_factory=lambda: sys.stderr)
    seconds: dict[str, float] = field(default_factory=dict)
    _stack: list[_Open] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _ticker: threading.Thread | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _token: contextvars.Token | None = None
    _shown: str = ""           # the running stage's line as last drawn

    @classmethod
    def for_stream(cls, stream: IO[str], *, quiet: bool = False,
                   verbose: bool = False) -> Progress:
        """Shown live on a terminal, as plain lines elsewhere only when
        ``verbose``, never when ``quiet``."""
        tty = bool(getattr(stream, "isatty", lambda: False)())
        display = not quiet and (tty or verbose)
        return cls(display=display, live=display and tty, stream=stream)

    def __enter__(self) -> Progress:
        self._token = _CURRENT.set(self)
        if self.live:
            self._stop.clear()
            self._ticker = threading.Thread(target=self._tick, name="aot-progress", daemon=True)
            self._ticker.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._ticker is not None:
            self._stop.set()
            self._ticker.join()
            self._ticker = None
        self.clear_line()
        if self._token is not None:
            _CURRENT.reset(self._token)
            self._token = None

    # --- stages -------------------------------------------------------------

    def begin(self, name: str, since: float | None = None) -> None:
        """Enter stage ``name``; ``since`` (a ``time.perf_counter()``
        reading) dates its start back to work done before it was entered."""
        with self._lock:
            self._stack.append(_Open(name, time.perf_counter() if since is None else since))
            self.seconds.setdefault(name, 0.0)       # in the order the stages start
        self._draw()

    def end(self, failed: bool = False) -> None:
        """Leave the innermost stage (``failed``: by an exception; its time
        counts, but it is not shown as finished)."""
        now = time.perf_counter()
        with self._lock:
            done = self._stack.pop()
            elapsed = now - done.start
            self.seconds[done.name] = self.seconds.get(done.name, 0.0) + elapsed - done.nested
            if self._stack:
                self._stack[-1].nested += elapsed
            if not failed:
                self._finished(done.name, elapsed)
        self._draw()

    def total(self) -> float:
        return sum(self.seconds.values())

    # --- display ------------------------------------------------------------

    def _finished(self, name: str, elapsed: float) -> None:
        if not self.display or self._stack:
            return           # nested stages are shown as part of their parent
        self._write_line(f"aot: {name:<14} {elapsed:8.2f} s")

    def _write_line(self, text: str) -> None:
        prefix = "\r\033[K" if self.live and self._shown else ""
        self.stream.write(f"{prefix}{text}\n")
        self.stream.flush()
        self._shown = ""

    def _draw(self) -> None:
        if not self.live:
            return
        with self._lock:
            if not self._stack:
                return
            top = self._stack[0]
            text = f"aot: {top.name:<14} {time.perf_counter() - top.start:8.1f} s ..."
            self.stream.write(f"\r\033[K{text}")
            self.stream.flush()
            self._shown = text

    def _tick(self) -> None:
        while not self._stop.wait(TICK_S):
            self._draw()

    def clear_line(self) -> None:
        """Erase the running stage's line (before printing something else)."""
        with self._lock:
            if self.live and self._shown:
                self.stream.write("\r\033[K")
                self.stream.flush()
                self._shown = ""


def process_start() -> float | None:
    """When this process started, as a ``time.perf_counter()`` reading
    (Linux: from /proc, to the clock tick), or None where unknown: the
    command line's start-up stage then includes the interpreter's start
    and the import of the package."""
    try:
        with open("/proc/self/stat", encoding="ascii") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        ticks = int(fields[19])            # field 22, starttime, after pid and comm
        since_boot = time.clock_gettime(time.CLOCK_BOOTTIME)
        now = time.perf_counter()
    except (OSError, ValueError, IndexError, AttributeError):
        return None
    age = since_boot - ticks / os.sysconf("SC_CLK_TCK")
    return now - age if 0 <= age < 3600 * 24 * 365 else None


def current_progress() -> Progress | None:
    return _CURRENT.get()


@contextlib.contextmanager
def stage(name: str, since: float | None = None) -> Iterator[None]:
    """Account the enclosed work to stage ``name`` of the active
    :class:`Progress` (nothing when none is active), from ``since`` (a
    ``time.perf_counter()`` reading) when given."""
    progress = _CURRENT.get()
    if progress is None:
        yield
        return
    progress.begin(name, since)
    try:
        yield
    except BaseException:
        progress.end(failed=True)
        raise
    progress.end()


def render_timing(progress: Progress, wall_s: float,
                  passes: dict[str, tuple[int, float]] | None = None) -> str:
    """The whole compile as a table: every stage in order, the passes
    (``name -> (runs, seconds)``) under ``passes``, whatever no stage
    covers as ``other``, and the wall time, which the rows add up to."""
    rows: list[tuple[str, str, float]] = []
    for name, seconds in progress.seconds.items():
        rows.append((name, "", seconds))
        if name == "passes" and passes:
            inside = 0.0
            for pass_name, (runs, pass_s) in passes.items():
                rows.append((f"  {pass_name}", str(runs), pass_s))
                inside += pass_s
            rows.append(("  (pass manager, between passes)", "", max(seconds - inside, 0.0)))
    rows.append(("other (not in a stage)", "", max(wall_s - progress.total(), 0.0)))
    lines = [f"{'stage / pass':40} {'runs':>5} {'ms':>11} {'%':>6}"]
    for label, count, seconds in rows:
        share = 100.0 * seconds / wall_s if wall_s > 0 else 0.0
        lines.append(f"{label:40} {count:>5} {seconds * 1e3:11.2f} {share:6.1f}")
    lines.append(f"{'total (wall time)':40} {'':>5} {wall_s * 1e3:11.2f} {100.0:6.1f}")
    return "\n".join(lines)
