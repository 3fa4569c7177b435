"""Garbage-collector settings while compiling.

Design note
-----------
Compile time of long straight-line programs grew faster than their length
(CPU seconds, ``let %x{i+1} = add(%x{i}, 1f)`` chains through
``aot.compile``: 8,000 lets 6.8 s, 32,000 lets 34 s -- 5x for 4x).  The
passes themselves are linear (with the collector disabled the same runs
take 4.6 s and 18.1 s, 3.9x); the rest was CPython's cyclic garbage
collector.  Every pass builds a new IR of the program's size while the
old one is still referenced, so the collector's young generations fill
and are promoted quickly, and each full collection walks every live IR
node -- millions of objects -- many times per pass.

The IR is acyclic (frozen dataclasses: trees and DAGs), so reference
counting frees almost everything and the cyclic collector finds little;
scanning less often costs nothing but a little memory held by the rare
cycle a bit longer.  :func:`compiling` raises the thresholds (young
generation 50,000 allocations instead of 700; a full collection every
100 middle ones instead of 10) for the duration of a parse, type
inference or compile, and restores them after (nesting is fine: an inner
scope restores the outer's values).  Measured (CPU seconds, ``aot compile
--no-build``): 8,000 lets 7.4 -> 5.3, 32,000 lets 32.3 -> 21.2 (now 2.0x
per doubling), 100,000 lets 96.0 -> 69.7; ``aot check`` of 100,000 lets
21.2 -> 17.6.  ``bench/compile_time.py --lets`` measures it.
"""

from __future__ import annotations

import functools
import gc
from contextlib import contextmanager
from typing import Any, Callable, Iterator, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

#: thresholds (young, middle, old) while compiling; never lowered below
#: what the process already set
THRESHOLDS = (50_000, 20, 100)


@contextmanager
def compiling() -> Iterator[None]:
    """Collector thresholds for building large IRs (module docstring)."""
    old = gc.get_threshold()
    gc.set_threshold(*(max(o, t) for o, t in zip(old, THRESHOLDS)))
    try:
        yield
    finally:
        gc.set_threshold(*old)


def gc_tuned(fn: F) -> F:
    """``fn`` run inside :func:`compiling`."""
    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        with compiling():
            return fn(*args, **kwargs)
    return run  # type: ignore[return-value]
