"""The ``aot`` command line.

    aot check FILE                 parse and type-check; print the typed signatures
    aot run FILE [--input NAME=VALUE ...] [--entry main] [--backend interp|c]
                 [--quantized integer|float]
                                   print the result of @main
    aot compile FILE -o DIR [--name NAME] [--opt-level N] [--arena caller|static]
                [--pool-bytes N] [--max-depth N] [--stack-bytes N] [--quantized integer|float]
                [--ram-budget BYTES] [--memory-report]
                [--disable-pass NAME ...] [--enable-pass NAME ...]
                [--dump-ir DIR] [--pass-timing]
                     [--param NAME=FILE.npy ...] [--no-build]
                     [--grad [--grad-mode auto|first_order|higher_order]]
                                   write the C artifact and build lib<NAME>.a
                                   (--grad: of @main's gradient, aot.gradient)
    check, run and compile also take --quantize int8 --calibration FILE.npz
    [--quantize-config KEY=VALUE ...]: the float program is quantized first
    (aot.quantize; FILE.npz holds one array per parameter of @main, named as
    the parameter, with a leading sample axis)
    aot ops                        list the operator catalogue
    aot passes [--opt-level N]     list the passes, their levels and the default pipelines
    aot cache info|clear           the C build cache: where, how big, the limit; empty it
    aot stack DIR FILE.su ...      worst-case stack of the entry from -fstack-usage files
                                   (the artifact's tools/aot_stack.py; make <name>-stack)
    aot --version

FILE is Relay text (``.relay``), an ONNX model (``.onnx``, imported by
:func:`aot.from_onnx`) or a TFLite model (``.tflite``, imported by
:func:`aot.from_tflite`).  For ONNX models, check/run/compile take
``--input-shape NAME=1,3,96,96`` (repeatable) to fix the free (symbolic or
unknown) dimensions of graph input NAME; its parameter in @main is NAME
sanitized to an identifier (``input.1`` -> ``%input_1``).

VALUE is a ``.npy`` file or a literal (``3``, ``1.5``, ``[[1, 2], [3, 4]]``)
converted to the parameter's dtype.  User errors print
``file:line:col: error: ...`` and exit with status 1, as does a missing
optional package (the ONNX or TFLite importer's: the message says which
``pip install 'aot[...]'`` brings it); a missing file or a bad command line
exits with status 2.  No Python traceback reaches the user for bad input.
``python -m aot`` is the same command.
"""

from __future__ import annotations

import argparse
import ast
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Sequence

import numpy as np

from .diagnostics import AotWarning, DiagnosticError, Span
from .frontend.errors import file_error
from .emit.build.targets import TARGETS
from .progress import Progress, current_progress, process_start, render_timing, stage
from .version import __version__

#: What ``aot --help`` says the command is (plain text: argparse prints it as is).
DESCRIPTION = ("Compile a Relay-style program, an ONNX model or a TFLite model to "
               "malloc-free C99 for microcontrollers, or check and run it.")
EPILOG = ("Exit status: 0 on success, 1 for an error in the program or model, a failed "
          "build or a missing optional package, 2 for a bad command line or a missing "
          "file.  'aot COMMAND --help' describes each command.")


class UsageError(Exception):
    """A bad command line or a missing input file (exit status 2)."""


def _read_source(path: str) -> str:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise DiagnosticError(f"not UTF-8 text (byte 0x{data[exc.start]:02x}); Relay text "
                              "must be UTF-8", Span(path, line, col, line, col + 1)) from None


def _load_module(path: str, input_shapes: Sequence[str] = ()):  # -> IRModule
    shapes = _parse_input_shapes(input_shapes)
    with stage("import"):
        return _import(path, shapes)


def _import(path: str, shapes: dict[str, tuple[int, ...]]):  # -> IRModule
    from . import infer_types, parse
    if path.endswith(".onnx"):
        return _load_onnx(path, shapes)
    if shapes:
        raise UsageError("--input-shape applies to ONNX models only")
    if path.endswith(".tflite"):
        return _load_tflite(path)
    mod = parse(_read_source(path), source_name=path)
    return infer_types(mod)


