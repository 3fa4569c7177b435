"""The pass manager: named passes in a registry, a context that decides
which run, instruments that watch them, and a verifier.

Design, after Relay's ``tvm.transform``:

* A pass is a small record (:class:`Pass`): a name, the optimisation level
  that enables it, an optional frozen dataclass of typed options, and a
  function ``IRModule -> IRModule`` (``(IRModule, options) -> IRModule``
  when it has options).  Each lives in its own file under ``aot/passes/``
  and registers itself with :func:`register_pass`; :func:`all_passes`
  imports every module of the package, so the registry is the tree.  A
  lookup by name first imports the module the name gives by convention
  (:func:`pass_module`), so a pipeline imports only its own passes.
* A :class:`PassContext` carries the optimisation level, the passes
  required or disabled by name, per-pass options, instruments and the
  ``verify`` switch.  Contexts nest with ``with``; code asks
  :func:`current` for the innermost one.  A pass runs when it is required,
  or when it is not disabled and ``opt_level >= pass.opt_level``.
* :class:`Sequential` is an ordered list of pass names: the default
  pipelines (:mod:`aot.passes.pipelines`) are such lists, one per backend.
* Instruments get ``before``/``after`` callbacks around every pass that
  runs (:class:`PassTiming`, :class:`DumpIR`).
* With ``verify`` on (the test suite turns it on for every test through
  ``AOT_VERIFY_PASSES=1``) the module after each pass must be well formed
  (every variable bound once and used in scope) and well typed (type
  inference succeeds again on it); a failure is a compiler bug and is
  raised as :class:`PassVerificationError` naming the pass.

Unknown pass names in ``required``/``disabled``/``options`` are user
errors (a DiagnosticError listing the known names), so a misspelt
``--disable-pass`` never silently does nothing.
"""

from __future__ import annotations

import contextvars
import dataclasses
import importlib
import importlib.util
import os
import pkgutil
import re
import sys
import time
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from ..diagnostics import DiagnosticError
from ..ir.module import IRModule
from ..registry import NotRegistered, Registry

__all__ = [
    "Pass", "PassContext", "PassInstrument", "PassTiming", "DumpIR", "Sequential",
    "PassVerificationError", "register_pass", "get_pass", "all_passes", "current",
    "run_pass", "verify_module", "PASSES",
]

MAX_OPT_LEVEL = 3


class PassVerificationError(AssertionError):
    """A pass produced an ill-formed or ill-typed module (a compiler bug)."""


@dataclass(frozen=True)
class Pass:
    """One named module-to-module transformation."""

    name: str
    opt_level: int
    fn: Callable[..., IRModule]
    options: type | None = None       # a frozen dataclass of typed options, or None
    doc: str = ""

    def make_options(self, raw: Mapping[str, Any]) -> Any:
        """The typed options of this pass from ``raw`` (name -> value);
        unknown names and wrong types are user errors."""
        if self.options is None:
            if raw:
                raise DiagnosticError(f"pass {self.name} takes no options (got {sorted(raw)})")
            return None
        hints = typing.get_type_hints(self.options)
        fields = {f.name for f in dataclasses.fields(self.options)}
        for key, value in raw.items():
            if key not in fields:
                raise DiagnosticError(f"pass {self.name} has no option {key!r} "
                                      f"(options: {', '.join(sorted(fields))})")
            want = hints[key]
            if not _fits(value, want):
                raise DiagnosticError(f"option {self.name}.{key} must be {_type_name(want)}, "
                                      f"not {type(value).__name__}")
        return self.options(**raw)

    def __call__(self, mod: IRModule) -> IRModule:
        return run_pass(self, mod)


def _type_name(want: Any) -> str:
    args = typing.get_args(want)
    if args:
        return " or ".join(_type_name(a) for a in args)
    return "None" if want is type(None) else getattr(want, "__name__", str(want))


def _fits(value: Any, want: Any) -> bool:
    args = typing.get_args(want)
    if args and typing.get_origin(want) in (typing.Union, types.UnionType):
        return any(_fits(value, a) for a in args)
    if args:                      # tuple[str, ...] and the like: check the container
        want = typing.get_origin(want)
    if want is Any:
        return True
    if want is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if want is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, want)


def _load_all() -> None:
    """Import every module of the package: the registry is the tree."""
    from .. import passes
    for info in pkgutil.iter_modules(passes.__path__):
        importlib.import_module(f"{passes.__name__}.{info.name}")


