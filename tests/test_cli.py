"""The `aot` command line: results, diagnostics and exit codes, never a
traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from aot.cli import main

ROOT = Path(__file__).resolve().parents[1]


def write(tmp_path: Path, text: str, name: str = "prog.relay") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_check_prints_signatures(tmp_path, capsys):
    f = write(tmp_path, "def @main(%x: Tensor[(2), float32]) { %x + %x }")
    assert main(["check", f]) == 0
    assert capsys.readouterr().out.strip() == \
        "@main: fn (Tensor[(2), float32]) -> Tensor[(2), float32]"


def test_run_with_inputs(tmp_path, capsys):
    f = write(tmp_path, "def @main(%x: Tensor[(3), int32], %k: int32) { %x * %k }")
    npy = tmp_path / "x.npy"
    np.save(npy, np.array([1, 2, 3], dtype=np.int32))
    assert main(["run", f, "--input", f"x={npy}", "--input", "k=2"]) == 0
    assert capsys.readouterr().out.strip() == "[2, 4, 6]"


def test_run_prints_adt_values(tmp_path, capsys):
    f = write(tmp_path, "def @main() { @map(fn (%x: int32) { %x + 1 }, Cons(1, Cons(2, Nil))) }")
    assert main(["run", f]) == 0
    assert capsys.readouterr().out.strip() == "Cons(2, Cons(3, Nil))"


def test_missing_input_is_a_usage_error(tmp_path, capsys):
    f = write(tmp_path, "def @main(%x: int32) { %x }")
    assert main(["run", f]) == 2
    assert "needs --input for: x" in capsys.readouterr().err


def test_wrong_shaped_input_is_a_diagnostic(tmp_path, capsys):
    f = write(tmp_path, "def @main(%x: Tensor[(3), int32]) { %x }")
    assert main(["run", f, "--input", "x=[1, 2]"]) == 1
    err = capsys.readouterr().err
    assert "error:" in err and "x" in err and "Traceback" not in err


def test_type_error_has_location_and_caret(tmp_path, capsys):
    f = write(tmp_path, "def @main(%x: float32) {\n  %x + 1\n}\n")
    assert main(["check", f]) == 1
    err = capsys.readouterr().err
    assert f"{f}:2:3: error:" in err
    assert "^" in err


def test_syntax_error(tmp_path, capsys):
    f = write(tmp_path, "def @main( {")
    assert main(["check", f]) == 1
    assert f"{f}:1:" in capsys.readouterr().err


def test_missing_file(capsys):
    assert main(["check", "/nonexistent/x.relay"]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_ops_lists_catalogue(capsys):
    assert main(["ops"]) == 0
    out = capsys.readouterr().out
    assert "add" in out and "broadcast" in out


@pytest.mark.parametrize("text", ["def @main( {", "fn (%x) { %y }", "1 + 1f", "\x00\x01"])
def test_no_traceback_in_a_real_process(tmp_path, text):
    f = write(tmp_path, text)
    proc = subprocess.run([sys.executable, "-m", "aot.cli", "check", f], capture_output=True,
                          text=True, cwd=ROOT)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert "error:" in proc.stderr


def test_text_that_is_not_utf8_is_a_diagnostic(tmp_path, capsys):
    path = tmp_path / "latin1.relay"
    path.write_bytes(b"def @main() {\n  1 /* caf\xe9 */\n}\n")
    assert main(["check", str(path)]) == 1
    err = capsys.readouterr().err
    assert f"{path}:2:11: error: not UTF-8 text (byte 0xe9)" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("name, why", [
    ("_Bool", "reserves identifiers that start with `_`"),
    ("__m", "reserves identifiers that start with `_`"),
    ("x" * 300, "300 characters, at most 64"),
    ("aot", "the C runtime's own prefixes"),
    ("AOT_net", "the C runtime's own prefixes"),
    ("stdint", "would shadow the standard header <stdint.h>"),
    ("Math", "would shadow the standard header <math.h>"),
    ("static", "C keyword"),
    ("my-model", "must be a C identifier"),
])
def test_model_names_that_would_break_the_c_are_refused_first(tmp_path, capsys, name, why):
    """Checked before the file is even read: the file does not exist."""
    out = tmp_path / "out"
    assert main(["compile", str(tmp_path / "missing.relay"), "-o", str(out),
                 "--name", name]) == 1
    err = capsys.readouterr().err
    assert f"invalid model name `{name}`" in err and why in err
    assert not out.exists()


@pytest.mark.parametrize("make_target", ["a file", "below a file"])
def test_an_output_that_cannot_be_written_is_a_diagnostic(tmp_path, capsys, make_target):
    blocker = tmp_path / "blocker"
    blocker.write_text("not a directory")
    out = blocker if make_target == "a file" else blocker / "sub"
    prog = write(tmp_path, "def @main(%x: Tensor[(2,), float32]) { %x * 2f }")
    assert main(["compile", prog, "-o", str(out), "--name", "net", "--no-build"]) == 1
    err = capsys.readouterr().err
    assert f"{out}: error: cannot write the artifact" in err
    assert "Traceback" not in err


def test_a_closed_pipe_ends_the_listing_quietly():
    """`aot ops | head -1`: the reader goes away; no BrokenPipeError."""
    result = subprocess.run(f"{sys.executable} -m aot.cli ops | head -1", shell=True,
                            capture_output=True, text=True, timeout=120)
    assert result.stdout.count("\n") == 1
    assert "Traceback" not in result.stderr and "BrokenPipe" not in result.stderr


def test_a_param_file_of_another_dtype_is_refused(tmp_path, capsys):
    """No silent narrowing: a float64 file for a float32 parameter."""
    prog = write(tmp_path, "def @main(%x: Tensor[(2,), float32], %w: Tensor[(2,), float32]) "
                           "{ %x * %w }")
    np.save(tmp_path / "w.npy", np.array([1.0, 2.0]))            # float64, exact in float32
    assert main(["compile", prog, "-o", str(tmp_path / "out"), "--name", "net", "--no-build",
                 "--param", f"w={tmp_path / 'w.npy'}"]) == 2
    err = capsys.readouterr().err
    assert "--param w: the file holds float64, the parameter is float32" in err
    np.save(tmp_path / "w.npy", np.array([1.0, 2.0], np.float32))
    assert main(["compile", prog, "-o", str(tmp_path / "out"), "--name", "net", "--no-build",
                 "--param", f"w={tmp_path / 'w.npy'}"]) == 0
