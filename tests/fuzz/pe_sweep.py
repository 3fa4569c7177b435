"""A sweep of random programs through PartialEvaluate in the PROGRAM pipeline.

Design note
-----------
Each item is a whole-language program of the fuzzer's ``lang`` family
(:func:`campaign.make_item`, drawn from a seed, so any item can be rebuilt
from its seed alone), checked twice by the reference interpreter:

* ``dynamic``: as generated, main's arguments unknown at compile time;
* ``static``: main's tensor parameters bound to the item's argument
  values (BindParams), so most of the program is static and the partial
  evaluator unfolds closures, matches and references at compile time.

For each, the module goes through the PROGRAM pipeline at opt level 3
with PartialEvaluate required, the pass verifier on PartialEvaluate's
output (well formed and well typed: type inference succeeds again; after
every pass with ``verify="all"``, about twice the time), under a
wall-clock alarm (termination: PartialEvaluate's fuel must stop every
unfolding; a pass that does not finish in :data:`TIMEOUT` seconds is a
failure).  The interpreter must give the same value on the result as on
the original program, exactly (the evaluator folds operators with the
interpreter's own NumPy reference).  A difference is attributed: the same
pipeline without PartialEvaluate is run, and if it differs too the bug is
not PartialEvaluate's.

A sample goes on to C (:func:`check_c`): batches of the campaign's
packing (one C build per batch), compiled at opt level 3 with
PartialEvaluate required, compared with the interpreter.

Statistics: how many programs had closures (function literals that are
not fused primitives) before and after, and the pass's time.
"""

from __future__ import annotations

import signal
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable

import aot
from aot.compiler import _context
from aot.ir.expr import Function
from aot.ir.module import IRModule
from aot.ir.visitor import post_order
from aot.passes.bind_params import bind_params
from aot.passes.manager import Pass, PassContext, PassInstrument, PassTiming, verify_module
from aot.passes.pipelines import PROGRAM
from aot.values import format_value, values_equal
from campaign import Failure, Item, Prepared, Stats, check_batch, item_seed, make_item, prepare

#: seconds the PROGRAM pipeline may take on one generated program
TIMEOUT = 60
#: the family label of sweep items (their seeds: ``item_seed(seed, FAMILY, i)``)
FAMILY = "pe"
MODES = ("dynamic", "static")


class _Timeout(Exception):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise _Timeout()


@dataclass
class SweepStats:
    programs: int = 0
    checks: int = 0
    discarded: int = 0
    failures: list[Failure] = field(default_factory=list)
    #: per mode: programs with closures before, and of those, without any after
    had_closures: dict[str, int] = field(default_factory=lambda: dict.fromkeys(MODES, 0))
    closure_free_after: dict[str, int] = field(default_factory=lambda: dict.fromkeys(MODES, 0))
    pe_seconds: float = 0.0
    pe_max: float = 0.0
    c_programs: int = 0
    c_builds: int = 0


def closures(mod: IRModule, entry: str = "main") -> int:
    """Function literals (not fused primitives) in ``entry`` and the
    globals it reaches."""
    from aot.ir.expr import GlobalVar
    n = 0
    todo, seen = [mod.get_global_var(entry)], set()
    while todo:
        gv = todo.pop()
        if gv.name in seen:
            continue
        seen.add(gv.name)
        func = mod[gv.name]
        for node in post_order(func):
            if isinstance(node, GlobalVar) and node.name in mod:
                todo.append(node)
            elif (isinstance(node, Function) and node is not func
                  and not node.attrs.get("Primitive")):
                n += 1
    return n


class _VerifyAfter(PassInstrument):
    """The verifier (well formed, well typed) after one pass only."""

    def __init__(self, name: str) -> None:
        self.name = name

    def after(self, p: Pass, mod: IRModule) -> None:
        if p.name == self.name:
            verify_module(mod, p.name)


def program_pipeline(mod: IRModule, *, pe: bool, timing: PassTiming | None = None,
                     verify: str = "pe") -> IRModule:
    """The PROGRAM pipeline at opt level 3, with or without
    PartialEvaluate.  ``verify``: ``"all"`` runs the verifier after every
    pass, ``"pe"`` after PartialEvaluate only, ``"none"`` not at all (the
    pipeline's own InferType passes still type-check the result)."""
    instruments: list[PassInstrument] = [timing] if timing else []
    if verify == "pe":
        instruments.append(_VerifyAfter("PartialEvaluate"))
    base = PassContext(opt_level=3, verify=verify == "all",
                       required=["PartialEvaluate"] if pe else [],
                       disabled=[] if pe else ["PartialEvaluate"],
                       instruments=instruments)
    with base:
        ctx = _context(3, "main")
        return PROGRAM(bind_params(mod, {}, "main"), ctx)


def static_variant(p: Prepared) -> tuple[IRModule, list]:
    """Main's tensor parameters bound to the argument values."""
    import numpy as np
    names = [v.name_hint for v in p.mod["main"].params]
    tensors = {n: a for n, a in zip(names, p.args) if isinstance(a, np.ndarray)}
    mod = aot.infer_types(bind_params(p.mod, tensors, "main"))
    return mod, [a for n, a in zip(names, p.args) if n not in tensors]


def _interpret(mod: IRModule, args: list) -> tuple[Any, str | None]:
    try:
        return aot.interpret(mod, *args), None
    except Exception as e:  # noqa: BLE001 - reported
        return None, f"{type(e).__name__}: {e}"