def _load_onnx(path: str, shapes: dict[str, tuple[int, ...]]):  # -> IRModule
    _require_file(path)
    try:
        from .frontend.onnx import from_onnx
    except ImportError as exc:
        raise _missing_package(path, "ONNX", "onnx", exc) from None
    return from_onnx(path, input_shapes=shapes, source_name=path)


def _load_tflite(path: str):  # -> IRModule
    _require_file(path)
    try:
        from .frontend.tflite import from_tflite
    except ImportError as exc:
        raise _missing_package(path, "TFLite", "tflite", exc,
                               modules=("tflite", "flatbuffers")) from None
    return from_tflite(path, source_name=path)


def _require_file(path: str) -> None:
    if not Path(path).is_file():
        raise UsageError(f"{path}: cannot read: No such file")


class MissingPackage(Exception):
    """An optional package the command needs is not installed (exit status 1)."""


def _missing_package(path: str, kind: str, extra: str, exc: ImportError,
                     modules: Sequence[str] | None = None) -> MissingPackage:
    """The diagnostic for an importer whose package is missing; an
    ImportError of anything else is a bug and propagates."""
    missing = (exc.name or "").split(".")[0]
    if missing not in (modules or (extra,)):
        raise exc
    return MissingPackage(f"{path}: importing {kind} models needs the `{missing}` package, "
                          f"which is not installed; install it with: pip install 'aot[{extra}]'")


def _parse_input_shapes(specs: Sequence[str]) -> dict[str, tuple[int, ...]]:
    """``NAME=1,3,96,96`` (an empty list ``NAME=`` is a scalar)."""
    shapes: dict[str, tuple[int, ...]] = {}
    for spec in specs:
        name, sep, dims = spec.rpartition("=")
        try:
            shape = tuple(int(d) for d in dims.split(",")) if dims.strip() else ()
        except ValueError:
            shape = None
        if not sep or not name or shape is None or any(d < 0 for d in shape):
            raise UsageError(f"--input-shape expects NAME=D0,D1,... with non-negative "
                             f"integers, got {spec!r}")
        if name in shapes:
            raise UsageError(f"--input-shape given twice for {name!r}")
        shapes[name] = shape
    return shapes


def _parse_inputs(specs: Sequence[str], mod, entry: str) -> list:
    from .ir.types import TensorType
    if entry not in mod:
        raise UsageError(f"the program has no @{entry}")
    func = mod[entry]
    given: dict[str, str] = {}
    for spec in specs:
        name, sep, value = spec.partition("=")
        if not sep:
            raise UsageError(f"--input expects NAME=VALUE, got {spec!r}")
        given[name.lstrip("%")] = value
    names = [p.name_hint for p in func.params]
    unknown = sorted(set(given) - set(names))
    if unknown:
        raise UsageError(f"@{entry} has no parameter named {', '.join(unknown)} "
                         f"(parameters: {', '.join(names) or 'none'})")
    missing = [n for n in names if n not in given]
    if missing:
        raise UsageError(f"@{entry} needs --input for: {', '.join(missing)}")
    args = []
    for p in func.params:
        text = given[p.name_hint]
        t = p.checked_type
        dtype = t.dtype.np if isinstance(t, TensorType) else None
        if text.endswith(".npy"):
            try:
                value = np.load(text, allow_pickle=False)
            except (OSError, ValueError) as exc:
                raise UsageError(f"{text}: cannot load: {exc}") from None
        else:
            try:
                value = np.asarray(ast.literal_eval(text), dtype=dtype)
            except (ValueError, SyntaxError, TypeError):
                raise UsageError(f"--input {p.name_hint}: cannot read {text!r} as a "
                                 "number or nested list") from None
        args.append(value)
    return args


def format_value(value: object) -> str:
    if isinstance(value, np.ndarray):
        with np.printoptions(threshold=sys.maxsize, floatmode="unique"):
            return np.array2string(value, separator=", ") if value.ndim else repr(value.item())
    if isinstance(value, tuple):
        inner = ", ".join(format_value(v) for v in value)
        return f"({inner}{',' if len(value) == 1 else ''})"
    return str(value)


