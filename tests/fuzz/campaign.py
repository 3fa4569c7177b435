"""The fuzzing campaign: random programs through C and the interpreter.

Design note
-----------
Three families of items, each drawn from a seed so any item can be
rebuilt from ``(family, seed)`` alone:

* ``lang``: whole-language Relay programs (``tests/e2e/random_programs``);
* ``chain``: random operator chains (``tests/e2e/test_random_chains_c``);
* ``onnx``: random ONNX graphs (:mod:`onnx_graphs`), whose reference is
  onnxruntime.

Hypothesis strategies are drawn outside a test through a
``ConjectureData`` on a seeded ``random.Random``: the same seed gives the
same program.  Items are checked in *batches*: a batch of programs is
packed into one module whose ``main`` returns the tuple of their results
(one C build for the batch; a C build costs a second or two, the
interpreter milliseconds), every result is compared with its reference
(the interpreter's value, or onnxruntime's outputs, which the interpreter
must match too).  When a batch fails as a whole (a build error, a crash)
every item is rechecked alone to name the culprits.  A failing item is
shrunk (:mod:`shrink`) and saved under ``tests/fuzz_regressions``
(:mod:`regressions`), whose replay test then fails until the bug is fixed.

A failure is one of: ``frontend`` (a generated program or graph the
front end refuses: a generator or importer bug), ``interp`` (the
interpreter raises), ``compile`` (``aot.compile`` or the C build raises),
``run`` (the compiled model raises), ``mismatch`` (C or the interpreter
differ from the reference beyond tolerance).  An ONNX graph onnxruntime
refuses is discarded, not a failure; one our importer refuses with a
diagnostic is counted as ``refused`` (an unsupported corner, reported in
the summary) and only a traceback is a failure.
"""

from __future__ import annotations

import hashlib
import random
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent
for p in (str(HERE), str(TESTS / "e2e")):
    if p not in sys.path:
        sys.path.insert(0, p)

import aot  # noqa: E402
from aot.values import format_value, values_equal  # noqa: E402
from c_harness import compile_sized  # noqa: E402

FAMILIES = ("lang", "chain", "onnx")

#: tolerance widening over c_harness.TOLERANCE, per family: a chain
#: compounds ulp differences of libm; onnxruntime's kernels (its own exp,
#: tanh, erf approximations, fused multiply-adds) are another libm
WIDEN = {"lang": 1.0, "chain": 10.0, "onnx": 20.0}


@dataclass
class Item:
    """One program: Relay text and argument specs, or an ONNX graph."""
    family: str
    seed: int
    text: str = ""
    specs: tuple = ()
    graph: Any = None          # onnx_graphs.Graph

    @property
    def label(self) -> str:
        return f"{self.family}:{self.seed}"


@dataclass
class Failure:
    item: Item
    kind: str
    message: str

    def summary(self) -> str:
        first = self.message.strip().splitlines()[0] if self.message.strip() else ""
        return f"{self.item.label}: {self.kind}: {first[:200]}"


@dataclass
class Stats:
    programs: int = 0
    builds: int = 0
    discarded: int = 0
    refused: int = 0
    failures: list[Failure] = field(default_factory=list)
    refused_reasons: dict[str, int] = field(default_factory=dict)


# ---------------------------------------------------------------- drawing

def _draw(strategy: Any, seed: int) -> Any:
    from hypothesis.internal.conjecture.data import ConjectureData
    data = ConjectureData(random=random.Random(seed))
    return data.draw(strategy)


def item_seed(seed: int, family: str, index: int) -> int:
    """The seed of item ``index`` of ``family`` in a campaign."""
    h = hashlib.sha256(f"{seed}:{family}:{index}".encode()).digest()
    return int.from_bytes(h[:4], "little")


def make_item(family: str, seed: int, slot: int = 0) -> Item | None:
    """The item of ``family`` drawn from ``seed``; ``slot`` picks its name
    prefix (distinct within a batch).  None if the draw overran."""
    try:
        if family == "lang":
            from random_programs import programs
            p = _draw(programs(prefix=f"p{slot}"), seed)
            return Item(family, seed, p.text, p.args)
        if family == "chain":
            from test_random_chains_c import chains
            text, shapes = _draw(chains(), seed)
            rng = np.random.default_rng(seed)
            args = tuple(rng.standard_normal(s).astype(np.float32) for s in shapes)
            return Item(family, seed, text, args)
        if family == "onnx":
            from onnx_graphs import random_graph
            return Item(family, seed, graph=random_graph(seed, prefix=f"g{slot}"))
    except Exception as e:  # noqa: BLE001 - hypothesis' overrun (StopTest) and the like
        if type(e).__name__ in ("StopTest", "Frozen", "Overrun"):
            return None
        raise
    raise ValueError(f"unknown family {family!r}")


# ----------------------------------------------------------- references

def realize_all(specs: tuple, mod: Any) -> list:
    from random_programs import realize
    return [realize(s, mod) for s in specs]


