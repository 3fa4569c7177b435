"""The ``aot`` command line.

    aot check FILE                 parse and type-check; print the typed signatures
    aot run FILE [--input NAME=VALUE ...] [--entry main] [--backend interp|c]
                 [--quantized integer|float]
                                   print the result of @main
    aot compile FILE -o DIR [--name NAME] [--opt-level N] [--arena caller|static]
                [--pool-bytes N] [--max-depth N] [--quantized integer|float]
                [--disable-pass NAME ...] [--enable-pass NAME ...]
                [--dump-ir DIR] [--pass-timing]
                     [--param NAME=FILE.npy ...] [--no-build]
                                   write the C artifact and build lib<NAME>.a
    aot ops                        list the operator catalogue
    aot passes [--opt-level N]     list the passes, their levels and the default pipelines

FILE is Relay text (``.relay``), an ONNX model (``.onnx``, imported by
:func:`aot.from_onnx`) or a TFLite model (``.tflite``, imported by
:func:`aot.from_tflite`).  For ONNX models, check/run/compile take
``--input-shape NAME=1,3,96,96`` (repeatable) to fix the free (symbolic or
unknown) dimensions of graph input NAME; its parameter in @main is NAME
sanitized to an identifier (``input.1`` -> ``%input_1``).

VALUE is a ``.npy`` file or a literal (``3``, ``1.5``, ``[[1, 2], [3, 4]]``)
converted to the parameter's dtype.  User errors print
``file:line:col: error: ...`` and exit with status 1; a missing file or a
bad command line exits with status 2.  No Python traceback reaches the user
for bad input.
"""

from __future__ import annotations

import argparse
import ast
import os
import sys
import warnings
from pathlib import Path
from typing import Sequence

import numpy as np

from .diagnostics import AotWarning, DiagnosticError, Span
from .frontend.errors import file_error


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
    from . import infer_types, parse
    shapes = _parse_input_shapes(input_shapes)
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
        raise _missing_package(path, "TFLite", "tflite", exc) from None
    return from_tflite(path, source_name=path)


def _require_file(path: str) -> None:
    if not Path(path).is_file():
        raise UsageError(f"{path}: cannot read: No such file")


def _missing_package(path: str, kind: str, package: str, exc: ImportError) -> UsageError:
    return UsageError(f"{path}: importing {kind} models needs the {package} package ({exc})")


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