def _quantize_config(specs: Sequence[str]) -> dict[str, object]:
    """``--quantize-config KEY=VALUE`` pairs: VALUE a Python literal
    (``[0, 2]``, ``true``, ``0.999``) or a bare word (``percentile``)."""
    config: dict[str, object] = {}
    for spec in specs:
        key, sep, text = spec.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--quantize-config expects KEY=VALUE, got {spec!r}")
        word = {"true": "True", "false": "False"}.get(text.strip().lower(), text.strip())
        try:
            value = ast.literal_eval(word)
        except (ValueError, SyntaxError):
            value = text.strip()
        config[key.strip()] = value
    return config


def _maybe_quantize(args: argparse.Namespace, mod):  # -> IRModule
    """``mod`` quantized when ``--quantize`` is given (README, "Quantizing
    a float model")."""
    if args.quantize is None:
        if args.calibration or args.quantize_config:
            raise UsageError("--calibration and --quantize-config need --quantize int8")
        return mod
    from .passes.quantize import load_calibration, make_config, quantize
    config = make_config(_quantize_config(args.quantize_config))
    if args.calibration is None:
        if config.calibrate_mode != "global_scale":
            raise UsageError(f"--quantize {args.quantize} needs --calibration FILE.npz (or "
                             "--quantize-config calibrate_mode=global_scale)")
        samples: list = []
    else:
        _require_file(args.calibration)
        from .ir.type_infer import infer_types
        samples = load_calibration(args.calibration, infer_types(mod))
    with stage("quantizing"):
        return quantize(mod, samples, config)


def cmd_check(args: argparse.Namespace) -> int:
    from .ir.prelude import PRELUDE_PATH
    mod = _maybe_quantize(args, _load_module(args.file, args.input_shape))
    for gv, func in mod.functions.items():
        from_prelude = func.span is not None and func.span.source == str(PRELUDE_PATH)
        if args.all or not from_prelude:
            print(f"@{gv.name}: {func.checked_type}")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from .interpreter import run
    mod = _maybe_quantize(args, _load_module(args.file, args.input_shape))
    inputs = _parse_inputs(args.input, mod, args.entry)
    if args.backend == "c":
        result = _run_c(mod, inputs, args.entry, args.quantized)
    else:
        result = run(mod, *inputs, entry=args.entry)
    print(format_value(result))
    return 0


def _run_c(mod, inputs: list, entry: str, quantized: str) -> object:
    """Compile to a temporary artifact, load it through cffi and call it.
    Builds are cached by content, so a second run compiles nothing."""
    import tempfile
    from . import compile as compile_model, load
    with tempfile.TemporaryDirectory(prefix="aot-run-") as tmp:
        artifact = compile_model(mod, tmp, name="model", entry=entry, quantized=quantized)
        return load(artifact)(*inputs)


def _parse_params(specs: Sequence[str]) -> dict[str, np.ndarray]:
    params: dict[str, np.ndarray] = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep or not path.endswith(".npy"):
            raise UsageError(f"--param expects NAME=FILE.npy, got {spec!r}")
        try:
            params[name.lstrip("%")] = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise UsageError(f"{path}: cannot load: {exc}") from None
    return params


def _pass_names(specs: Sequence[str]) -> list[str]:
    return [n.strip() for spec in specs for n in spec.split(",") if n.strip()]


def _pass_context(args: argparse.Namespace):
    from .passes.manager import DumpIR, PassContext, PassTiming
    instruments = []
    if args.dump_ir:
        instruments.append(DumpIR(args.dump_ir))
    timing = PassTiming() if args.pass_timing else None
    if timing:
        instruments.append(timing)
    from .passes.pipelines import in_any_pipeline
    required = _pass_names(args.enable_pass)
    ctx = PassContext(opt_level=args.opt_level, disabled=_pass_names(args.disable_pass),
                      required=required, instruments=instruments)
    for name in required:
        if not in_any_pipeline(name):
            raise UsageError(f"--enable-pass {name}: the pass is in no pipeline "
                             "('aot passes' lists them); it is a utility for aot.passes")
    return ctx, timing