def pass_module(name: str) -> str:
    """The module a pass of this name lives in by the naming convention
    (``FoldConstant`` -> ``aot.passes.fold_constant``, ``CombineParallelConv2D``
    -> ``aot.passes.combine_parallel_conv2d``)."""
    return f"{__package__}.{re.sub(r'(?<=[a-z])(?=[A-Z])', '_', name).lower()}"


def _load_named(name: str) -> None:
    """Import the module of pass ``name`` by the convention, if there is
    one: a lookup then imports that pass, not the whole package (a pass
    named otherwise is found by :func:`_load_all`)."""
    if not isinstance(name, str) or not name.isidentifier():
        return
    module = pass_module(name)
    if module not in sys.modules and importlib.util.find_spec(module) is None:
        return
    importlib.import_module(module)


PASSES: Registry[str, Pass] = Registry("pass", _load_all, _load_named)


PassFunction = Callable[..., IRModule]


def register_pass(name: str, *, opt_level: int, options: type | None = None,
                  doc: str | None = None) -> Callable[[PassFunction], PassFunction]:
    """Decorator registering ``fn`` as the pass ``name``, enabled from
    ``opt_level`` on.  ``fn(mod)`` or, with ``options``, ``fn(mod, opts)``.
    ``doc`` (default: the first paragraph of ``fn``'s docstring) is what
    ``aot passes`` prints.
    Returns ``fn`` unchanged, so the module's function stays callable."""
    assert 0 <= opt_level <= MAX_OPT_LEVEL + 1, opt_level
    assert options is None or dataclasses.is_dataclass(options), options

    def wrap(fn: Callable[..., IRModule]) -> Callable[..., IRModule]:
        text = doc if doc is not None else (fn.__doc__ or "").strip().split("\n\n")[0]
        PASSES.register(name, Pass(name, opt_level, fn, options, " ".join(text.split())))
        return fn
    return wrap


def all_passes() -> list[Pass]:
    """Every registered pass, by name."""
    return PASSES.values()


def get_pass(name: str) -> Pass:
    try:
        return PASSES.lookup(name)
    except NotRegistered as exc:
        raise DiagnosticError(str(exc)) from None


# --- instruments -------------------------------------------------------------

class PassInstrument:
    """Callbacks around each pass that runs (override what you need)."""

    def enter(self, ctx: "PassContext") -> None:
        pass

    def exit(self, ctx: "PassContext") -> None:
        pass

    def before(self, p: Pass, mod: IRModule) -> None:
        pass

    def after(self, p: Pass, mod: IRModule) -> None:
        pass


class PassTiming(PassInstrument):
    """Wall time per pass (summed over runs), in order of first run."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.runs: dict[str, int] = {}
        self._start = 0.0

    def before(self, p: Pass, mod: IRModule) -> None:
        self._start = time.perf_counter()

    def after(self, p: Pass, mod: IRModule) -> None:
        self.seconds[p.name] = self.seconds.get(p.name, 0.0) + time.perf_counter() - self._start
        self.runs[p.name] = self.runs.get(p.name, 0) + 1

    def render(self) -> str:
        total = sum(self.seconds.values())
        lines = [f"{'pass':32} {'runs':>4} {'ms':>10}"]
        lines += [f"{n:32} {self.runs[n]:4} {s * 1e3:10.2f}" for n, s in self.seconds.items()]
        lines.append(f"{'total':32} {'':4} {total * 1e3:10.2f}")
        return "\n".join(lines)


class DumpIR(PassInstrument):
    """Writes the module as Relay text to ``dir``: ``00_input.relay``
    before the first pass, then ``NN_<Pass>.relay`` after each pass."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self.count = 0

    def _write(self, label: str, mod: IRModule) -> None:
        from ..ir.printer import print_module
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / f"{self.count:02d}_{label}.relay"
        path.write_text(print_module(mod), encoding="utf-8")
        self.count += 1

    def before(self, p: Pass, mod: IRModule) -> None:
        if self.count == 0:
            self._write("input", mod)

    def after(self, p: Pass, mod: IRModule) -> None:
        self._write(p.name, mod)


# --- the context -------------------------------------------------------------