def _tolerance(want: Any, family: str) -> tuple[float, float]:
    from c_harness import tolerance_for
    r, a = tolerance_for(want)
    w = WIDEN.get(family, 1.0)
    return r * w, a * w


def _short(e: BaseException) -> str:
    text = f"{type(e).__name__}: {e}"
    if not isinstance(e, aot.DiagnosticError):
        text += "\n" + "".join(traceback.format_exception(e)[-6:])
    return text


@dataclass
class Prepared:
    """An item parsed (or imported) and run by its reference(s)."""
    item: Item
    mod: Any
    args: list
    want: Any


def prepare(item: Item) -> Prepared | Failure | str:
    """The typed module, arguments and reference value of ``item``; a
    Failure, or a string (why the item is not a test: discarded/refused)."""
    if item.graph is not None:
        return _prepare_onnx(item)
    try:
        mod = aot.infer_types(aot.parse(item.text, source_name=f"{item.family}.relay"))
        args = realize_all(item.specs, mod)
    except aot.DiagnosticError as e:
        return Failure(item, "frontend", _short(e))
    try:
        want = aot.interpret(mod, *args)
    except Exception as e:  # noqa: BLE001
        return Failure(item, "interp", _short(e))
    return Prepared(item, mod, args, want)


def _prepare_onnx(item: Item) -> Prepared | Failure | str:
    from onnx_graphs import all_values
    g = item.graph
    try:
        values = all_values(g.model, g.inputs)
        ref = [values[o.name] if o.name in values else g.inputs[o.name]
               for o in g.model.graph.output]
    except Exception:  # noqa: BLE001 - the reference refuses: not a test
        return "discarded"
    if not all(np.isfinite(v).all() for v in values.values()):
        # NaN and infinities (Log of a negative, Pow of a negative base)
        # meet operators whose NaN behaviour ONNX leaves open (Max, LRN's
        # window sums in onnxruntime): not a test of ours
        return "discarded"
    try:
        mod = aot.from_onnx(g.model)
    except aot.DiagnosticError as e:
        return "refused: " + str(e).splitlines()[0]
    except Exception as e:  # noqa: BLE001
        return Failure(item, "frontend", _short(e))
    want: Any = tuple(ref) if len(ref) > 1 else ref[0]
    args = [g.inputs[i.name] for i in g.model.graph.input if i.name in g.inputs]
    try:
        got = aot.interpret(mod, *args)
    except Exception as e:  # noqa: BLE001
        return Failure(item, "interp", _short(e))
    problem = compare(got, want, item.family)
    if problem:
        return Failure(item, "mismatch", "interpreter vs onnxruntime: " + problem)
    return Prepared(item, mod, args, want)


def compare(got: Any, want: Any, family: str) -> str | None:
    """None if ``got`` matches ``want`` within the family's tolerance."""
    rtol, atol = _tolerance(want, family)
    if values_equal(got, want, rtol, atol):
        return None
    return (f"\n  got:       {format_value(got, limit=1500)}"
            f"\n  reference: {format_value(want, limit=1500)}")


# ------------------------------------------------------------------ C side

def pack_modules(preps: list[Prepared]) -> Any:
    """One module whose main returns every item's main result (items of
    the chain and onnx families: main only, parameter names distinct)."""
    from aot.ir.expr import Function, Tuple
    from aot.ir.module import IRModule
    packed = IRModule()
    params, bodies = [], []
    for p in preps:
        fn = p.mod["main"]
        params.extend(fn.params)
        bodies.append(fn.body)
        for data in p.mod.type_definitions.values():
            if data.header not in packed.type_definitions:
                packed.add_type(data)
    packed.add("main", Function(tuple(params), Tuple(tuple(bodies))))
    return packed


def _lang_pack(preps: list[Prepared]) -> tuple[Any, list]:
    """Whole-language programs packed by text (they carry globals and ADTs
    of their own, so a module is rebuilt from the joined text)."""
    parts = ['#[version = "0.0.5"]\n']
    sig, calls, args = [], [], []
    for k, p in enumerate(preps):
        fn = p.mod["main"]
        body = p.item.text.split("\n", 1)[1]
        assert body.count("def @main(") == 1
        # every item of a batch is drawn with its own prefix (slot), so
        # globals and types do not collide
        parts.append(body.replace("def @main(", f"def @m{k}_main(", 1))
        names = [f"%m{k}_a{i}" for i in range(len(fn.params))]
        sig += [f"{n}: {v.type_annotation}" for n, v in zip(names, fn.params)]
        calls.append(f"@m{k}_main({', '.join(names)})")
        args += list(p.item.specs)
    tup = "(" + ", ".join(calls) + ("," if len(calls) == 1 else "") + ")"
    parts.append(f"def @main({', '.join(sig)}) {{\n  {tup}\n}}\n")
    text = "".join(parts)
    mod = aot.infer_types(aot.parse(text, source_name="pack.relay"))
    return mod, realize_all(tuple(args), mod)


