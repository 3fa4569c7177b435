"""aot: an ahead-of-time compiler from a Relay-style IR to standalone C99.

The public API (see README.md)::

    mod = aot.parse(text, source_name="model.relay")
    mod = aot.from_onnx("model.onnx", input_shapes={"input": (1, 3, 96, 96)})
    mod = aot.from_tflite("model.tflite")
    mod = aot.infer_types(mod)
    value = aot.interpret(mod, *args, entry="main")
    art = aot.compile(mod, "out/model", name="model", params={"w": w})
    qmod = aot.quantize(mod, [[x] for x in samples], {"calibrate_mode": "max"})
    fn = aot.load(art)
    value = fn(*args)                          # inputs also by name: fn(**{"input.1": x})
    outs = fn.named(*args)                     # {output name: array}

    with aot.PassContext(opt_level=2, disabled=["FoldScaleAxis"]):
        art = aot.compile(mod, "out/model")    # the optimizer's passes, chosen by name
"""

from __future__ import annotations

from typing import Any

from .diagnostics import Diagnostic, DiagnosticError, Span
from .gc_tuning import gc_tuned
from .ir import IRModule
from .passes.manager import PassContext
from .version import __version__


@gc_tuned
def parse(text: str, source_name: str = "<string>", **options: Any) -> IRModule:
    """Parse Relay text (a module, or a bare expression which becomes
    ``@main``).  Raises DiagnosticError on bad input."""
    from .ir.parser import parse_module
    return parse_module(text, source_name, **options)


@gc_tuned
def from_onnx(model: Any, *, input_shapes: dict[str, tuple[int, ...]] | None = None,
              source_name: str | None = None) -> IRModule:
    """Import an ONNX model (a path, bytes or ``onnx.ModelProto``) as a
    typed module; ``input_shapes`` fixes free dimensions of graph inputs.
    Needs the ``onnx`` package (imported only here).  Raises
    DiagnosticError on models it cannot import."""
    from .frontend.onnx import from_onnx as _from_onnx
    return _from_onnx(model, input_shapes=input_shapes, source_name=source_name)


@gc_tuned
def from_tflite(model: Any, *, source_name: str | None = None) -> IRModule:
    """Import a TFLite model (a path or the file's bytes), float32 or
    quantized int8/uint8, as a typed module.  Needs the ``tflite`` package
    (imported only here).  Raises DiagnosticError on models it cannot
    import."""
    from .frontend.tflite import from_tflite as _from_tflite
    return _from_tflite(model, source_name=source_name)


@gc_tuned
def infer_types(mod: IRModule) -> IRModule:
    """A new, fully typed module; DiagnosticError on type errors."""
    from .ir.type_infer import infer_types as _infer
    return _infer(mod)


def gradient(mod: IRModule, entry: str = "main", mode: str = "first_order") -> IRModule:
    """``mod`` with ``@entry`` returning ``(result, (d result / d p for each
    parameter p))``, seeded with ones as Relay's gradient.  ``mode``:
    ``"first_order"`` (dataflow programs, the ``FirstOrderGradient`` pass),
    ``"higher_order"`` (closures, ADTs, match, if, recursion, references:
    the ``HigherOrderGradient`` pass) or ``"auto"`` (first order when
    ``@entry`` is dataflow); see the README's "Gradients" section."""
    from .passes.gradient import gradient as _gradient
    return _gradient(mod, entry, mode)


def sgd_step(mod: IRModule, lr: float, trainable: Any = None, entry: str = "main") -> IRModule:
    """``@entry`` (a scalar loss) made one step of gradient descent: it
    returns ``(loss, p - lr * d loss / d p for each trainable p)``; see the
    README's "Gradients" section."""
    from .passes.sgd_step import sgd_step as _sgd_step
    return _sgd_step(mod, lr, trainable, entry)


def interpret(mod: IRModule, *args: Any, entry: str = "main") -> Any:
    """Evaluate ``@entry`` of ``mod`` on ``args`` with the reference
    interpreter (type-checking the module first)."""
    from .interpreter import run
    return run(mod, *args, entry=entry)


