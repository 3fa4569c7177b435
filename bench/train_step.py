"""One training step against one inference: the MLPerf Tiny DS-CNN with its
last two layers trainable, compiled to C.

The model is ``examples/mlperf_tiny/models.py``'s DS-CNN (keyword spotting,
1x1x49x10 MFCC input, 12 classes; seeded weights) imported from ONNX.  For
the training step its batch norms are folded for inference
(SimplifyInference: frozen statistics), the weights and biases of its last
two layers -- the last pointwise (1x1) convolution, 64 x 64, and the
12-way classifier -- become parameters, and everything else stays a
constant (frozen).  The loss is the cross-entropy of the logits (the
classifier's output before the softmax) against an integer label, and
``aot.sgd_step`` makes it one SGD step in the IR,
``step(x, label, w_pw, b_pw, w_fc, b_fc) -> (loss, w_pw', b_pw', w_fc', b_fc')``.

Measured for the inference (the imported model) and for the step, as
compiled by ``aot compile`` (default options): the arena and the object
pool (``metadata.json``; the gradient of a dataflow program must come
back to dataflow, so the step's pool must be 0: the script fails
otherwise), the constants, the trainable parameters' bytes (the caller's
buffers, in and out), the kernel calls, and the Cortex-M4F instructions
of one call under QEMU (``aot profile``'s exact count; needs
arm-none-eabi-gcc and qemu-system-arm, skipped with ``--no-qemu``).
The step is also checked against the interpreter on one input.  A third
row, ``full gradient``, is ``aot.gradient`` of the loss itself: the loss
and its gradient with respect to every input, the MFCC input too, so the
backward pass runs through all the layers (convolutions, depthwise ones
included) -- also dataflow, no pool.

    python bench/train_step.py [--json bench/train_step.json] [--no-qemu]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import aot  # noqa: E402
from aot.ir.expr import Call, Constant, Expr, Var  # noqa: E402
from aot.ir.visitor import ExprMutator  # noqa: E402
from aot.passes.simplify_inference import simplify_inference  # noqa: E402

LR = 0.01
TRAINABLE = ("w_pw", "b_pw", "w_fc", "b_fc")


def mlperf_models() -> Any:
    spec = importlib.util.spec_from_file_location(
        "mlperf_tiny_models", ROOT / "examples" / "mlperf_tiny" / "models.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Unfreeze(ExprMutator):
    """The weight (argument 1) of the calls in ``weights`` and the constant
    operand of the calls in ``biases`` become the given variables."""

    def __init__(self, weights: dict[Call, Var], biases: dict[Call, Var]) -> None:
        super().__init__()
        self.weights, self.biases = weights, biases

    def visit_call(self, node: Call):  # type: ignore[override]
        new = yield from super().visit_call(node)
        if node in self.weights:
            return Call(new.op, (new.args[0], self.weights[node]), new.attrs, new.type_args,
                        span=new.span)
        if node in self.biases:
            return Call(new.op, (new.args[0], self.biases[node]), new.attrs, new.type_args,
                        span=new.span)
        return new


def _calls(e: Expr) -> list[Call]:
    """The calls of the dataflow body, in evaluation order."""
    found: list[Call] = []
    seen: set[int] = set()
    stack: list[tuple[Expr, bool]] = [(e, False)]
    while stack:
        node, done = stack.pop()
        if done:
            if isinstance(node, Call):
                found.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        for child in reversed(getattr(node, "args", ()) or getattr(node, "fields", ())):
            stack.append((child, False))
        if hasattr(node, "tuple_value"):
            stack.append((node.tuple_value, False))
    return found


def ds_cnn_modules() -> tuple[aot.IRModule, aot.IRModule, aot.IRModule, list[np.ndarray]]:
    """(inference module, loss module, training-step module, the trainable
    values)."""
    from aot import builder as B
    models = mlperf_models()
    inference = aot.infer_types(aot.from_onnx(models.ds_cnn()))
    folded = aot.infer_types(simplify_inference(inference))
    fn = folded["main"]
    assert isinstance(fn.body, Call) and fn.body.op.name == "nn.softmax"
    logits = fn.body.args[0]
    calls = _calls(logits)
    conv = [c for c in calls if c.op.name == "nn.conv2d"][-1]
    dense = [c for c in calls if c.op.name == "nn.dense"][-1]
    conv_bias = next(c for c in calls if c.op.name == "nn.bias_add" and c.args[0] is conv)
    fc_bias = next(c for c in calls if c.op.name == "add" and c.args[0] is dense)
    values = []
    params = {}
    for name, (call, i) in zip(TRAINABLE, [(conv, 1), (conv_bias, 1), (dense, 1),
                                             (fc_bias, 1)]):
        const = call.args[i]
        assert isinstance(const, Constant)
        values.append(np.asarray(const.data))
        params[name] = B.var(name, B.tensor(values[-1].shape, "float32"))
    logits = _Unfreeze({conv: params["w_pw"], dense: params["w_fc"]},
                       {conv_bias: params["b_pw"], fc_bias: params["b_fc"]}).visit(logits)
    x = fn.params[0]
    label = B.var("label", B.tensor((1,), "int32"))
    hot = B.call("one_hot", label, B.const(np.float32(1.0)), B.const(np.float32(0.0)),
                 depth=12, axis=-1, dtype="float32")
    loss = B.negative(B.sum(B.multiply(hot, B.call("nn.log_softmax", logits))))
    loss_mod = B.module(main=B.function([x, label, *params.values()], loss))
    step = aot.sgd_step(loss_mod, LR, trainable=TRAINABLE)
    return inference, loss_mod, step, values


def measure(mod: aot.IRModule, name: str, work: Path, qemu: bool) -> dict[str, Any]:
    aot.compile(mod, work / name, name=name, build=False)
    meta = json.loads((work / name / "metadata.json").read_text())
    row: dict[str, Any] = {"arena_bytes": meta["arena_bytes"], "pool_bytes": meta["pool_bytes"],
                           "constant_bytes": meta["constant_bytes"],
                           "kernel_calls": len(meta.get("calls", []))}
    if qemu:
        from aot.profiler import profile_module
        profile = profile_module(mod, target="cortex-m4", name=name, work_dir=work / f"{name}-p")
        row["m4f_instructions"] = int(profile.total)
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", help="write the measurements as JSON")
    parser.add_argument("--no-qemu", action="store_true",
                        help="skip the Cortex-M4F instruction counts")
    args = parser.parse_args(argv)
    qemu = not args.no_qemu and shutil.which("arm-none-eabi-gcc") is not None \
        and shutil.which("qemu-system-arm") is not None
    inference, loss_mod, step, values = ds_cnn_modules()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 1, 49, 10)).astype(np.float32)
    label = np.array([3], np.int32)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        rows = {"inference": measure(inference, "ds_cnn", work, qemu),
                "training step": measure(step, "ds_cnn_step", work, qemu),
                "full gradient": measure(aot.gradient(loss_mod), "ds_cnn_grad", work, qemu)}
        art = aot.compile(step, work / "host", name="ds_cnn_step")
        got = aot.load(art)(x, label, *values)
    want = aot.interpret(step, x, label, *values)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-6)
    rows["training step"]["trainable_bytes"] = int(sum(v.nbytes for v in values))
    rows["inference"]["trainable_bytes"] = 0
    rows["full gradient"]["trainable_bytes"] = rows["training step"]["trainable_bytes"]
    print("DS-CNN (MLPerf Tiny), last two layers trainable (last 1x1 conv 64x64 and the "
          "12-way classifier: 4,940 parameters)")
    keys = ["arena_bytes", "pool_bytes", "constant_bytes", "trainable_bytes", "kernel_calls"]
    if qemu:
        keys.append("m4f_instructions")
    print(f"{'':14}" + "".join(f"{k:>18}" for k in keys))
    for what, row in rows.items():
        print(f"{what:14}" + "".join(f"{row[k]:>18,}" for k in keys))
    if qemu:
        ratio = rows["training step"]["m4f_instructions"] / rows["inference"]["m4f_instructions"]
        print(f"one training step = {ratio:.2f} inferences of Cortex-M4F instructions")
    print(f"step against the interpreter: loss {float(got[0]):.6f} (interpreter "
          f"{float(want[0]):.6f}); the step's pool is {rows['training step']['pool_bytes']} "
          f"bytes (dataflow)")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")
    if rows["training step"]["pool_bytes"] or rows["full gradient"]["pool_bytes"]:
        print("FAIL: the optimized gradient is not dataflow (it needs a pool)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
