"""`aot check/run/compile FILE.onnx` and `--input-shape`: results,
diagnostics and exit codes, never a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

onnx = pytest.importorskip("onnx")

import numpy as np  # noqa: E402

from aot.cli import main  # noqa: E402
from onnx_helpers import model, node, rand  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def save(tmp_path: Path, m, name: str = "net.onnx") -> str:
    path = tmp_path / name
    onnx.save(m, str(path))
    return str(path)


def relu_net():
    return model([node("Relu", ["input.1"], ["y"])], {"input.1": (np.float32, ["N", 3])}, ["y"])


def test_check(tmp_path, capsys):
    f = save(tmp_path, relu_net())
    assert main(["check", f, "--input-shape", "input.1=2,3"]) == 0
    assert capsys.readouterr().out.strip() == \
        "@main: fn (Tensor[(2, 3), float32]) -> Tensor[(2, 3), float32]"


def test_run(tmp_path, capsys):
    f = save(tmp_path, relu_net())
    assert main(["run", f, "--input-shape", "input.1=1,3",
                 "--input", "input_1=[[-1.0, 2.0, -3.5]]"]) == 0
    assert capsys.readouterr().out.strip() == "[[0., 2., 0.]]"


def test_run_c_backend(tmp_path, capsys):
    f = save(tmp_path, relu_net())
    assert main(["run", f, "--backend", "c", "--input-shape", "input.1=1,3",
                 "--input", "input_1=[[-1.0, 2.0, -3.5]]"]) == 0
    assert capsys.readouterr().out.strip() == "[[0., 2., 0.]]"


def test_compile_no_build(tmp_path, capsys):
    f = save(tmp_path, relu_net())
    out = tmp_path / "art"
    assert main(["compile", f, "-o", str(out), "--no-build", "--input-shape",
                 "input.1=4,3"]) == 0
    assert (out / "include" / "model.h").is_file()
    assert (out / "metadata.json").is_file()


def test_repeated_input_shapes(tmp_path, capsys):
    m = model([node("Add", ["a", "b"], ["y"])],
              {"a": (np.float32, ["N"]), "b": (np.float32, ["M"])}, ["y"])
    f = save(tmp_path, m)
    assert main(["check", f, "--input-shape", "a=3", "--input-shape", "b=1"]) == 0
    assert "fn (Tensor[(3), float32], Tensor[(1), float32]) -> Tensor[(3), float32]" in \
        capsys.readouterr().out


def test_dynamic_shape_without_input_shape(tmp_path, capsys):
    f = save(tmp_path, relu_net())
    assert main(["check", f]) == 1
    assert capsys.readouterr().err.strip() == (
        f"{f}: error: input 'input.1' has the dynamic shape (N, 3): fix it with "
        "--input-shape input.1=N,3 (input_shapes in Python)")


@pytest.mark.parametrize("spec", ["input.1", "input.1=2,x", "=2,3", "input.1=2,-3"])
def test_bad_input_shape_option(tmp_path, capsys, spec):
    f = save(tmp_path, relu_net())
    assert main(["check", f, "--input-shape", spec]) == 2
    assert capsys.readouterr().err.strip() == (
        f"aot: error: --input-shape expects NAME=D0,D1,... with non-negative integers, "
        f"got {spec!r}")


def test_input_shape_given_twice(tmp_path, capsys):
    f = save(tmp_path, relu_net())
    assert main(["check", f, "--input-shape", "input.1=1,3", "--input-shape",
                 "input.1=2,3"]) == 2
    assert capsys.readouterr().err.strip() == "aot: error: --input-shape given twice for 'input.1'"


def test_input_shape_on_relay_file(tmp_path, capsys):
    f = tmp_path / "p.relay"
    f.write_text("def @main(%x: Tensor[(2), float32]) { %x }")
    assert main(["check", str(f), "--input-shape", "x=2"]) == 2
    assert "--input-shape applies to ONNX models only" in capsys.readouterr().err


def test_unsupported_operator(tmp_path, capsys):
    m = model([node("Det", ["x"], ["y"], name="det")], {"x": rand((2, 2))}, ["y"])
    f = save(tmp_path, m)
    assert main(["compile", f, "-o", str(tmp_path / "out")]) == 1
    assert capsys.readouterr().err.strip() == f"{f}: error: node 'det' (Det): unsupported operator Det"


def test_missing_file(tmp_path, capsys):
    assert main(["check", str(tmp_path / "none.onnx")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_corrupt_file_in_a_subprocess(tmp_path):
    f = tmp_path / "bad.onnx"
    f.write_bytes(b"\x0a\xff\xff\xff garbage")
    proc = subprocess.run([sys.executable, "-m", "aot.cli", "run", str(f)], cwd=ROOT,
                          capture_output=True, text=True)
    assert proc.returncode == 1
    assert proc.stderr.startswith(f"{f}: error: cannot read the ONNX model: ")
    assert "Traceback" not in proc.stderr