def _run_pipeline(mod: IRModule, pe: bool, timing: PassTiming | None = None,
                  verify: str = "pe") -> tuple[IRModule | None, str | None, float]:
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(TIMEOUT)
    start = time.perf_counter()
    try:
        out = program_pipeline(mod, pe=pe, timing=timing, verify=verify)
        return out, None, time.perf_counter() - start
    except _Timeout:
        return None, f"timeout: the pipeline ran over {TIMEOUT} s", time.perf_counter() - start
    except Exception as e:  # noqa: BLE001 - reported
        tb = "".join(traceback.format_exception(e)[-4:])
        return None, f"{type(e).__name__}: {e}\n{tb}", time.perf_counter() - start
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def check_mode(p: Prepared, mode: str, stats: SweepStats | None = None,
               verify: str = "pe") -> Failure | None:
    """One program in one mode through the pipeline with PartialEvaluate;
    None when the interpreter agrees."""
    if mode == "dynamic":
        mod, args, want = p.mod, p.args, p.want
    else:
        mod, args = static_variant(p)
        want, err = _interpret(mod, args)
        if err is not None:
            return Failure(p.item, f"{mode}-interp", err)
    timing = PassTiming()
    after, err, _ = _run_pipeline(mod, True, timing, verify)
    pe_time = timing.seconds.get("PartialEvaluate", 0.0)
    if stats is not None:
        stats.checks += 1
        stats.pe_seconds += pe_time
        stats.pe_max = max(stats.pe_max, pe_time)
    if err is not None:
        return Failure(p.item, f"{mode}-pipeline", err + _blame(mod, args, want))
    assert after is not None
    if stats is not None and closures(mod):
        stats.had_closures[mode] += 1
        stats.closure_free_after[mode] += closures(after) == 0
    got, err = _interpret(after, args)
    if err is not None:
        return Failure(p.item, f"{mode}-run", err + _blame(mod, args, want))
    if not values_equal(got, want):
        return Failure(p.item, f"{mode}-mismatch",
                       f"\n  after:  {format_value(got, limit=800)}"
                       f"\n  before: {format_value(want, limit=800)}" + _blame(mod, args, want))
    return None


def _blame(mod: IRModule, args: list, want: Any) -> str:
    """Whether the pipeline without PartialEvaluate goes wrong too."""
    after, err, _ = _run_pipeline(mod, False)
    if err is None:
        assert after is not None
        got, err = _interpret(after, args)
        if err is None and values_equal(got, want):
            return "\n  (without PartialEvaluate: the same value as before)"
    return "\n  (without PartialEvaluate it goes wrong too: " + (err or "another value") + ")"


def check_item(item: Item, stats: SweepStats | None = None) -> list[Failure]:
    """Both modes of one item (the replay of a sweep failure)."""
    p = prepare(item)
    if isinstance(p, Failure):
        return [p]
    if isinstance(p, str):
        return [Failure(item, "not-a-test", p)]
    return [f for mode in MODES if (f := check_mode(p, mode, stats)) is not None]


def check_c(preps: list[Prepared], stats: SweepStats, name: str = "pe") -> list[Failure]:
    """One C build of ``preps`` (the campaign's packing) at opt level 3
    with PartialEvaluate required."""
    inner = Stats()
    with PassContext(opt_level=3, required=["PartialEvaluate"]):
        failures = check_batch(preps, inner, name)
    stats.c_builds += inner.builds
    stats.c_programs += len(preps)
    return failures


def sweep(n: int, seed: int, *, c_every: int = 0, batch: int = 20,
          deadline: float | None = None, verify: str = "pe", shard: tuple[int, int] = (0, 1),
          log: Callable[[str], None] = lambda s: None) -> SweepStats:
    """``n`` programs drawn from ``seed``, each checked in both modes; every
    ``c_every``-th program (0: none) also goes to C, ``batch`` per build.
    ``shard`` ``(k, m)`` takes only the programs whose index is ``k`` mod
    ``m`` (``m`` processes share a sweep)."""
    stats = SweepStats()
    pending: list[Prepared] = []

    def record(failures: list[Failure], what: str = "") -> None:
        for f in failures:
            stats.failures.append(f)
            log(f"FAILURE{what} {f.summary()}")

    for k, i in enumerate(range(shard[0], n, shard[1])):
        if deadline is not None and time.monotonic() > deadline:
            break
        to_c = bool(c_every) and k % c_every == 0
        item = make_item("lang", item_seed(seed, FAMILY, i), slot=len(pending) if to_c else 0)
        if item is None:
            stats.discarded += 1
            continue
        stats.programs += 1
        p = prepare(item)
        if isinstance(p, (Failure, str)):
            record([p if isinstance(p, Failure) else Failure(item, "not-a-test", p)])
            continue
        record([f for mode in MODES if (f := check_mode(p, mode, stats, verify)) is not None])
        if to_c:
            pending.append(p)
            if len(pending) == batch:
                record(check_c(pending, stats), " (C)")
                pending = []
        if stats.programs % 250 == 0:
            log(f"{stats.programs} programs (up to #{i}), {len(stats.failures)} failures, "
                f"{stats.c_builds} C builds")
    if pending:
        record(check_c(pending, stats), " (C)")
    return stats
