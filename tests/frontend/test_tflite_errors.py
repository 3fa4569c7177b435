"""Bad TFLite input: a diagnostic naming the file and, where there is one,
the operator and its index -- from ``aot.from_tflite`` and from the CLI
(``file: error: ...``, exit status 1, no traceback).  Also the CLI's
check/run/compile on a good model."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tflite")

import aot  # noqa: E402
from aot.cli import main  # noqa: E402

MODELS = Path(__file__).resolve().parent / "tflite_models"
ROOT = Path(__file__).resolve().parents[2]


def bad_files(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    """name -> (file, a fragment the diagnostic must contain)."""
    rng = np.random.default_rng(0)
    noise = tmp_path / "noise.tflite"
    noise.write_bytes(rng.integers(0, 256, 3000, dtype=np.uint8).tobytes())
    truncated = tmp_path / "truncated.tflite"
    truncated.write_bytes((MODELS / "cnn_i8.tflite").read_bytes()[:1500])
    return {
        "noise": (noise, "not a TFLite model"),
        "truncated": (truncated, "truncated or corrupt"),
        "unsupported": (MODELS / "bad_unsupported_op.tflite",
                        "operator #1 (SIN): unsupported operator SIN"),
        "custom": (MODELS / "bad_custom_op.tflite",
                   "operator #0 (CUSTOM 'MyCustomOp'): custom operators are not supported"),
        "dynamic": (MODELS / "bad_dynamic_shape.tflite",
                    "operator #0 (RELU): tensor 'x' has a dynamic shape (shape_signature "
                    "[-1, 3])"),
        "version": (MODELS / "bad_schema_version.tflite", "schema version 2; only version 3"),
    }


CASES = ["noise", "truncated", "unsupported", "custom", "dynamic", "version"]


@pytest.mark.parametrize("case", CASES)
def test_diagnostic(tmp_path, case):
    path, fragment = bad_files(tmp_path)[case]
    with pytest.raises(aot.DiagnosticError) as info:
        aot.from_tflite(path)
    text = info.value.render()
    assert fragment in text
    assert text.startswith(f"{path}: error: ")


@pytest.mark.parametrize("case", CASES)
def test_cli_reports_without_traceback(tmp_path, case):
    path, fragment = bad_files(tmp_path)[case]
    proc = subprocess.run([sys.executable, "-m", "aot.cli", "check", str(path)], cwd=ROOT,
                          capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 1, proc.stderr
    assert f"{path}: error: " in proc.stderr and fragment in proc.stderr
    assert "Traceback" not in proc.stderr


def test_truncated_everywhere_is_a_diagnostic():
    """Every prefix of a model either imports or fails with a diagnostic."""
    data = (MODELS / "conv2d_i8.tflite").read_bytes()
    for n in range(0, len(data), 97):
        try:
            aot.from_tflite(data[:n])
        except aot.DiagnosticError:
            pass


def test_cli_check_run_compile(tmp_path, capsys):
    model = str(MODELS / "relu6_f32.tflite")
    assert main(["check", model]) == 0
    assert capsys.readouterr().out.strip() == \
        "@main: fn (Tensor[(3, 5), float32]) -> Tensor[(3, 5), float32]"
    x = np.linspace(-8, 8, 15, dtype=np.float32).reshape(3, 5)
    np.save(tmp_path / "x.npy", x)
    assert main(["run", model, "--input", f"x={tmp_path / 'x.npy'}"]) == 0
    got = np.asarray(eval(capsys.readouterr().out.strip()), np.float32)  # noqa: S307
    np.testing.assert_array_equal(got, np.clip(x, 0, 6))
    out = tmp_path / "art"
    assert main(["compile", model, "-o", str(out), "--name", "relu6"]) == 0
    assert (out / "lib" / "librelu6.a").is_file()


def test_readme_block_runs(tmp_path, monkeypatch):
    """The README's TFLite block, on one of the test models."""
    readme = (ROOT / "README.md").read_text()
    block = next(b for b in readme.split("```python\n")[1:] if "aot.from_tflite(" in b)
    (tmp_path / "model.tflite").write_bytes((MODELS / "relu_i8.tflite").read_bytes())
    monkeypatch.chdir(tmp_path)
    env: dict = {}
    exec(block.split("```")[0], env)  # noqa: S102 - our own README
    x = np.arange(-128, 127, 17, dtype=np.int8).reshape(3, 5)
    np.testing.assert_array_equal(aot.load(env["art"])(x), aot.interpret(env["mod"], x))