@gc_tuned
def compile(mod: IRModule, out_dir: Any, *, name: str = "model", opt_level: int | None = None,
            params: dict[str, Any] | None = None, arena: str = "caller",
            entry: str = "main", build: bool = True, pool_bytes: int | None = None,
            max_depth: int | None = None, tuning: str | None = None,
            quantized: str = "integer", stack_bytes: int | None = None,
            target: str = "host", ram_budget: int | None = None,
            memory_report: bool = False) -> Any:
    """Compile ``@entry`` to a C artifact in ``out_dir`` (``include/<name>.h``,
    ``src/``, ``<name>.mk``, ``metadata.json``) and build
    ``lib/lib<name>.a``.  ``params`` binds parameters of ``@entry`` to
    constants.  ``arena="static"`` makes the library own its arena.
    Programs with control flow, ADTs, closures or references get an object
    pool of ``pool_bytes`` bytes (by default the compiler sizes it: exactly
    for programs without recursion, from ``max_depth`` for a recursion that
    calls itself once per frame, none when nothing is allocated; a program
    whose pool grows with its input or that takes values the caller builds
    in the pool needs ``pool_bytes``: DiagnosticError otherwise) and a bound of
    ``max_depth`` nested calls (default 10,000) and of ``stack_bytes`` bytes
    of stack below the entry (default 64 KiB; past either a call returns
    ERR_DEPTH instead of overflowing the stack); tail calls are loops.
    ``tuning`` shapes convolution and dense loop nests for the target:
    ``"simd"`` (a host with SIMD units: the default when the library is
    built for the host, at ``-O3`` for the host CPU, so that ``aot.load``
    is fast), ``"scalar"`` (a microcontroller's scalar FPU: the default of
    ``build=False``, whose sources a firmware compiles, and of the Cortex-M
    targets with an FPU) or ``"scalar-nofma"`` (the default of cores
    without an FPU).  ``target`` is what ``lib<name>.a`` is built for:
    ``"host"`` (default) or a Cortex-M core (``"cortex-m4"``, ...; see
    :mod:`aot.emit.build.targets`), built with ``arm-none-eabi-gcc``.
    ``quantized`` says how a model that carries quantization (ONNX QDQ,
    ``qnn.dequantize`` -> float operators -> ``qnn.quantize``) computes:
    ``"integer"`` (the default, at every opt level: int8 weight tables,
    int32 accumulators, requantization in the kernel's epilogue) or
    ``"float"`` (the float operators as written, float32 weights; the
    interpreter's result).
    ``ram_budget`` (bytes) makes the compile fail with a DiagnosticError
    naming the budget and the breakdown when arena, object pool and the
    built library's worst-case stack need more (nothing is written then);
    metadata.json's ``stack`` record holds the call graph and, when the
    library is built, its worst-case stack (``stack.library.bytes``).
    ``memory_report=True`` also writes ``memory.svg`` and ``memory.txt``
    (the arena's tensors against time) into the artifact.
    Returns the :class:`~aot.emit.build.artifact.Artifact`; DiagnosticError on
    programs the backend cannot compile."""
    from .compiler import compile_module
    return compile_module(mod, out_dir, name=name, opt_level=opt_level, params=params,
                          arena=arena, entry=entry, build=build, pool_bytes=pool_bytes,
                          max_depth=max_depth, tuning=tuning, quantized=quantized,
                          stack_bytes=stack_bytes, target=target, ram_budget=ram_budget,
                          memory_report=memory_report)


def quantize(mod: IRModule, calibration_inputs: Any, config: Any = None) -> IRModule:
    """Quantize a float program (Relay's annotate -> calibrate -> realize):
    ``calibration_inputs`` is an iterable of argument lists (one array per
    parameter of ``@main``) the reference interpreter runs to choose the
    scales; ``config`` a mapping of qconfig knobs (README, "Quantizing a
    float model").  Returns the QDQ program (float in, float out), which
    ``aot.compile`` compiles to integer C.  DiagnosticError on bad input."""
    from .passes.quantize import quantize as _quantize
    return _quantize(mod, calibration_inputs, config)


def load(artifact: Any) -> Any:
    """A callable running a built artifact (or its directory) through
    cffi: NumPy arrays in, NumPy arrays (tuples for tuple results) out."""
    from .emit.build.compiled_model import load as _load
    return _load(artifact)


def prelude() -> IRModule:
    """The standard library (List, Option, Tree, nat and their functions)."""
    from .ir.prelude import load_prelude
    return load_prelude()


__all__ = ["parse", "from_onnx", "from_tflite", "infer_types", "interpret", "gradient", "compile",
           "sgd_step",
           "quantize", "load", "prelude", "IRModule", "PassContext", "Diagnostic",
           "DiagnosticError", "Span", "__version__"]
