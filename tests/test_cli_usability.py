"""The command line's small courtesies: --version, ``python -m aot``, help
that reads as plain text and documents every argument, a missing optional
package named with the pip command that installs it, the build cache's
commands, and a packaging configuration that installs without warnings."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import aot
from aot.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[1]


def run_python(*args: str, **env: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True,
                          timeout=120, env=environment, cwd=ROOT)


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"aot {aot.__version__}"


def test_python_dash_m_aot_is_the_command(tmp_path):
    program = tmp_path / "p.relay"
    program.write_text("def @main(%x: Tensor[(2), float32]) { %x + %x }")
    result = run_python("-m", "aot", "check", str(program))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "@main: fn (Tensor[(2), float32]) -> Tensor[(2), float32]"
    assert run_python("-m", "aot", "--version").stdout.strip() == f"aot {aot.__version__}"


def _subparsers():
    parser = build_parser()
    action = next(a for a in parser._actions if a.dest == "command")
    return parser, action.choices


def test_help_is_plain_text_and_every_argument_is_documented():
    parser, commands = _subparsers()
    texts = [parser.format_help()] + [p.format_help() for p in commands.values()]
    for text in texts:
        assert "``" not in text and ":func:" not in text, text
        assert "`" not in text, text
    for name, sub in commands.items():
        for action in sub._actions:
            if action.dest != "help":
                assert action.help, f"aot {name}: {action.dest} has no help"


def test_run_help_describes_file_input_and_entry():
    _, commands = _subparsers()
    text = re.sub(r"\s+", " ", commands["run"].format_help())
    assert "FILE the program: Relay text (.relay), an ONNX model" in text
    assert "--input NAME=VALUE the value of parameter NAME" in text
    assert "--entry FUNCTION the global function to run (default: main)" in text


@pytest.mark.parametrize("suffix, module, extra", [
    (".onnx", "onnx", "onnx"), (".tflite", "tflite", "tflite"), (".tflite", "flatbuffers", "tflite")])
def test_a_missing_importer_package_says_how_to_install_it(tmp_path, suffix, module, extra):
    model = tmp_path / f"model{suffix}"
    model.write_bytes(b"\0")
    code = (f"import sys; sys.modules[{module!r}] = None; from aot.cli import main; "
            f"sys.exit(main(['check', {str(model)!r}]))")
    result = run_python("-c", code)
    assert result.returncode == 1, result.stderr            # not 2: the command line is fine
    assert f"pip install 'aot[{extra}]'" in result.stderr
    assert f"needs the `{module}` package" in result.stderr
    assert "Traceback" not in result.stderr


def test_cache_info_and_clear(tmp_path, capsys, monkeypatch):
    from aot.emit.build import cache
    monkeypatch.setenv("AOT_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.setenv("AOT_CACHE_MAX_BYTES", "5M")
    root = cache.cache_root()
    for i in range(3):
        cache.atomic_write_bytes(cache.entry_path(root, "objects", f"{i:02x}" * 32, "x.o"),
                                 b"x" * 1000)
    assert main(["cache", "info"]) == 0
    out = capsys.readouterr().out
    assert f"{root}: 3 entries, 2.9 KiB; limit 5.0 MiB" in out
    assert main(["cache", "clear"]) == 0
    assert capsys.readouterr().out.strip() == f"{root}: deleted 3 entries, 2.9 KiB"
    assert cache.entries(root) == []
    assert main(["cache", "info"]) == 0
    assert f"{root}: 0 entries, 0 bytes" in capsys.readouterr().out


def test_a_bad_cache_limit_is_a_diagnostic(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("AOT_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.setenv("AOT_CACHE_MAX_BYTES", "lots")
    assert main(["cache", "info"]) == 1
    assert "$AOT_CACHE_MAX_BYTES='lots': expected a size in bytes" in capsys.readouterr().err


def test_the_license_is_an_spdx_expression():
    """setuptools deprecates `project.license` as a table (it printed 60
    lines of warnings during `make run`); the string form needs setuptools
    77, which the build requirements say."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert config["project"]["license"] == "Apache-2.0"
    assert "setuptools>=77" in config["build-system"]["requires"]