def _check_param_dtypes(mod, params: dict[str, np.ndarray], entry: str = "main") -> None:
    """A ``--param`` file holds exactly the parameter's dtype: the command
    line converts nothing (aot.compile's ``params=`` converts exactly
    representable arrays; a file is the user's to write in the right type)."""
    from .ir.types import TensorType
    if entry not in mod:
        return
    for p in mod[entry].params:
        t = p.type_annotation
        if p.name_hint in params and isinstance(t, TensorType):
            got = params[p.name_hint].dtype
            if got != t.dtype.np:
                raise UsageError(f"--param {p.name_hint}: the file holds {got}, the parameter "
                                 f"is {t.dtype}; save it as {t.dtype} (a.astype(...))")


def cmd_compile(args: argparse.Namespace) -> int:
    from . import compile as compile_model
    from .emit.build.library import check_model_name
    check_model_name(args.name)              # before any long import or pass
    started = args.started if args.started is not None else time.perf_counter()
    with stage("start-up", since=started):
        _load_compiler()
    mod = _load_module(args.file, args.input_shape)
    if "main" not in mod:
        raise file_error(args.file, "the module has no `@main` function to compile")
    mod = _maybe_quantize(args, mod)
    if args.grad:
        from .passes.gradient import gradient
        mod = gradient(mod, "main", args.grad_mode)
    params = _parse_params(args.param)
    _check_param_dtypes(mod, params)
    ctx, timing = _pass_context(args)
    with ctx:
        try:
            artifact = compile_model(mod, args.output, name=args.name, params=params,
                                     arena=args.arena, build=not args.no_build,
                                     pool_bytes=args.pool_bytes, max_depth=args.max_depth,
                                     stack_bytes=args.stack_bytes,
                                     tuning=args.tuning, quantized=args.quantized,
                                     target=args.target, ram_budget=args.ram_budget,
                                     memory_report=args.memory_report)
        except OSError as exc:
            culprit = f" ({exc.filename})" if exc.filename and \
                Path(exc.filename).resolve() != Path(args.output).resolve() else ""
            raise file_error(args.output, "cannot write the artifact: "
                             f"{exc.strerror or exc}{culprit}") from None
    progress = current_progress()
    if timing and progress is not None:
        passes = {name: (timing.runs[name], seconds) for name, seconds in timing.seconds.items()}
        progress.clear_line()
        print(render_timing(progress, time.perf_counter() - started, passes), file=sys.stderr)
    if args.quiet:
        return 0
    meta = artifact.metadata
    if args.memory_report:
        print((artifact.root / "memory.txt").read_text(), end="")
        print(f"{artifact.root / 'memory.svg'}: the arena's tensors against time")
    stack = (meta.get("stack") or {}).get("library")
    stack_text = (f", stack {stack['bytes']} bytes ({stack['compiler']})" if stack else "")
    if meta.get("backend") == "program":
        print(f"{artifact.root}: program, {len(meta['kernels'])} kernels, object pool "
              f"{meta['pool_bytes']} bytes, at most {meta['program']['max_depth']} nested calls, "
              f"constants {meta['constant_bytes']} bytes{stack_text}")
    else:
        print(f"{artifact.root}: {len(meta['kernels'])} kernels, arena {meta['arena_bytes']} "
              f"bytes (lower bound {meta['arena_lower_bound_bytes']}, of whole tensors "
              f"{meta['arena_whole_tensor_bound_bytes']}), constants "
              f"{meta['constant_bytes']} bytes{stack_text}")
    target = TARGETS[args.target]
    if not target.is_host and not args.no_build:
        print(f"{artifact.layout.library}: built for {target.name} with {target.prefix}gcc; "
              f"link the firmware with {' '.join(target.cpu_flags)}")
    return 0


def cmd_profile(args: argparse.Namespace) -> int:
    from .emit.build.library import check_model_name
    from .profiler import profile_json, profile_module, render_table
    check_model_name(args.name)
    started = args.started if args.started is not None else time.perf_counter()
    with stage("start-up", since=started):
        _load_compiler()
    mod = _load_module(args.file, args.input_shape)
    profile = profile_module(mod, target=args.target, name=args.name,
                             source=Path(args.file).name, work_dir=args.keep, runs=args.runs,
                             opt_level=args.opt_level, tuning=args.tuning,
                             quantized=args.quantized)
    progress = current_progress()
    if progress is not None:
        progress.clear_line()
    if args.json:
        try:
            Path(args.json).write_text(profile_json(profile))
        except OSError as exc:
            raise UsageError(f"{args.json}: cannot write: {exc.strerror or exc}") from None
    print(render_table(profile))
    return 0


