"""``aot profile``: where a model's inference spends its time, per kernel
call, with the model's own node names.

Design note
-----------
The generated entry function calls its kernels in a fixed order and runs
the hook ``<NAME>_PROFILE_CALL(i)`` before call ``i`` and, with ``i = n``,
after the last (empty unless defined; see templates/model.c.j2).  The
profiler compiles the model (``--no-build``: the sources only, the arena
in the library) and builds a small program around it in which the hook
does the measuring; metadata.json's ``calls`` gives each call's kernel
and the model nodes fused into it, and ``kernels`` the operators.

* On a Cortex-M core (:mod:`aot.profiler.qemu`): a firmware for the MPS2
  board QEMU models for the core (M3, M4F, M7), the hook a call of an
  empty, never inlined marker function.  The project's TCG plugin
  (``data/qemu_profile.c``, built with the host compiler) counts executed
  instructions and writes the running count at each entry of the marker.
  Differences of consecutive counts, less the marker's own cost (two
  back-to-back marker calls, measured in the same run), are each call's
  instructions: exact and identical run to run.  Instructions are not
  cycles, but they are repeatable and what the project's other Cortex-M
  figures count.
* On the host (:mod:`aot.profiler.host`): the model built as the benchmark
  builds it (``-O3 -march=native``, the ``simd`` loop nests unless told
  otherwise), the hook reads ``clock_gettime(CLOCK_MONOTONIC)``; the
  program runs the inference ``runs`` times after one warm-up run and each
  call's figure is its median in microseconds.

Inputs are drawn from a seeded generator (uniform in [-1, 1) for floats,
the whole range for integers), so a profile is reproducible; the count of
a data-dependent kernel (a ReLU's branches, say) is that input's.  Only the
dataflow backend has a flat call list; a program with closures or control
flow gets a diagnostic.  A model with static loops (calls that run once
per iteration) gets its total on a Cortex-M core, no per-call figures.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..diagnostics import DiagnosticError
from ..ir.module import IRModule

__all__ = ["CallProfile", "Profile", "profile_module", "render_table", "profile_json"]


@dataclass(frozen=True, slots=True)
class CallProfile:
    index: int
    kernel: str
    ops: tuple[str, ...]
    nodes: tuple[str, ...]
    value: float                  # instructions, or microseconds on the host


@dataclass(frozen=True, slots=True)
class Profile:
    model: str
    target: str
    where: str                    # "QEMU mps2-an386", "host (gcc-12.2.0 -O2)"
    unit: str                     # "instructions" or "us"
    calls: tuple[CallProfile, ...]
    total: float                  # the whole entry function, hook costs removed
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def outside_calls(self) -> float:
        """The entry function's own work: argument checks, the calls' setup."""
        return max(self.total - sum(c.value for c in self.calls), 0.0)


def profile_module(mod: IRModule, *, target: str = "cortex-m4", name: str = "model",
                   source: str = "", work_dir: str | Path | None = None, runs: int = 20,
                   seed: int = 0, **compile_options: Any) -> Profile:
    """Compile ``mod`` and profile one inference on ``target`` (a Cortex-M
    core under QEMU, or ``"host"``).  ``compile_options`` go to the
    compiler (opt_level, tuning, quantized, params, entry)."""
    from ..compiler import compile_module
    from ..emit.build.targets import get_target

    chosen = get_target(target)
    if not chosen.is_host:
        from .qemu import board_of
        board_of(chosen)                       # an unsupported core: said first
    with tempfile.TemporaryDirectory(prefix="aot-profile-") as scratch:
        root = Path(work_dir) if work_dir is not None else Path(scratch)
        tuning = compile_options.pop("tuning", None)
        if tuning is None:
            tuning = chosen.tuning           # the host's nests for the host (simd)
        art = compile_module(mod, root / "artifact", name=name, arena="static", build=False,
                             tuning=tuning, **compile_options)
        meta = dict(art.metadata)
        if meta.get("backend") == "program" or "calls" not in meta:
            raise DiagnosticError("aot profile measures static tensor programs (the dataflow "
                                  "backend's kernel calls); this program has closures, ADTs, "
                                  "references or control flow")
        inputs = draw_inputs(meta, seed)
        if chosen.is_host and (meta.get("loops") or meta.get("branches")):
            raise DiagnosticError("aot profile on the host measures kernel calls that run "
                                  "once; this model has loops or branches (profile it on a "
                                  "Cortex-M core for its total)")
        if chosen.is_host:
            from .host import profile_on_host
            values, total, where = profile_on_host(art.root, meta, inputs, root, runs)
            unit = "us"
        else:
            from .qemu import profile_on_qemu
            values, total, where = profile_on_qemu(art.root, meta, inputs, root, chosen)
            unit = "instructions"
    ops = {k["name"]: tuple(k["ops"]) for k in meta["kernels"]}
    calls = tuple(CallProfile(i, c["kernel"], ops.get(c["kernel"], ()), tuple(c["nodes"]), v)
                  for i, (c, v) in enumerate(zip(meta["calls"], values)))
    return Profile(source or name, chosen.name, where, unit, calls, total)


def draw_inputs(meta: dict, seed: int) -> list[np.ndarray]:
    """One seeded array per model input, of its dtype and shape."""
    rng = np.random.default_rng(seed)
    arrays = []
    for spec in meta["inputs"]:
        dtype = np.dtype(spec["dtype"]) if spec["dtype"] != "bool" else np.dtype(np.bool_)
        shape = tuple(spec["shape"])
        if dtype.kind == "f":
            arrays.append(rng.uniform(-1.0, 1.0, shape).astype(dtype))
        elif dtype.kind == "b":
            arrays.append(rng.integers(0, 2, shape).astype(dtype))
        else:
            info = np.iinfo(dtype)
            arrays.append(rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype))
    return arrays


def c_bytes(name: str, data: np.ndarray, const: bool) -> str:
    """A C definition of an aligned byte array named ``name`` holding ``data``."""
    raw = np.ascontiguousarray(data).tobytes()
    size = max(len(raw), 1)
    head = f"static {'const ' if const else ''}union {{ unsigned char bytes[{size}]; " \
           f"double align_d; long long align_ll; void *align_p; }} {name}"
    if not const:
        return head + ";\n"
    rows = [", ".join(str(b) for b in raw[i:i + 24]) for i in range(0, len(raw), 24)] or ["0"]
    return head + " = { {\n    " + ",\n    ".join(rows) + "\n} };\n"


def driver_arrays(meta: dict, inputs: Sequence[np.ndarray]) -> tuple[str, str]:
    """The C definitions of the inputs and outputs, and the entry's arguments."""
    parts, args = [], []
    for k, data in enumerate(inputs):
        parts.append(c_bytes(f"aot_in{k}", data, const=True))
        args.append(f"(const void *)aot_in{k}.bytes")
    for k, spec in enumerate(meta["outputs"]):
        nbytes = int(np.prod(spec["shape"], dtype=np.int64)) * np.dtype(
            spec["dtype"] if spec["dtype"] != "bool" else np.bool_).itemsize
        parts.append(c_bytes(f"aot_out{k}", np.zeros(nbytes, np.uint8), const=False))
        args.append(f"(void *)aot_out{k}.bytes")
    return "".join(parts), ", ".join(args)


