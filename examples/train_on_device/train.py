"""On-device training: an MLP classifier's SGD step, written in the IR,
compiled to malloc-free C and run in a loop.

The model is a two-layer perceptron (16 features, 24 hidden units with
ReLU, 4 classes) and its loss the mean cross-entropy of a batch of 8
against integer labels, all in the IR::

    hidden = relu(dense(x, w1) + b1)
    loss(w1, b1, w2, b2, x, y) = mean(-sum(one_hot(y) * log_softmax(dense(hidden, w2) + b2)))

``aot.sgd_step`` turns it into one training step,
``step(w1, b1, w2, b2, x, y) -> (loss, w1', b1', w2', b2')`` with
``p' = p - lr * d loss / d p`` (``aot.gradient`` underneath), which
compiles like any dataflow model: fused kernels on one static arena, no
pool, no malloc.  The loop feeds the new parameters back into the next
step, over a fixed synthetic data set (four Gaussian blobs, seeded).

    python train.py host                 # compile, run STEPS steps via cffi, check
    python train.py firmware --out DIR   # the artifact (C sources) and DIR/train_data.h
                                         # for main.c (host or Cortex-M4F under QEMU)
    python train.py check LOG            # a firmware run's output against the interpreter
    python train.py relay --out FILE     # the step as .relay text (for `aot profile`)

Every command compares the losses with the reference interpreter running
the same step program in the same loop (float32 both): equal to
``RTOL * |loss| + ATOL``, and the loss must fall (the last below
``FALL`` times the first).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Sequence

import numpy as np

import aot
from aot import builder as B

FEATURES, HIDDEN, CLASSES, BATCH = 16, 24, 4, 8
BATCHES = 4              # the data set: 4 batches of 8, visited in turn
STEPS = 24
LR = 0.1
NAME = "train_step"
PARAMS = ("w1", "b1", "w2", "b2")
#: C (host or Cortex-M4F) against the interpreter: float32 arithmetic in
#: different orders (dense sums), compounded over the steps
RTOL, ATOL = 1e-5, 1e-6
#: the last loss below this fraction of the first
FALL = 0.5


def loss_module() -> aot.IRModule:
    f32 = "float32"
    w1 = B.var("w1", B.tensor((HIDDEN, FEATURES), f32))
    b1 = B.var("b1", B.tensor((HIDDEN,), f32))
    w2 = B.var("w2", B.tensor((CLASSES, HIDDEN), f32))
    b2 = B.var("b2", B.tensor((CLASSES,), f32))
    x = B.var("x", B.tensor((BATCH, FEATURES), f32))
    y = B.var("y", B.tensor((BATCH,), "int32"))
    hidden = B.call("nn.relu", B.call("nn.bias_add", B.call("nn.dense", x, w1), b1))
    logits = B.call("nn.bias_add", B.call("nn.dense", hidden, w2), b2)
    hot = B.call("one_hot", y, B.const(np.float32(1.0)), B.const(np.float32(0.0)),
                 depth=CLASSES, axis=-1, dtype=f32)
    nll = B.negative(B.sum(B.multiply(hot, B.call("nn.log_softmax", logits)), axis=[1]))
    return B.module(main=B.function([w1, b1, w2, b2, x, y], B.mean(nll)))


def step_module() -> aot.IRModule:
    return aot.sgd_step(loss_module(), LR, trainable=PARAMS)


def initial_params(seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((HIDDEN, FEATURES)) / np.sqrt(FEATURES)).astype(np.float32),
            np.zeros(HIDDEN, np.float32),
            (rng.standard_normal((CLASSES, HIDDEN)) / np.sqrt(HIDDEN)).astype(np.float32),
            np.zeros(CLASSES, np.float32)]


def dataset(seed: int = 1) -> list[tuple[np.ndarray, np.ndarray]]:
    """BATCHES batches of BATCH points from four Gaussian blobs."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((CLASSES, FEATURES)) * 0.5
    batches = []
    for _ in range(BATCHES):
        y = rng.integers(0, CLASSES, BATCH).astype(np.int32)
        x = (centres[y] + rng.standard_normal((BATCH, FEATURES))).astype(np.float32)
        batches.append((x, y))
    return batches


def train(run, steps: int = STEPS) -> tuple[list[float], list[np.ndarray]]:
    """The loop: ``run(*params, x, y) -> (loss, *new params)`` per step."""
    params = initial_params()
    data = dataset()
    losses = []
    for i in range(steps):
        x, y = data[i % len(data)]
        loss, *params = run(*params, x, y)
        losses.append(float(loss))
    return losses, params