def _add_profile_parser(sub) -> None:
    boards = [t.name for t in TARGETS.values() if t.qemu_board]
    p = sub.add_parser(
        "profile", help="time each kernel call of one inference, with the model's node names",
        description="Compile the model and profile one inference: instructions per kernel "
                    "call on a Cortex-M core under QEMU (counted by the project's plugin; "
                    f"cores: {', '.join(boards)}), or median wall time per call on the host; "
                    "each call with the model nodes fused into it and its share of the total. "
                    "Needs arm-none-eabi-gcc and qemu-system-arm for the cores (make deps).")
    _add_file(p)
    p.add_argument("--target", choices=["host", *boards], default="cortex-m4",
                   help="where to run it (default cortex-m4: QEMU's mps2-an386)")
    p.add_argument("--name", default="model", help="model name: prefixes every C symbol")
    p.add_argument("--json", metavar="FILE", help="also write the profile as JSON")
    p.add_argument("--runs", type=int, default=20, metavar="N",
                   help="host: timed inferences after a warm-up one; each call's median is "
                        "shown (default 20)")
    p.add_argument("--keep", metavar="DIR",
                   help="build in DIR and keep it (artifact, firmware, plugin output)")
    p.add_argument("--opt-level", type=int, default=3, choices=range(0, 4),
                   help="which passes run (default 3)")
    p.add_argument("--tuning", choices=["scalar", "simd", "scalar-nofma"], default=None,
                   help="loop nests of float convolutions and dense layers (default: the "
                        "target's)")
    _add_quantized(p)
    _add_input_shape(p)
    _add_progress(p)
    p.set_defaults(func=cmd_profile)


def _load_compiler() -> None:
    """Import the compiler's modules (the passes, the lowerings, the
    templates' context): most of a second, shown as its own stage rather
    than hidden in the first stage that needs one."""
    import importlib
    for module in ("aot.passes.pipelines", "aot.compiler", "aot.emit.lower.dataflow",
                   "aot.emit.lower.program_entry", "aot.emit.build.artifact"):
        importlib.import_module(module)
    from .emit.lower.registry import LOWERINGS
    from .ir.registry import OPS
    from .passes.manager import PASSES
    for table in (OPS, PASSES, LOWERINGS):      # each imports its modules on first use
        len(table)


def cmd_passes(args: argparse.Namespace) -> int:
    from .passes import pipelines
    from .passes.manager import PassContext, all_passes
    for p in all_passes():
        print(f"{p.name:28} {p.opt_level}  {p.doc}")
    ctx = PassContext(opt_level=args.opt_level)
    for label, seq in pipelines.ALL.items():
        print(f"\n{label} at opt level {args.opt_level}: "
              + " -> ".join(p.name for p in seq.passes(ctx)))
    return 0


def cmd_ops(args: argparse.Namespace) -> int:
    from .ir.registry import all_ops
    for op in all_ops():
        print(f"{op.name:28} {op.arity}  {op.pattern.name.lower():22} {op.doc}")
    return 0


def _add_input_shape(p: argparse.ArgumentParser) -> None:
    p.add_argument("--input-shape", action="append", default=[], metavar="NAME=D0,D1,...",
                   help="fix the shape of an ONNX graph input with free (symbolic or unknown) "
                        "dimensions, e.g. input=1,3,96,96 (repeatable)")


def _add_quantized(p: argparse.ArgumentParser, prefix: str = "") -> None:
    from .compiler import QUANTIZED_MODES
    p.add_argument("--quantized", choices=QUANTIZED_MODES, default="integer",
                   help=f"{prefix}how the C of a model that carries quantization (ONNX QDQ or "
                        "QLinear*, TFLite int8, qnn programs) computes: 'integer' (default, at "
                        "every opt level: int8 weight tables, int32 accumulators, requantization "
                        "fused into the kernels; README, 'Quantized models') or 'float' "
                        "(dequantize -> float32 operators -> quantize as the graph is written, "
                        "float32 weights; the same as --disable-pass FakeQuantizationToInteger)")


