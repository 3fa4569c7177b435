#!/usr/bin/env python3
"""Weights, test vectors and the MAC count for the embedded example.

Two steps, run by the Makefile around ``aot compile``:

    gen_test_data.py weights MODEL_FILE -o DIR
        A ``.relay`` model takes its weights as parameters of @main: every
        parameter after the first ``--inputs`` (default 1) is a weight.  This
        draws them (seeded, He-style scaling so activations stay in range)
        into DIR/<param>.npy and writes DIR/params.args, the
        ``--param NAME=FILE.npy`` arguments for ``aot compile``.  An ONNX
        model carries its weights: params.args is empty.

    gen_test_data.py data MODEL_FILE --artifact DIR --weights DIR -o test_data.h
                          [--info model_info.json]
                          [--reference auto|interp|compiled|onnxruntime]
        Draws fixed inputs (seeded) for the inputs listed in the artifact's
        metadata.json, computes the expected outputs with a reference, and
        writes a C header (see td_types.h) with the inputs, the expected
        outputs, the tolerances, the model's multiply-accumulate count and
        td_run(), which calls the generated entry function.  --info writes
        the same facts (MACs, reference, tolerances) as JSON for `make report`.

References: for a ``.relay`` model the reference interpreter
(``aot.interpret``); for an ONNX model onnxruntime when it is installed,
otherwise the interpreter on the imported module.  ``compiled`` runs the
interpreter on the program the C computes (the module after the
compiler's optimisation pipeline: for a quantized model the integer
operators FakeQuantizationToInteger made, which the C equals bit for bit,
where the imported QDQ program's float operators may round one output step
differently).

Tolerances, per output: |got - want| <= atol + rtol * |want| with atol
scaled by the output's largest finite magnitude (at least 1), as in
tests/e2e/c_harness.py.  The generated kernels sum in a different order
than NumPy (register-blocked loops versus BLAS), and C's expf is not
NumPy's, so floats are not bit-exact even on the host; the rounding error of
a float32 network grows with its depth, hence rtol 1e-4 rather than the 1e-5
of single operators.  onnxruntime has its own kernels (other orders, maybe
FMA) but on the float32 MLPerf Tiny models its distance is of the same
order, so the float tolerances are the same; its integer outputs may differ
by one (requantisation rounding), the interpreter's must match exactly.

The MAC count is taken from the typed IR: every conv/dense/matmul call in
@main, counted from its argument and result shapes (see ``count_macs``).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

INPUT_SEED = 20240601
WEIGHT_SEED = 7


@dataclass(frozen=True)
class Tolerance:
    atol: float       # times the output's largest finite magnitude (at least 1)
    rtol: float
    int_atol: int

    def atol_for(self, want: np.ndarray) -> float:
        finite = np.abs(want[np.isfinite(want)]).astype(np.float64) if want.dtype.kind == "f" \
            else np.zeros(0)
        return self.atol * max(1.0, float(finite.max()) if finite.size else 1.0)


TOLERANCES = {
    "interp": Tolerance(atol=2e-5, rtol=1e-4, int_atol=0),
    "compiled": Tolerance(atol=2e-5, rtol=1e-4, int_atol=0),
    "onnxruntime": Tolerance(atol=2e-5, rtol=1e-4, int_atol=1),
}


@dataclass(frozen=True)
class CType:
    c_type: str
    kind: str      # td_kind enumerator (td_types.h)


C_TYPES = {
    "float32": CType("float", "TD_F32"),
    "float64": CType("double", "TD_F64"),
    "int8": CType("int8_t", "TD_I8"),
    "int16": CType("int16_t", "TD_I16"),
    "int32": CType("int32_t", "TD_I32"),
    "int64": CType("int64_t", "TD_I64"),
    "uint8": CType("uint8_t", "TD_U8"),
    "uint16": CType("uint16_t", "TD_U16"),
    "uint32": CType("uint32_t", "TD_U32"),
    "uint64": CType("uint64_t", "TD_U64"),
    "bool": CType("uint8_t", "TD_BOOL"),
}


class UserError(Exception):
    """Bad input: printed without a traceback, exit status 1."""


# ---------------------------------------------------------------- loading

def is_onnx(path: str) -> bool:
    return path.endswith(".onnx")


def load_module(path: str):
    """The typed IRModule of a .relay or .onnx file."""
    import aot
    if is_onnx(path):
        from_onnx = getattr(aot, "from_onnx", None)
        if from_onnx is None:
            raise UserError(f"{path}: this aot has no ONNX importer (aot.from_onnx)")
        return aot.infer_types(from_onnx(path))
    return aot.infer_types(aot.parse(Path(path).read_text(), source_name=path))


def main_params(mod) -> list:
    return list(mod["main"].params)


# ---------------------------------------------------------------- weights

def draw_weight(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """He-normal for weights (fan-in = product of all but the first axis),
    small normal values for vectors (biases)."""
    if dtype.kind == "f":
        if len(shape) >= 2:
            fan_in = max(1, math.prod(shape[1:]))
            return (rng.standard_normal(shape) * math.sqrt(2.0 / fan_in)).astype(dtype)
        return (rng.standard_normal(shape) * 0.1).astype(dtype)
    return draw_input(rng, shape, dtype)


def cmd_weights(args: argparse.Namespace) -> int:
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    lines: list[str] = []
    if not is_onnx(args.model):
        from aot.ir.types import TensorType
        mod = load_module(args.model)
        rng = np.random.default_rng(WEIGHT_SEED)
        for p in main_params(mod)[args.inputs:]:
            t = p.checked_type
            if not isinstance(t, TensorType) or not all(isinstance(d, int) for d in t.shape):
                raise UserError(f"{args.model}: weight parameter %{p.name_hint} must be a "
                                f"tensor of static shape, got {t}")
            value = draw_weight(rng, tuple(t.shape), t.dtype.np)
            path = (out / f"{p.name_hint}.npy").resolve()
            np.save(path, value)
            lines.append(f"--param {p.name_hint}={path}")
    (out / "params.args").write_text("".join(line + "\n" for line in lines))
    return 0


def load_weights(weights_dir: Path) -> dict[str, np.ndarray]:
    """The weights named in params.args, by parameter name."""
    weights: dict[str, np.ndarray] = {}
    for line in (weights_dir / "params.args").read_text().splitlines():
        name, _, path = line.removeprefix("--param ").partition("=")
        weights[name] = np.load(path)
    return weights


# ---------------------------------------------------------------- inputs

def draw_input(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    if dtype.kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, shape).astype(dtype)
    info = np.iinfo(dtype)
    lo, hi = max(info.min, -128), min(info.max, 127)
    return rng.integers(lo, hi + 1, shape).astype(dtype)


def flatten_outputs(value) -> list[np.ndarray]:
    """Tensors of a (nested) tuple result, depth first, as the artifact
    numbers its outputs."""
    out: list[np.ndarray] = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, tuple):
            stack.extend(reversed(v))
        else:
            out.append(np.asarray(v))
    return out


def reference_outputs(args: argparse.Namespace, mod, inputs: list[np.ndarray],
                      weights: dict[str, np.ndarray]) -> tuple[str, list[np.ndarray]]:
    choice = args.reference
    if choice == "auto":
        choice = "interp"
        if is_onnx(args.model):
            try:
                import onnxruntime  # noqa: F401
                choice = "onnxruntime"
            except ImportError:
                pass
    if choice == "onnxruntime":
        if not is_onnx(args.model):
            raise UserError("--reference onnxruntime needs an .onnx model")
        import onnxruntime as ort
        session = ort.InferenceSession(args.model, providers=["CPUExecutionProvider"])
        names = [i.name for i in session.get_inputs()]
        if len(names) != len(inputs):
            raise UserError(f"{args.model}: onnxruntime sees {len(names)} inputs, "
                            f"the artifact {len(inputs)}")
        return choice, [np.asarray(o) for o in session.run(None, dict(zip(names, inputs)))]
    import aot
    params = [p.name_hint for p in main_params(mod)]
    if choice == "compiled":
        from aot.compiler import is_dataflow, optimize_for_c, optimize_program
        optimize = optimize_for_c if is_dataflow(mod) else optimize_program
        mod = optimize(mod, params=weights)
        params = [n for n in params if n not in weights]
    values = {**{n: v for n, v in zip(params, inputs)}, **weights}
    result = aot.interpret(mod, *[values[n] for n in params])
    return choice, flatten_outputs(result)


# ---------------------------------------------------------------- MACs

def count_macs(mod) -> int:
    """Multiply-accumulates of the conv/dense/matmul calls of @main (each
    call once: a call inside a loop or a recursive function is not
    multiplied).  From the typed shapes:

    * conv (1-d, 2-d, qnn): every output element takes
      (weight elements / output channels) products;
    * conv2d_transpose: every input element is scattered through
      (weight elements / input channels) products;
    * dense, matmul, batch_matmul: every output element takes K products.
    """
    from aot.ir.expr import Call, Op
    from aot.ir.visitor import post_order

    def shape(expr) -> tuple[int, ...]:
        return tuple(expr.checked_type.shape)

    total = 0
    for node in post_order(mod["main"]):
        if not isinstance(node, Call) or not isinstance(node.op, Op):
            continue
        name, attrs = node.op.name, node.attrs
        if name in ("nn.conv1d", "nn.conv2d", "qnn.conv2d"):
            out = shape(node)
            layout = getattr(attrs, "out_layout", "") or attrs.data_layout
            total += math.prod(out) * math.prod(shape(node.args[1])) // out[layout.index("C")]
        elif name == "nn.conv2d_transpose":
            data = shape(node.args[0])
            total += math.prod(data) * math.prod(shape(node.args[1])) \
                // data[attrs.data_layout.index("C")]
        elif name in ("nn.dense", "qnn.dense"):
            total += math.prod(shape(node)) * shape(node.args[0])[-1]
        elif name == "nn.matmul":
            a = shape(node.args[0])
            total += math.prod(shape(node)) * (a[-2] if attrs.transpose_a else a[-1])
        elif name == "nn.batch_matmul":
            a = shape(node.args[0])
            total += math.prod(shape(node)) * (a[1] if attrs.transpose_a else a[2])
    return total


# ---------------------------------------------------------------- C text

def c_literal(value, dtype: str) -> str:
    if dtype in ("float32", "float64"):
        v = float(value)
        if math.isnan(v):
            return "NAN"
        if math.isinf(v):
            return "INFINITY" if v > 0 else "-INFINITY"
        text = float(value).hex()          # exact in C99 (hexadecimal floats)
        return text + ("f" if dtype == "float32" else "")
    if dtype == "bool":
        return "1" if value else "0"
    v = int(value)
    if dtype == "int64":
        return f"INT64_C({v})" if v != -2**63 else "INT64_MIN"
    if dtype == "uint64":
        return f"UINT64_C({v})"
    if dtype == "int32" and v == -2**31:
        return "INT32_MIN"
    return str(v)


def c_array(qualifiers: str, ctype: str, name: str, values: np.ndarray, dtype: str) -> str:
    flat = values.reshape(-1)
    items = [c_literal(v, dtype) for v in flat] or ["0"]
    lines = ["    " + ", ".join(items[i:i + 8]) + "," for i in range(0, len(items), 8)]
    return f"{qualifiers} {ctype} {name}[{max(1, flat.size)}] = {{\n" + "\n".join(lines) + "\n};\n"


def render_header(name: str, meta: dict, inputs: list[np.ndarray], expected: list[np.ndarray],
                  tol: Tolerance, reference: str, macs: int, model_file: str) -> str:
    upper = name.upper()
    caller_arena = meta.get("arena", "caller") == "caller"
    parts = [
        f"/* test_data.h -- fixed inputs and expected outputs of model `{name}`,\n"
        f" * generated by gen_test_data.py from {Path(model_file).name}.  Do not edit.\n"
        f" * Inputs: seeded random (seed {INPUT_SEED}).  Expected outputs: {reference}. */\n",
        "#ifndef TEST_DATA_H_INCLUDED\n#define TEST_DATA_H_INCLUDED\n\n",
        "#include <math.h>\n#include <stdint.h>\n\n",
        f'#include "{name}.h"\n#include "td_types.h"\n\n',
        f'#define TD_MODEL_NAME "{name}"\n',
        f'#define TD_REFERENCE "{reference}"\n',
        f"#define TD_MACS {macs}UL /* multiply-accumulates per inference */\n",
        f"#define TD_ARENA_CALLER {1 if caller_arena else 0}\n",
        f"#define TD_ARENA_BYTES {upper}_ARENA_BYTES\n",
        f"#define TD_ARENA_ALIGN {upper}_ARENA_ALIGN\n",
        f"#define TD_NUM_OUTPUTS {len(expected)}\n\n",
    ]
    in_names, out_names = [], []
    for k, (spec, value) in enumerate(zip(meta["inputs"], inputs)):
        ct = C_TYPES[spec["dtype"]]
        in_names.append(f"td_input_{k}")
        parts.append(f"/* input {k} `{spec['name']}`: {spec['dtype']}{list(spec['shape'])} */\n")
        parts.append(c_array("static const", ct.c_type, f"td_input_{k}", value, spec["dtype"]))
        parts.append("\n")
    for k, (spec, value) in enumerate(zip(meta["outputs"], expected)):
        ct = C_TYPES[spec["dtype"]]
        out_names.append(f"td_output_{k}")
        parts.append(f"/* output {k} `{spec['name']}`: {spec['dtype']}{list(spec['shape'])} */\n")
        parts.append(c_array("static const", ct.c_type, f"td_expected_{k}", value, spec["dtype"]))
        parts.append(f"static {ct.c_type} td_output_{k}[{max(1, spec['size'])}];\n\n")
    parts.append("static const td_output td_outputs[TD_NUM_OUTPUTS] = {\n")
    for k, (spec, want) in enumerate(zip(meta["outputs"], expected)):
        ct = C_TYPES[spec["dtype"]]
        parts.append(f'    {{"{spec["name"]}", {ct.kind}, {spec["size"]}UL, td_output_{k}, '
                     f"td_expected_{k}, {tol.atol_for(want)!r}, {tol.rtol!r}, "
                     f"{tol.int_atol}L}},\n")
    parts.append("};\n\n")
    call_args = in_names + out_names + (["arena"] if caller_arena else [])
    entry = meta["entry"]["name"]
    parts.append("/* One inference with the embedded inputs. */\n")
    parts.append("static int32_t td_run(void *arena)\n{\n")
    if not caller_arena:
        parts.append("    (void)arena;\n")
    parts.append(f"    return {entry}({', '.join(call_args)});\n}}\n\n")
    parts.append("#endif /* TEST_DATA_H_INCLUDED */\n")
    return "".join(parts)


def check_entry(meta: dict) -> None:
    """The header's td_run() passes inputs, outputs, then the arena (when
    the caller owns it): check the prototype has that many parameters."""
    proto = meta["entry"]["prototype"]
    params = proto[proto.index("(") + 1:proto.rindex(")")].strip()
    count = 0 if params in ("", "void") else params.count(",") + 1
    want = len(meta["inputs"]) + len(meta["outputs"]) + (meta.get("arena") == "caller")
    if count != want:
        raise UserError(f"unexpected entry function {proto!r}: this example supports tensor "
                        f"models (inputs, outputs, arena), expected {want} parameters")


def cmd_data(args: argparse.Namespace) -> int:
    artifact = Path(args.artifact)
    meta = json.loads((artifact / "metadata.json").read_text())
    check_entry(meta)
    for spec in meta["inputs"] + meta["outputs"]:
        if spec["dtype"] not in C_TYPES:
            raise UserError(f"{spec['name']}: element type {spec['dtype']} is not supported "
                            "by this example")
    mod = load_module(args.model)
    weights = load_weights(Path(args.weights)) if not is_onnx(args.model) else {}
    rng = np.random.default_rng(INPUT_SEED)
    inputs = [draw_input(rng, tuple(s["shape"]), np.dtype(s["dtype"])) for s in meta["inputs"]]
    reference, expected = reference_outputs(args, mod, inputs, weights)
    if len(expected) != len(meta["outputs"]):
        raise UserError(f"the reference gives {len(expected)} outputs, the artifact "
                        f"{len(meta['outputs'])}")
    for spec, value in zip(meta["outputs"], expected):
        if tuple(value.shape) != tuple(spec["shape"]):
            raise UserError(f"output {spec['name']}: reference shape {value.shape}, "
                            f"artifact {spec['shape']}")
    expected = [v.astype(s["dtype"]) for s, v in zip(meta["outputs"], expected)]
    tol = TOLERANCES[reference]
    macs = count_macs(mod)
    text = render_header(meta["name"], meta, inputs, expected, tol, reference, macs, args.model)
    Path(args.output).write_text(text)
    if args.info:
        info = {"name": meta["name"], "model_file": args.model, "macs": macs,
                "reference": reference, "atol": tol.atol, "rtol": tol.rtol,
                "int_atol": tol.int_atol, "arena_bytes": meta["arena_bytes"],
                "constant_bytes": meta["constant_bytes"]}
        Path(args.info).write_text(json.dumps(info, indent=2, sort_keys=True) + "\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    w = sub.add_parser("weights", help="draw the weights of a .relay model")
    w.add_argument("model")
    w.add_argument("-o", "--output", required=True, help="directory for the .npy files")
    w.add_argument("--inputs", type=int, default=1,
                   help="leading parameters of @main that are inputs (default 1)")
    w.set_defaults(func=cmd_weights)
    d = sub.add_parser("data", help="write the test vectors header")
    d.add_argument("model")
    d.add_argument("--artifact", required=True, help="the aot artifact directory")
    d.add_argument("--weights", required=True, help="the directory of `weights`")
    d.add_argument("-o", "--output", required=True, help="the C header to write")
    d.add_argument("--info", help="also write MACs and tolerances as JSON")
    d.add_argument("--reference", choices=("auto", "interp", "compiled", "onnxruntime"),
                   default="auto")
    d.set_defaults(func=cmd_data)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except UserError as exc:
        print(f"gen_test_data.py: error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"gen_test_data.py: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    try:
        from aot.diagnostics import DiagnosticError
    except ImportError:
        print("gen_test_data.py: error: cannot import aot (set PYTHONPATH to the repository "
              "or pip install -e .)", file=sys.stderr)
        sys.exit(1)
    try:
        sys.exit(main())
    except DiagnosticError as exc:
        print(exc, file=sys.stderr)
        sys.exit(1)