@dataclass(frozen=True)
class PassContext:
    """Which passes run and how.  Use as ``with PassContext(...):``."""

    opt_level: int = MAX_OPT_LEVEL
    required: frozenset[str] = frozenset()
    disabled: frozenset[str] = frozenset()
    options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    instruments: tuple[PassInstrument, ...] = ()
    verify: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.opt_level, int) or not 0 <= self.opt_level <= MAX_OPT_LEVEL:
            raise DiagnosticError(f"opt_level must be 0..{MAX_OPT_LEVEL}, not {self.opt_level!r}")
        object.__setattr__(self, "required", frozenset(self.required))
        object.__setattr__(self, "disabled", frozenset(self.disabled))
        object.__setattr__(self, "instruments", tuple(self.instruments))
        for name in sorted(self.required | self.disabled | set(self.options)):
            get_pass(name)
        both = self.required & self.disabled
        if both:
            raise DiagnosticError(f"pass {sorted(both)[0]} is both required and disabled")

    def replace(self, **changes: Any) -> "PassContext":
        return dataclasses.replace(self, **changes)

    def enabled(self, p: Pass) -> bool:
        if p.name in self.required:
            return True
        if p.name in self.disabled:
            return False
        return self.opt_level >= p.opt_level

    def options_for(self, p: Pass) -> Any:
        return p.make_options(self.options.get(p.name, {}))

    def __enter__(self) -> "PassContext":
        _STACK.set(_STACK.get() + (self,))
        for inst in self.instruments:
            inst.enter(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        for inst in self.instruments:
            inst.exit(self)
        stack = _STACK.get()
        assert stack and stack[-1] is self, "PassContext exited out of order"
        _STACK.set(stack[:-1])


def _default() -> PassContext:
    return PassContext(verify=os.environ.get("AOT_VERIFY_PASSES", "") not in ("", "0"))


_STACK: contextvars.ContextVar[tuple[PassContext, ...]] = contextvars.ContextVar(
    "aot_pass_contexts", default=())


def current() -> PassContext:
    """The innermost active context (a default one when none is active:
    opt level 3, verification from ``AOT_VERIFY_PASSES``)."""
    stack = _STACK.get()
    return stack[-1] if stack else _default()


# --- running -----------------------------------------------------------------

def run_pass(p: Pass | str, mod: IRModule, ctx: PassContext | None = None,
             *, force: bool = True) -> IRModule:
    """Run one pass under ``ctx`` (default: :func:`current`) with its
    instruments and verification.  ``force`` runs it even where the
    context would not enable it (an explicit call means "run this")."""
    p = get_pass(p) if isinstance(p, str) else p
    ctx = ctx or current()
    if not force and not ctx.enabled(p):
        return mod
    opts = ctx.options_for(p)
    for inst in ctx.instruments:
        inst.before(p, mod)
    # the pass sees ``ctx`` as the current context (a pass may read its level)
    token = _STACK.set(_STACK.get() + (ctx,))
    try:
        out = p.fn(mod) if p.options is None else p.fn(mod, opts)
    finally:
        _STACK.reset(token)
    assert isinstance(out, IRModule), f"pass {p.name} returned {type(out).__name__}"
    for inst in ctx.instruments:
        inst.after(p, out)
    if ctx.verify:
        verify_module(out, p.name)
    return out


@dataclass(frozen=True)
class Sequential:
    """An ordered pipeline of pass names; each runs when the context
    enables it."""

    names: tuple[str, ...]

    def __init__(self, names: Iterable[str]) -> None:
        object.__setattr__(self, "names", tuple(names))

    def passes(self, ctx: PassContext | None = None) -> list[Pass]:
        """The passes that would run under ``ctx``, in order."""
        ctx = ctx or current()
        return [p for p in map(get_pass, self.names) if ctx.enabled(p)]

    def __call__(self, mod: IRModule, ctx: PassContext | None = None) -> IRModule:
        ctx = ctx or current()
        for p in self.passes(ctx):
            mod = run_pass(p, mod, ctx)
        return mod


def verify_module(mod: IRModule, after: str = "") -> None:
    """Raise :class:`PassVerificationError` unless ``mod`` is well formed
    and well typed."""
    from ..ir.well_formed import ill_formed
    from ..ir.type_infer import infer_types

    where = f" after {after}" if after else ""
    problems = ill_formed(mod)
    if problems:
        raise PassVerificationError(f"module ill-formed{where}: {problems[0]}")
    try:
        infer_types(mod)
    except DiagnosticError as exc:
        raise PassVerificationError(f"module ill-typed{where}: {exc}") from None
