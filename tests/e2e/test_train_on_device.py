"""examples/train_on_device: an SGD step written in the IR, compiled to C
and run in a loop -- through cffi on the host and (once) in C on the
Cortex-M4F under QEMU -- the loss falling and equal to the interpreter's
running the same loop."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import aot

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "train_on_device"


def load_train():
    name = "train_on_device_train"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, EXAMPLE / "train.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def test_host_loop_equals_the_interpreter_and_the_loss_falls(tmp_path, capsys) -> None:
    train = load_train()
    art = aot.compile(train.step_module(), tmp_path / "art", name=train.NAME)
    meta = json.loads((tmp_path / "art" / "metadata.json").read_text())
    assert meta["pool_bytes"] == 0 and meta["arena_bytes"] > 0    # dataflow: no pool
    got, params = train.train(aot.load(art))
    want = train.interpreter_losses()
    assert train.compare(got, want, "C (host)")
    np.testing.assert_allclose(got, want, rtol=train.RTOL, atol=train.ATOL)
    assert got[-1] < train.FALL * got[0]
    assert [p.shape for p in params] == [p.shape for p in train.initial_params()]
    # the checker fails a loop whose losses are not the interpreter's
    log = tmp_path / "bad.log"
    log.write_text("".join(f"step {i} loss {v * 1.001!r}\n" for i, v in enumerate(want)))
    assert train.main(["check", str(log)]) == 1
    log.write_text("".join(f"step {i} loss {v!r}\n" for i, v in enumerate(want)))
    assert train.main(["check", str(log)]) == 0


@pytest.mark.skipif(shutil.which("make") is None or shutil.which("arm-none-eabi-gcc") is None
                    or shutil.which("qemu-system-arm") is None,
                    reason="needs make, arm-none-eabi-gcc and qemu-system-arm")
def test_the_loop_runs_on_the_cortex_m4f_under_qemu(tmp_path) -> None:
    result = subprocess.run(
        ["make", "-s", "-C", str(EXAMPLE), "qemu", f"BUILD={tmp_path}",
         f"PYTHON={sys.executable}"], capture_output=True, text=True, timeout=600,
        env={**os.environ, "MAKEFLAGS": ""})
    report = f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    assert result.returncode == 0, report
    lines = result.stdout.splitlines()
    assert any(re.fullmatch(r"arena \d+ bytes; PASS train_step", line) for line in lines), report
    assert sum(line.startswith("step ") and " loss " in line for line in lines) == 24, report
    assert any("Cortex-M4F equals the interpreter" in line and line.endswith("yes")
               for line in lines), report


def test_ds_cnn_training_step_is_dataflow(tmp_path) -> None:
    """bench/train_step.py's DS-CNN with its last two layers trainable: the
    optimized training step compiles to fused kernels on the static arena
    with no pool (the bench also checks the full gradient of the loss)."""
    spec = importlib.util.spec_from_file_location("bench_train_step",
                                                  REPO / "bench" / "train_step.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    inference, loss, step, values = bench.ds_cnn_modules()
    assert [v.size for v in values] == [64 * 64, 64, 12 * 64, 12]
    aot.compile(step, tmp_path / "step", name="step", build=False)
    meta = json.loads((tmp_path / "step" / "metadata.json").read_text())
    assert meta["pool_bytes"] == 0
    assert meta["arena_bytes"] > 0 and meta["calls"]