def cmd_check(args: argparse.Namespace) -> int:
    from .ir.prelude import PRELUDE_PATH
    mod = _load_module(args.file, args.input_shape)
    for gv, func in mod.functions.items():
        from_prelude = func.span is not None and func.span.source == str(PRELUDE_PATH)
        if args.all or not from_prelude:
            print(f"@{gv.name}: {func.checked_type}")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from .interpreter import run
    mod = _load_module(args.file, args.input_shape)
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
                             "(`aot passes` lists them); it is a utility for aot.passes")
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
    mod = _load_module(args.file, args.input_shape)
    if "main" not in mod:
        raise file_error(args.file, "the module has no `@main` function to compile")
    params = _parse_params(args.param)
    _check_param_dtypes(mod, params)
    ctx, timing = _pass_context(args)
    with ctx:
        try:
            artifact = compile_model(mod, args.output, name=args.name, params=params,
                                     arena=args.arena, build=not args.no_build,
                                     pool_bytes=args.pool_bytes, max_depth=args.max_depth,
                                     tuning=args.tuning, quantized=args.quantized)
        except OSError as exc:
            culprit = f" ({exc.filename})" if exc.filename and \
                Path(exc.filename).resolve() != Path(args.output).resolve() else ""
            raise file_error(args.output, "cannot write the artifact: "
                             f"{exc.strerror or exc}{culprit}") from None
    if timing:
        print(timing.render(), file=sys.stderr)
    meta = artifact.metadata
    if meta.get("backend") == "program":
        print(f"{artifact.root}: program, {len(meta['kernels'])} kernels, object pool "
              f"{meta['pool_bytes']} bytes, at most {meta['program']['max_depth']} nested calls, "
              f"constants {meta['constant_bytes']} bytes")
    else:
        print(f"{artifact.root}: {len(meta['kernels'])} kernels, arena {meta['arena_bytes']} "
              f"bytes (lower bound {meta['arena_lower_bound_bytes']}), constants "
              f"{meta['constant_bytes']} bytes")
    return 0


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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="aot", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("check", help="parse and type-check a program")
    p.add_argument("file")
    p.add_argument("--all", action="store_true", help="also list prelude functions")
    _add_input_shape(p)
    p.set_defaults(func=cmd_check)
    p = sub.add_parser("run", help="run @main and print the result")
    p.add_argument("file")
    p.add_argument("--input", action="append", default=[], metavar="NAME=VALUE")
    p.add_argument("--entry", default="main")
    p.add_argument("--backend", choices=["interp", "c"], default="interp",
                   help="the reference interpreter, or the compiled C through cffi")
    _add_quantized(p, "with --backend c: ")
    _add_input_shape(p)
    p.set_defaults(func=cmd_run)
    p = sub.add_parser("compile", help="compile to a C artifact and build the library")
    p.add_argument("file")
    p.add_argument("-o", "--output", required=True, metavar="DIR")
    p.add_argument("--name", default="model", help="model name: prefixes every C symbol")
    p.add_argument("--opt-level", type=int, default=3, choices=range(0, 4))
    p.add_argument("--arena", choices=["caller", "static"], default="caller",
                   help="the caller passes the arena, or the library defines it")
    p.add_argument("--param", action="append", default=[], metavar="NAME=FILE.npy",
                   help="bind a parameter of main to a constant")
    p.add_argument("--pool-bytes", type=int, default=None, metavar="N",
                   help="object pool of programs with ADTs, closures, refs or control flow "
                        "(default 262144)")
    p.add_argument("--max-depth", type=int, default=None, metavar="N",
                   help="bound on nested non-tail calls of such programs (default 10000)")
    p.add_argument("--tuning", choices=["scalar", "simd", "scalar-nofma"], default="scalar",
                   help="convolution and dense loop nests for a scalar FPU (microcontrollers) "
                        "or for SIMD hosts compiled at -O3")
    p.add_argument("--no-build", action="store_true", help="write the sources only")
    p.add_argument("--disable-pass", action="append", default=[], metavar="NAME[,NAME]",
                   help="do not run this pass (repeatable; `aot passes` lists them)")
    p.add_argument("--enable-pass", action="append", default=[], metavar="NAME[,NAME]",
                   help="run this pass of the pipelines even above its opt level")
    p.add_argument("--dump-ir", metavar="DIR",
                   help="write the module as Relay text before the first and after every pass")
    p.add_argument("--pass-timing", action="store_true",
                   help="print the time spent in each pass (to stderr)")
    _add_quantized(p)
    _add_input_shape(p)
    p.set_defaults(func=cmd_compile)
    p = sub.add_parser("ops", help="list the operator catalogue")
    p.set_defaults(func=cmd_ops)
    p = sub.add_parser("passes", help="list the passes and the default pipelines")
    p.add_argument("--opt-level", type=int, default=3, choices=range(0, 4))
    p.set_defaults(func=cmd_passes)
    return parser


def _show_warning(message, category, filename, lineno, file=None, line=None):  # noqa: ARG001
    """aot's own warnings as ``source: warning: message``; others as Python
    prints them."""
    if issubclass(category, AotWarning):
        print(str(message), file=sys.stderr)
    else:
        _PYTHON_SHOW_WARNING(message, category, filename, lineno, file, line)


_PYTHON_SHOW_WARNING = warnings.showwarning


def main(argv: Sequence[str] | None = None) -> int:
    warnings.showwarning = _show_warning
    parser = build_parser()
    args = parser.parse_args(argv)
    from .gc_tuning import compiling
    try:
        with compiling():
            return int(args.func(args))
    except DiagnosticError as exc:
        print(exc.render(), file=sys.stderr)
        return 1
    except UsageError as exc:
        print(f"aot: error: {exc}", file=sys.stderr)
        return 2
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