def render_table(profile: Profile) -> str:
    """The profile as a table, one row per kernel call."""
    integral = profile.unit == "instructions"

    def shown(v: float) -> str:
        return f"{int(round(v)):,}" if integral else f"{v:,.2f}"

    unit = "instructions" if integral else "µs (median)"
    rows = [(str(c.index), c.kernel, shown(c.value),
             f"{100.0 * c.value / profile.total:.1f} %" if profile.total else "-",
             ", ".join(c.nodes) or "(" + ", ".join(c.ops) + ")") for c in profile.calls]
    rows.append(("", "(entry)", shown(profile.outside_calls),
                 f"{100.0 * profile.outside_calls / profile.total:.1f} %"
                 if profile.total else "-", "argument checks, call setup"))
    rows.append(("", "total", shown(profile.total), "100.0 %", ""))
    head = ("#", "kernel", unit, "share", "model nodes")
    widths = [max(len(r[i]) for r in (head, *rows)) for i in range(4)]
    lines = [f"{profile.model} on {profile.target} ({profile.where}), "
             f"{len(profile.calls)} kernel calls"]
    for r in (head, *rows):
        lines.append(f"{r[0]:>{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]:>{widths[2]}}  "
                     f"{r[3]:>{widths[3]}}  {r[4]}".rstrip())
    return "\n".join(lines)


def profile_json(profile: Profile) -> str:
    data = {
        "model": profile.model, "target": profile.target, "where": profile.where,
        "unit": profile.unit, "total": profile.total, "outside_calls": profile.outside_calls,
        "calls": [{"index": c.index, "kernel": c.kernel, "ops": list(c.ops),
                   "nodes": list(c.nodes), "value": c.value,
                   "share": c.value / profile.total if profile.total else None}
                  for c in profile.calls],
    }
    return json.dumps(data, indent=2, sort_keys=True) + "\n"