def interpreter_losses(steps: int = STEPS) -> list[float]:
    mod = step_module()
    return train(lambda *a: aot.interpret(mod, *a), steps)[0]


def compare(got: Sequence[float], want: Sequence[float], where: str) -> bool:
    print(f"{'step':>4}  {where:>12}  {'interpreter':>12}  |diff|")
    ok = len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        close = abs(g - w) <= RTOL * abs(w) + ATOL
        ok &= close
        print(f"{i:4d}  {g:12.7f}  {w:12.7f}  {abs(g - w):.2e}{'' if close else '  MISMATCH'}")
    falls = len(got) > 1 and got[-1] < FALL * got[0]
    print(f"loss {got[0]:.4f} -> {got[-1]:.4f} over {len(got)} steps "
          f"({'falls' if falls else 'DOES NOT FALL'} below {FALL} x the first); "
          f"{where} equals the interpreter to {RTOL:g} x |loss| + {ATOL:g}: "
          f"{'yes' if ok else 'NO'}")
    return ok and falls


def cmd_host(args: argparse.Namespace) -> int:
    out = Path(args.out)
    art = aot.compile(step_module(), out / "artifact", name=NAME)
    fn = aot.load(art)
    got, _ = train(fn, args.steps)
    return 0 if compare(got, interpreter_losses(args.steps), "C (host)") else 1


def c_array(name: str, a: np.ndarray) -> str:
    ctype = {"float32": "float", "int32": "int32_t"}[str(a.dtype)]
    fmt = (lambda v: f"{float(v)!r}f") if a.dtype == np.float32 else (lambda v: str(int(v)))
    values = ", ".join(fmt(v) for v in a.reshape(-1))
    return f"static const {ctype} {name}[{a.size}] = {{{values}}};\n"


def cmd_firmware(args: argparse.Namespace) -> int:
    """The artifact (sources only) and train_data.h: the initial
    parameters, the data set and the interpreter's losses."""
    out = Path(args.out)
    aot.compile(step_module(), out / "artifact", name=NAME, build=False)
    lines = ["/* train_data.h -- written by train.py firmware; do not edit. */\n",
             "#include <stdint.h>\n",
             f"#define TD_STEPS {args.steps}\n#define TD_BATCHES {BATCHES}\n",
             f"#define TD_RTOL {RTOL!r}\n#define TD_ATOL {ATOL!r}\n#define TD_FALL {FALL!r}\n"]
    for name, p in zip(PARAMS, initial_params()):
        lines.append(c_array(f"td_init_{name}", p))
    for i, (x, y) in enumerate(dataset()):
        lines.append(c_array(f"td_x{i}", x))
        lines.append(c_array(f"td_y{i}", y))
    lines.append("static const float *const td_x[TD_BATCHES] = {"
                 + ", ".join(f"td_x{i}" for i in range(BATCHES)) + "};\n")
    lines.append("static const int32_t *const td_y[TD_BATCHES] = {"
                 + ", ".join(f"td_y{i}" for i in range(BATCHES)) + "};\n")
    want = np.array(interpreter_losses(args.steps), np.float64)
    lines.append("static const double td_want[TD_STEPS] = {"
                 + ", ".join(repr(float(v)) for v in want) + "};\n")
    (out / "train_data.h").write_text("".join(lines))
    return 0


LINE = re.compile(r"^step\s+(\d+)\s+loss\s+(\S+)")


def cmd_check(args: argparse.Namespace) -> int:
    text = Path(args.log).read_text()
    got = [float(m.group(2)) for m in map(LINE.match, text.splitlines()) if m]
    return 0 if compare(got, interpreter_losses(len(got)), args.where) else 1


def cmd_relay(args: argparse.Namespace) -> int:
    Path(args.out).write_text(str(step_module()))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("host", help="compile, run the loop through cffi, check")
    p.add_argument("--out", default="build/host")
    p.add_argument("--steps", type=int, default=STEPS)
    p.set_defaults(func=cmd_host)
    p = sub.add_parser("firmware", help="the artifact's sources and train_data.h")
    p.add_argument("--out", default="build/firmware")
    p.add_argument("--steps", type=int, default=STEPS)
    p.set_defaults(func=cmd_firmware)
    p = sub.add_parser("check", help="a firmware run's losses against the interpreter")
    p.add_argument("log")
    p.add_argument("--where", default="C")
    p.set_defaults(func=cmd_check)
    p = sub.add_parser("relay", help="the step program as .relay text")
    p.add_argument("--out", default="build/train_step.relay")
    p.set_defaults(func=cmd_relay)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