def _add_quantize(p: argparse.ArgumentParser) -> None:
    p.add_argument("--quantize", choices=["int8"], default=None,
                   help="quantize the float program first (Relay's annotate -> calibrate -> "
                        "realize; README, 'Quantizing a float model')")
    p.add_argument("--calibration", metavar="FILE.npz", default=None,
                   help="calibration inputs for --quantize: one array per parameter of @main, "
                        "named as the parameter, with a leading sample axis")
    p.add_argument("--quantize-config", action="append", default=[], metavar="KEY=VALUE",
                   help="a qconfig knob for --quantize, e.g. calibrate_mode=percentile, "
                        "weight_scale=power2, skip_conv_layers=[0] (repeatable)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="aot", description=DESCRIPTION, epilog=EPILOG)
    parser.add_argument("--version", action="version", version=f"aot {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    p = sub.add_parser("check", help="parse and type-check a program",
                       description="Parse and type-check a program; print the typed "
                                   "signature of each function.")
    _add_file(p)
    p.add_argument("--all", action="store_true", help="also list prelude functions")
    _add_input_shape(p)
    _add_quantize(p)
    _add_progress(p)
    p.set_defaults(func=cmd_check)
    p = sub.add_parser("run", help="run @main and print the result",
                       description="Run a function of the program (@main by default) on the "
                                   "given inputs and print the result.")
    _add_file(p)
    p.add_argument("--input", action="append", default=[], metavar="NAME=VALUE",
                   help="the value of parameter NAME of the entry function: a .npy file or "
                        "a literal such as 3, 1.5 or [[1, 2], [3, 4]], converted to the "
                        "parameter's dtype (repeatable: one per parameter)")
    p.add_argument("--entry", default="main", metavar="FUNCTION",
                   help="the global function to run (default: main)")
    p.add_argument("--backend", choices=["interp", "c"], default="interp",
                   help="the reference interpreter, or the compiled C through cffi")
    _add_quantized(p, "with --backend c: ")
    _add_input_shape(p)
    _add_quantize(p)
    _add_progress(p)
    p.set_defaults(func=cmd_run)
    p = sub.add_parser("compile", help="compile to a C artifact and build the library",
                       description="Compile to a C artifact (header, sources, make fragment, "
                                   "metadata.json) and build lib<NAME>.a.")
    _add_file(p)
    p.add_argument("-o", "--output", required=True, metavar="DIR",
                   help="the artifact directory (written all or nothing)")
    p.add_argument("--name", default="model", help="model name: prefixes every C symbol")
    p.add_argument("--opt-level", type=int, default=3, choices=range(0, 4),
                   help="which passes run (default 3; 0 puts every operator in a kernel "
                        "of its own)")
    p.add_argument("--arena", choices=["caller", "static"], default="caller",
                   help="the caller passes the arena, or the library defines it")
    p.add_argument("--param", action="append", default=[], metavar="NAME=FILE.npy",
                   help="bind a parameter of main to a constant")
    p.add_argument("--pool-bytes", type=int, default=None, metavar="N",
                   help="object pool of programs with ADTs, closures, refs or control flow "
                        "(default: sized by the compiler -- exactly without recursion, from "
                        "--max-depth with it; needed for value inputs and pools that grow "
                        "with the input)")
    p.add_argument("--max-depth", type=int, default=None, metavar="N",
                   help="bound on nested non-tail calls of such programs (default 10000)")
    p.add_argument("--stack-bytes", type=int, default=None, metavar="N",
                   help="stack budget of such programs' nested calls below the entry, "
                        "past which a call returns ERR_DEPTH (default 65536)")
    p.add_argument("--ram-budget", type=_byte_count, default=None, metavar="BYTES",
                   help="fail (exit status 1, nothing written) when the model needs more RAM: "
                        "arena + object pool + the built library's worst-case stack "
                        "(K and M suffixes: 64K)")
    p.add_argument("--memory-report", action="store_true",
                   help="also write DIR/memory.svg (each arena tensor a box: offset against "
                        "kernel call, the lower bound, the peak call) and DIR/memory.txt, "
                        "and print the table")
    p.add_argument("--tuning", choices=["scalar", "simd", "scalar-nofma"], default=None,
                   help="convolution and dense loop nests for a scalar FPU (microcontrollers: "
                        "the default of --no-build and of the Cortex-M4/M7/M33/M55), for "
                        "cores without an FPU (scalar-nofma, the default of cortex-m0plus and "
                        "cortex-m3) or for SIMD hosts (simd: the default when the library is "
                        "built for the host, at -O3 for the host CPU)")
    p.add_argument("--target", choices=list(TARGETS), default="host",
                   help="what lib<NAME>.a is built for: this machine (default, $CC) or a "
                        "Cortex-M core, with arm-none-eabi-gcc and the core's -mcpu, "
                        "-mfloat-abi and -mfpu (link the firmware with the same flags; the "
                        "summary line prints them)")
    p.add_argument("--no-build", action="store_true", help="write the sources only")
    p.add_argument("--grad", action="store_true",
                   help="compile the gradient of @main instead (aot.gradient): "
                        "@main returns (result, (d result / d p for each parameter p))")
    p.add_argument("--grad-mode", choices=["auto", "first_order", "higher_order"],
                   default="auto",
                   help="with --grad: aot.gradient's mode (default auto: first order for a "
                        "dataflow @main, higher order for closures, ADTs, match, if, "
                        "recursion and references)")
    p.add_argument("--disable-pass", action="append", default=[], metavar="NAME[,NAME]",
                   help="do not run this pass (repeatable; 'aot passes' lists them)")
    p.add_argument("--enable-pass", action="append", default=[], metavar="NAME[,NAME]",
                   help="run this pass of the pipelines even above its opt level")
    p.add_argument("--dump-ir", metavar="DIR",
                   help="write the module as Relay text before the first and after every pass")
    p.add_argument("--pass-timing", action="store_true",
                   help="print where the compile's time went (to stderr): every stage (import, "
                        "passes, lowering, planning, rendering, C build) and every pass; the "
                        "rows add up to the wall time")
    _add_quantized(p)
    _add_input_shape(p)
    _add_quantize(p)
    _add_progress(p, "; also the summary line")
    p.set_defaults(func=cmd_compile)
    p = sub.add_parser("ops", help="list the operator catalogue")
    p.set_defaults(func=cmd_ops)
    p = sub.add_parser("passes", help="list the passes and the default pipelines")
    p.add_argument("--opt-level", type=int, default=3, choices=range(0, 4),
                   help="show the pipelines at this opt level (default 3)")
    p.set_defaults(func=cmd_passes)
    _add_profile_parser(sub)
    _add_cache_parser(sub)
    p = sub.add_parser(
        "stack", help="worst-case stack of the entry from -fstack-usage files",
        description="The worst-case stack of a compiled model's entry function: the .su files "
                    "the compiler wrote with -fstack-usage for the model's sources, combined "
                    "with the call graph in the artifact's metadata.json (recursion bounded "
                    "by max_depth and the stack budget).  The artifact's tools/aot_stack.py "
                    "is the same tool without aot; its make fragment's <name>-stack target "
                    "runs it with the firmware's compiler.")
    p.add_argument("artifact", metavar="DIR", help="the artifact (or its metadata.json)")
    p.add_argument("su", nargs="+", metavar="FILE.su", help="the .su files of its sources")
    p.add_argument("--stack-bytes", type=int, default=None, metavar="N",
                   help="the stack budget the contexts are initialised with (default: the "
                        "compiled one)")
    p.add_argument("--max-depth", type=int, default=None, metavar="N",
                   help="the bound on nested calls (default: the compiled one)")
    p.add_argument("--json", action="store_true", help="print the figure as JSON")
    p.set_defaults(func=cmd_stack)
    return parser


def cmd_stack(args: argparse.Namespace) -> int:
    from .emit.build.stack_usage import run
    argv = [args.artifact, *args.su, "--stack-bytes", str(args.stack_bytes)] \
        if args.stack_bytes is not None else [args.artifact, *args.su]
    if args.max_depth is not None:
        argv += ["--max-depth", str(args.max_depth)]
    return run([*argv, *(["--json"] if args.json else [])], prog="aot stack")


def _byte_count(text: str) -> int:
    """``65536``, ``64K``, ``1M`` -> bytes (argparse type)."""
    units = {"K": 1 << 10, "M": 1 << 20}
    word = text.strip().upper().removesuffix("B")
    scale = units.get(word[-1:], 1)
    digits = word[:-1] if word[-1:] in units else word
    if not digits.isdigit():
        raise argparse.ArgumentTypeError(f"expected a number of bytes such as 65536 or 64K, "
                                         f"not {text!r}")
    return int(digits) * scale


def _add_progress(p: argparse.ArgumentParser, quiet_also: str = "") -> None:
    group = p.add_mutually_exclusive_group()
    group.add_argument("-q", "--quiet", action="store_true",
                       help=f"no progress{quiet_also}")
    group.add_argument("-v", "--verbose", action="store_true",
                       help="show the stages (import, passes, lowering, planning, rendering, "
                            "C build) with their time even when stderr is not a terminal "
                            "(a terminal shows them by default)")


def _add_file(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE",
                   help="the program: Relay text (.relay), an ONNX model (.onnx) or a TFLite "
                        "model (.tflite)")


def _add_cache_parser(sub) -> None:
    from .emit.build.cache import DEFAULT_LIMIT_BYTES, LIMIT_ENV
    p = sub.add_parser(
        "cache", help="show or empty the C build cache",
        description=f"The C build cache (compiled objects and loader extensions, keyed by "
                    f"content) lives in $AOT_CACHE_DIR, else $XDG_CACHE_HOME/aot, else "
                    f"~/.cache/aot.  It is bounded: past {DEFAULT_LIMIT_BYTES >> 20} MiB "
                    f"(${LIMIT_ENV}, e.g. 500M; 0 for no limit) the least recently used "
                    f"entries are deleted.")
    p.add_argument("action", choices=["info", "clear"],
                   help="info: where the cache is, its entries, size and limit; "
                        "clear: delete every entry")
    p.set_defaults(func=cmd_cache)


def cmd_cache(args: argparse.Namespace) -> int:
    from .emit.build import cache
    root = cache.cache_root()
    if args.action == "clear":
        count, size = cache.clear(root)
        print(f"{root}: deleted {count} entries, {_size(size)}")
        return 0
    found = cache.entries(root)
    limit = cache.limit_bytes()
    print(f"{root}: {len(found)} entries, {_size(sum(e.size for e in found))}; limit "
          f"{_size(limit) if limit else 'none'} (${cache.LIMIT_ENV})")
    return 0


def _size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"


def _show_warning(message, category, filename, lineno, file=None, line=None):  # noqa: ARG001
    """aot's own warnings as ``source: warning: message``; others as Python
    prints them."""
    progress = current_progress()
    if progress is not None:
        progress.clear_line()
    if issubclass(category, AotWarning):
        print(str(message), file=sys.stderr)
    else:
        _PYTHON_SHOW_WARNING(message, category, filename, lineno, file, line)


_PYTHON_SHOW_WARNING = warnings.showwarning


def main(argv: Sequence[str] | None = None) -> int:
    warnings.showwarning = _show_warning
    parser = build_parser()
    args = parser.parse_args(argv)
    # run as the program (not called with arguments): time from its start
    args.started = process_start() if argv is None else None
    progress = Progress.for_stream(sys.stderr, quiet=getattr(args, "quiet", True),
                                   verbose=getattr(args, "verbose", False))
    from .gc_tuning import compiling
    try:
        with progress, compiling():
            return int(args.func(args))
    except DiagnosticError as exc:
        print(exc.render(), file=sys.stderr)
        return 1
    except UsageError as exc:
        print(f"aot: error: {exc}", file=sys.stderr)
        return 2
    except MissingPackage as exc:
        print(f"aot: error: {exc}", file=sys.stderr)
        return 1
    except RecursionError:
        print("aot: error: the program is nested too deeply", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # the reader went away (`aot ops | head -1`): stop quietly, and keep
        # Python from reporting the failed flush of stdout at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