def run_c(mod: Any, args: list, name: str) -> tuple[Any, str | None, str]:
    """(result, None, "") or (None, kind, message): compile ``mod`` and
    call it twice (the second call must see no state of the first)."""
    with tempfile.TemporaryDirectory(prefix="aot-fuzz-") as d:
        try:
            fn = aot.load(compile_sized(mod, d, name=name))
        except Exception as e:  # noqa: BLE001
            return None, "compile", _short(e)
        try:
            first = fn(*args)
            second = fn(*args)
        except Exception as e:  # noqa: BLE001
            return None, "run", _short(e)
    if not values_equal(first, second):
        return None, "mismatch", "a second call returned another value: state leaks"
    return first, None, ""


def check_batch(preps: list[Prepared], stats: Stats, name: str = "fz") -> list[Failure]:
    """Compile the batch as one program; on a batch-level failure check
    every item alone."""
    if not preps:
        return []
    family = preps[0].item.family
    stats.builds += 1
    try:
        if family == "lang":
            mod, args = _lang_pack(preps)
        else:
            mod, args = pack_modules(preps), [a for p in preps for a in p.args]
        got, kind, message = run_c(mod, args, name)
    except Exception as e:  # noqa: BLE001 - packing itself failed: check items alone
        got, kind, message = None, "pack", _short(e)
    if kind is None:
        failures = []
        for p, g in zip(preps, got):
            problem = compare(g, p.want, family)
            if problem:
                failures.append(Failure(p.item, "mismatch", "C vs reference:" + problem))
        return failures
    failures = [f for p in preps if (f := check_alone(p, stats, name)) is not None]
    if not failures:
        failures.append(Failure(preps[0].item, "pack-" + kind,
                                "the batch failed but every item alone passed:\n" + message))
    return failures


def check_alone(p: Prepared, stats: Stats | None = None, name: str = "fz") -> Failure | None:
    if stats is not None:
        stats.builds += 1
    got, kind, message = run_c(p.mod, p.args, name)
    if kind is not None:
        return Failure(p.item, kind, message)
    problem = compare(got, p.want, p.item.family)
    return Failure(p.item, "mismatch", "C vs reference:" + problem) if problem else None


def check_item(item: Item) -> Failure | None:
    """The whole check of one item alone (the replay of a regression)."""
    p = prepare(item)
    if isinstance(p, Failure):
        return p
    if isinstance(p, str):
        return Failure(item, "not-a-test", p)
    return check_alone(p)


# ---------------------------------------------------------------- campaign

def run_campaign(n: int, seed: int, families: tuple[str, ...] = FAMILIES, batch: int = 20,
                 deadline: float | None = None, shrink: bool = True,
                 save_dir: Path | None = None,
                 log: Callable[[str], None] = lambda s: None) -> Stats:
    """``n`` items split evenly over ``families``, in batches of ``batch``
    per C build, a batch of each family in turn; stops early at ``deadline`` (a
    ``time.monotonic()`` value).  Failures are shrunk and saved in
    ``save_dir`` if given."""
    stats = Stats()
    per = {f: n // len(families) + (1 if i < n % len(families) else 0)
           for i, f in enumerate(families)}
    index = dict.fromkeys(families, 0)
    while any(index[f] < per[f] for f in families):
        for family in families:    # one batch per family in turn
            if index[family] >= per[family]:
                continue
            if deadline is not None and time.monotonic() > deadline:
                return stats
            preps: list[Prepared] = []
            while len(preps) < batch and index[family] < per[family]:
                s = item_seed(seed, family, index[family])
                index[family] += 1
                try:
                    item = make_item(family, s, slot=len(preps))
                except Exception as e:  # noqa: BLE001 - a generator bug: reported, not fatal
                    _report(Failure(Item(family, s), "generator", _short(e)), stats, False,
                            None, log)
                    continue
                if item is None:
                    stats.discarded += 1
                    continue
                stats.programs += 1
                p = prepare(item)
                if isinstance(p, Prepared):
                    preps.append(p)
                elif isinstance(p, Failure):
                    _report(p, stats, shrink, save_dir, log)
                elif p.startswith("refused"):
                    stats.refused += 1
                    stats.refused_reasons[p] = stats.refused_reasons.get(p, 0) + 1
                else:
                    stats.discarded += 1
            for f in check_batch(preps, stats):
                _report(f, stats, shrink, save_dir, log)
            log(f"{family}: {index[family]}/{per[family]} items, {stats.builds} builds, "
                f"{len(stats.failures)} failures")
    return stats


def _report(f: Failure, stats: Stats, shrink: bool, save_dir: Path | None,
            log: Callable[[str], None]) -> None:
    log("FAILURE " + f.summary())
    if shrink and not f.kind.startswith("pack"):
        from shrink import shrink_failure
        f = shrink_failure(f, log=log)
        log("shrunk: " + f.summary())
    stats.failures.append(f)
    if save_dir is not None and not f.kind.startswith("pack"):
        from regressions import save
        path = save(f, save_dir)
        log(f"saved {path}")
