"""The README's quick start for firmware, run as written on a fresh clone.

A fresh clone is the repository's files (``git ls-files``: what a clone
holds, plus files not yet committed) copied into a temporary directory,
without ``.venv`` or any build output.  Two situations:

* After ``make install``: the clone gets a ``.venv`` whose site-packages
  point at this interpreter's packages (what ``make install`` would put
  there, without downloading them again) and whose ``bin/aot`` is the
  console script pip writes.  The README's commands then run verbatim in
  ``bash`` from the clone's root, with no ``PYTHON``, ``PYTHONPATH`` or
  virtual environment of ours in the environment: the Cortex-M4F run of
  DS-CNN under QEMU must print PASS, and ``aot compile model.onnx`` must
  write the library.
* Before it: no ``.venv``; the example must set the environment up with the
  root's ``make install``.  ``python3.11``/``python3`` are replaced on PATH
  by a stub that logs its arguments and fails, so the test sees the
  ``-m venv .venv`` the root Makefile runs without downloading anything.
"""

from __future__ import annotations

import os
import re
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text()

needs_tools = pytest.mark.skipif(
    shutil.which("make") is None or shutil.which("cc") is None
    or shutil.which("arm-none-eabi-gcc") is None or shutil.which("qemu-system-arm") is None,
    reason="needs make, a host C compiler, arm-none-eabi-gcc and qemu-system-arm "
           "(make deps)")


def quick_start_commands() -> list[str]:
    """The indented command lines of the README's "Quick start" section
    that concern firmware and the command line (not make run/test/bench,
    which the suite itself is)."""
    section = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    lines = [line[4:] for line in section.splitlines() if line.startswith("    ")]
    lines = [line for line in lines if line.strip() and not line.startswith(" ")]
    wanted = [line for line in lines
              if not re.match(r"make (run|test|bench)\b", line)]
    return wanted


def tracked_files() -> list[str]:
    result = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard"], cwd=REPO, capture_output=True, check=False)
    if result.returncode != 0:
        pytest.fail(f"git ls-files failed in {REPO}: {result.stderr.decode()}")
    return [name for name in result.stdout.decode().split("\0")
            if name and (REPO / name).is_file()]


def fresh_clone(directory: Path) -> Path:
    clone = directory / "aot"
    for name in tracked_files():
        target = clone / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, target)
    return clone


def installed_venv(clone: Path) -> None:
    """``clone/.venv`` as ``make install`` leaves it, with this
    interpreter's packages and the clone's aot."""
    venv = clone / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; "
                              "print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    ours = [p for p in site.getsitepackages() if Path(p).is_dir()]
    Path(purelib, "_aot_test_env.pth").write_text("\n".join([str(clone), *ours]) + "\n")
    script = venv / "bin" / "aot"
    script.write_text(f"#!{python}\nimport sys\nfrom aot.cli import main\nsys.exit(main())\n")
    script.chmod(0o755)
    (venv / ".installed").touch()


def user_environment(**extra: str) -> dict[str, str]:
    """The environment of a user's shell: none of our python settings, and
    no virtual environment's bin on PATH."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHON", "PYTHONPATH", "VIRTUAL_ENV", "MAKEFLAGS", "MAKELEVEL",
                        "AOT_DEPS", "CC", "AR")}
    prefix = Path(sys.prefix).resolve()
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep)
                                  if p and not Path(p).resolve().is_relative_to(prefix))
    env.update(extra)
    return env


def test_the_quick_start_lists_the_commands_this_test_runs():
    assert quick_start_commands() == [
        "make -C examples/embedded qemu MODEL=ds_cnn   # Cortex-M4F under QEMU: PASS/FAIL",
        ". .venv/bin/activate",
        "aot compile model.onnx -o out/kws --name kws --input-shape input=1,1,49,10",
    ]


@needs_tools
@pytest.mark.slow
def test_the_quick_start_runs_as_written_on_a_fresh_clone(tmp_path):
    pytest.importorskip("onnx", reason="the MLPerf Tiny builder needs the onnx package")
    clone = fresh_clone(tmp_path)
    installed_venv(clone)
    # the user's own model.onnx: DS-CNN, whose input is named `input`
    subprocess.run([sys.executable, str(clone / "examples/mlperf_tiny/models.py"), "--out",
                    str(tmp_path / "models"), "ds_cnn"], check=True, capture_output=True)
    shutil.copy(tmp_path / "models" / "ds_cnn.onnx", clone / "model.onnx")
    script = "set -e\n" + "\n".join(quick_start_commands()) + "\n"
    result = subprocess.run(["bash", "-c", script], cwd=clone, capture_output=True, text=True,
                            timeout=900, env=user_environment())
    report = f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    assert result.returncode == 0, report
    assert "PASS ds_cnn" in result.stdout.splitlines(), report
    assert "setting up the project's environment" not in result.stderr, report
    assert (clone / "out" / "kws" / "lib" / "libkws.a").is_file(), report
    assert (clone / "out" / "kws" / "kws.mk").is_file(), report


@needs_tools
def test_the_example_sets_up_the_environment_when_it_is_missing(tmp_path):
    clone = fresh_clone(tmp_path)
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    log = tmp_path / "python.log"
    for name in ("python3.11", "python3"):
        stub = stubs / name
        stub.write_text(f'#!/bin/sh\necho "{name} $*" >> {log}\nexit 3\n')
        stub.chmod(0o755)
    env = user_environment()
    env["PATH"] = f"{stubs}{os.pathsep}{env['PATH']}"
    result = subprocess.run(["make", "-C", "examples/embedded", "qemu", "MODEL=ds_cnn"],
                            cwd=clone, capture_output=True, text=True, timeout=300, env=env)
    report = f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    assert result.returncode != 0, report          # the stub python cannot make a venv
    assert "setting up the project's environment" in result.stderr, report
    assert f"make -C {clone} install" in result.stdout + result.stderr, report
    assert log.read_text().splitlines()[0] == "python3.11 -m venv .venv", report
