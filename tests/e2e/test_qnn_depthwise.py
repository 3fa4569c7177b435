"""The int8 depthwise 3x3 kernel with the Arm DSP extension
(aot/emit/lower/ops/qnn_depthwise.py) against the interpreter, on both
paths of its runtime helpers:

* the portable C of a host build: one program of every shape in
  tests/cases/qnn_depthwise.py (stride 1 and 2, padding 0 and 1 on each
  side, odd widths, rows of 4 bytes and of 2 and 3, maps of one row, batch 2, input zero
  points -128..127 and 0, fused requantization), one build;
* the ACLE intrinsics of a Cortex-M4 build under QEMU (``__ARM_FEATURE_DSP``):
  a network of the same layers through examples/embedded, bit-exact
  against the interpreter, with a corrupted expected value that must FAIL.

The kernel is checked to be selected (and not under ``--tuning simd``).
The saturating narrowings every int8 epilogue ends with
(``aot_sat_i32_{i8,i16,u8,u16}``: ``SSAT``/``USAT`` under
``__ARM_FEATURE_SAT``, min/max elsewhere) and the kernel's ``aot_smladx``
are checked on edge values against the kernel interpreter on both
paths.  The Cortex-M tests need
arm-none-eabi-gcc and qemu-system-arm and are skipped, saying so, without
them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import aot
from aot.emit.kernel import ir as K
from aot.emit.kernel.evaluate import evaluate
from aot.ir.dtype import DType
from c_harness import check_cases
from cases.qnn_depthwise import CASES, SELECTED, layer, network
from test_ops_c import case
from helper_programs import needs_arm, run_cortex_m4f, run_host
from test_qnn_dsp import ACCS, WORDS, needs_cc

REPO = Path(__file__).resolve().parents[2]
EMBEDDED = REPO / "examples" / "embedded"



def _cases():
    out = []
    for c in CASES:
        out.append(case(f"dw:{c.name}", [("x", c.shape, "int8")], layer(c, "%x"),
                        lo=-128, hi=127))
    return out


def test_portable_path_matches_interpreter():
    check_cases(_cases(), name="dw")


def test_kernel_is_selected(tmp_path):
    for c in CASES:
        text = f'def @main(%x: Tensor[{c.shape}, int8]) {{\n  {layer(c, "%x")}\n}}\n'
        art = aot.compile(aot.parse(text), tmp_path / c.name, name="dw", build=False)
        source = (art.root / "src" / "dw.c").read_text()
        assert ("aot_smlad" in source) == (c.name in SELECTED), c.name
    c = CASES[0]
    text = f'def @main(%x: Tensor[{c.shape}, int8]) {{\n  {layer(c, "%x")}\n}}\n'
    art = aot.compile(aot.parse(text), tmp_path / "simd", name="dw", build=False,
                      tuning="simd")
    assert "aot_smlad" not in (art.root / "src" / "dw.c").read_text()


@pytest.fixture(scope="module")
def model_file(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("dw")
    (d / "dw_int8.relay").write_text(network())
    return d


def _make(model_dir: Path, goal: str, corrupt: int = 0) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "-s", "-C", str(EMBEDDED), goal, "MODEL=dw_int8",
                           f"MODEL_FILE={model_dir / 'dw_int8.relay'}", "REFERENCE=interp",
                           f"BUILD={model_dir / 'build'}", f"CORRUPT={corrupt}",
                           f"PYTHON={sys.executable}"],
                          capture_output=True, text=True, timeout=600)


def _assert(result: subprocess.CompletedProcess, ok: bool) -> None:
    text = result.stdout + result.stderr
    if ok:
        assert result.returncode == 0 and "PASS dw_int8" in text, text
        assert "mismatches 0" in text, text
    else:
        assert result.returncode != 0 and "FAIL dw_int8" in text, text


@needs_arm
def test_dsp_path_under_qemu(model_file):
    _assert(_make(model_file, "qemu"), True)
    _assert(_make(model_file, "qemu", corrupt=1), False)


# ------------------------------------------------- saturating narrowings

SAT = [("aot_sat_i32_i8", DType.INT8), ("aot_sat_i32_i16", DType.INT16),
       ("aot_sat_i32_u8", DType.UINT8), ("aot_sat_i32_u16", DType.UINT16)]
SAT_VALUES = [0, 1, -1, 127, 128, -128, -129, 255, 256, 32767, 32768, -32768, -32769, 65535,
              65536, 2 ** 31 - 1, -2 ** 31, 123456, -98765]


SMLADX = [(a, b, ACCS[(i + j) % len(ACCS)]) for i, a in enumerate(WORDS)
          for j, b in enumerate(WORDS)]


def _int(v: int) -> str:
    return f"{v}" if v != -2 ** 31 else "(-2147483647 - 1)"


def _sat_program() -> str:
    vals = ", ".join(_int(v) for v in SAT_VALUES)
    calls = " ".join(f"printf(\"%ld \", (long){name}(v[i]));" for name, _ in SAT)
    rows = ", ".join(f"{{{a}u, {b}u, {_int(acc)}}}" for a, b, acc in SMLADX)
    return f"""#include <stdio.h>
#include <stdint.h>
#include "aot_kernel_helpers.h"

static const int32_t v[] = {{{vals}}};
struct row {{ uint32_t a, b; int32_t acc; }};
static const struct row rows[] = {{{rows}}};

int main(void)
{{
    size_t i;
    for (i = 0; i < sizeof v / sizeof v[0]; ++i) {{
        {calls}
        printf("\\n");
    }}
    for (i = 0; i < sizeof rows / sizeof rows[0]; ++i) {{
        printf("%ld\\n", (long)aot_smladx(rows[i].a, rows[i].b, rows[i].acc));
    }}
    return 0;
}}
"""


def _sat_expected() -> list[str]:
    sat = [" ".join(str(int(evaluate(K.call(name, [K.Const(x, DType.INT32)], dt), {}, {})))
                    for name, dt in SAT) for x in SAT_VALUES]
    smladx = [str(int(evaluate(K.call("aot_smladx", [K.Const(a, DType.UINT32),
                                                    K.Const(b, DType.UINT32),
                                                    K.Const(acc, DType.INT32)], DType.INT32),
                               {}, {}))) for a, b, acc in SMLADX]
    return sat + smladx


@needs_cc
def test_saturating_helpers_portable_path(tmp_path):
    out = run_host(tmp_path, _sat_program())
    assert [line.strip() for line in out.splitlines()] == _sat_expected()


@needs_arm
def test_saturating_helpers_ssat_under_qemu(tmp_path):
    out, elf = run_cortex_m4f(tmp_path, _sat_program())
    dis = subprocess.run(["arm-none-eabi-objdump", "-d", str(elf)], check=True,
                         capture_output=True, text=True).stdout
    assert "ssat" in dis and "usat" in dis and "smladx" in dis
    assert [line.strip() for line in out.splitlines()] == _sat_expected()
