"""The generated C as C: warning-free builds with every available compiler,
pycparser parses it, only the entry symbol is exported, the runtime header
matches the helper catalogue, and firmware-style Make builds -- two models
in one program through their <name>.mk fragments."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import textwrap
from pathlib import Path

import numpy as np
import pytest
from pycparser import c_ast, c_parser

from aot.emit.build.artifact import build_artifact, build_artifacts, write_artifact
from aot.emit.build.library import compile_check
from aot.emit.c.helpers import HELPERS, MACROS
from aot.emit.plan.model import STATUS_CODES
from aot.emit.resources import runtime_dir
from aot.emit.build.toolchain import STRICT_FLAGS, available_toolchains
from artifact_plans import (SCALE, addscale_expected, addscale_plan, constants_plan,
                            half_bool_plan, tuple_plan)

TOOLCHAINS = available_toolchains()
COMPILERS = [t.kind.value for t in TOOLCHAINS]

PLANS = [addscale_plan, lambda: addscale_plan("stat", "static"), tuple_plan, half_bool_plan,
         constants_plan]

#: Warnings a strict firmware build might add on top of the project's own.
FIRMWARE_WARNINGS = ["-Wshadow", "-Wstrict-prototypes", "-Wmissing-prototypes", "-Wundef",
                     "-Wcast-qual", "-Wredundant-decls", "-Wconversion", "-Wdouble-promotion"]


def test_gcc_and_clang_are_tested():
    """The suite runs every compiler it finds; CI installs both."""
    assert "gcc" in COMPILERS
    if shutil.which("clang"):
        assert "clang" in COMPILERS


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory):
    root = tmp_path_factory.mktemp("artifacts")
    return [write_artifact(make(), root / f"a{i}") for i, make in enumerate(PLANS)]


@pytest.mark.parametrize("opt", ["-O0", "-O2", "-Os"])
@pytest.mark.parametrize("toolchain", TOOLCHAINS, ids=lambda t: t.kind.value)
def test_warning_free_with_every_compiler(artifacts, toolchain, opt):
    """build_artifacts compiles with -std=c99 -Wall -Wextra -Wpedantic
    -Werror; a single warning fails the build."""
    assert {"-std=c99", "-Werror", "-Wpedantic"} <= set(STRICT_FLAGS)
    libraries = build_artifacts(artifacts, toolchain=toolchain.with_opt_flags(opt),
                                extra_flags=FIRMWARE_WARNINGS)
    assert all(lib.is_file() for lib in libraries)


@pytest.mark.parametrize("toolchain", TOOLCHAINS, ids=lambda t: t.kind.value)
def test_only_the_entry_functions_are_exported(artifacts, toolchain):
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("nm is not installed")
    for art in artifacts:
        library = build_artifact(art, toolchain=toolchain)
        listing = subprocess.run([nm, "-g", "--defined-only", str(library)], check=True,
                                 capture_output=True, text=True).stdout
        symbols = sorted(line.split()[-1] for line in listing.splitlines()
                         if len(line.split()) == 3)
        public = [f"{art.name}_run"]
        if art.metadata["arena"] == "static":       # the reentrant entry and its context
            public += [f"{art.name}_ctx_init", f"{art.name}_run_ctx"]
        assert symbols == sorted(public), (art.name, listing)


# ---------------------------------------------------------------- pycparser

FAKE_LIBC = {
    "stdint.h": """
        typedef signed char int8_t; typedef short int16_t; typedef int int32_t;
        typedef long long int64_t; typedef unsigned char uint8_t;
        typedef unsigned short uint16_t; typedef unsigned int uint32_t;
        typedef unsigned long long uint64_t;
        #define INT8_MIN (-128)
        #define INT8_MAX 127
        #define INT16_MIN (-32768)
        #define INT16_MAX 32767
        #define INT32_MIN (-2147483647 - 1)
        #define INT32_MAX 2147483647
        #define INT64_MIN (-9223372036854775807LL - 1)
        #define INT64_MAX 9223372036854775807LL
        #define UINT8_MAX 255
        #define UINT16_MAX 65535
        #define UINT32_MAX 4294967295u
        #define UINT64_MAX 18446744073709551615ull
        #define INT64_C(x) x ## LL
        #define UINT64_C(x) x ## ULL
        """,
    "stddef.h": "typedef unsigned long size_t;\n#define NULL ((void *)0)\n",
    "float.h": "#define FLT_RADIX 2\n#define FLT_MANT_DIG 24\n#define FLT_MAX_EXP 128\n"
               "#define FLT_MIN_EXP (-125)\n#define DBL_MANT_DIG 53\n#define DBL_MAX_EXP 1024\n"
               "#define DBL_MIN_EXP (-1021)\n",
    "string.h": "typedef unsigned long size_t;\nvoid *memcpy(void *, const void *, size_t);\n",
    "math.h": "#define NAN (0.0f / 0.0f)\n#define INFINITY (1e30f * 1e30f)\n"
              "float fmodf(float, float); double fmod(double, double);\n",
}


@pytest.fixture(scope="module")
def fake_libc(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("fake_libc")
    for name, text in FAKE_LIBC.items():
        guard = "FAKE_" + name.upper().replace(".", "_")
        (root / name).write_text(f"#ifndef {guard}\n#define {guard}\n"
                                 f"{textwrap.dedent(text)}\n#endif\n")
    return root


def _parse(path: Path, art_root: Path, fake_libc: Path) -> c_ast.FileAST:
    """Preprocess with gcc against the fake libc (system headers carry
    compiler extensions pycparser does not know) and parse."""
    text = subprocess.run(
        ["gcc", "-E", "-std=c99", "-nostdinc", f"-I{fake_libc}", f"-I{art_root / 'include'}",
         f"-I{art_root / 'runtime_c'}", str(path)],
        check=True, capture_output=True, text=True).stdout
    return c_parser.CParser().parse(text, str(path))


def test_pycparser_parses_every_generated_file(artifacts, fake_libc):
    for art in artifacts:
        source = art.root / "src" / f"{art.name}.c"
        unit = _parse(source, art.root, fake_libc)
        own = [n for n in unit.ext if n.coord is not None and n.coord.file == str(source)]
        functions = {n.decl.name: n.decl.storage for n in own if isinstance(n, c_ast.FuncDef)}
        kernels = [k["name"] for k in art.metadata["kernels"]]
        public = [f"{art.name}_run"]
        if art.metadata["arena"] == "static":       # the reentrant entry and its context
            public = [f"{art.name}_ctx_init", f"{art.name}_run", f"{art.name}_run_ctx"]
        assert set(functions) == {*kernels, *public}
        for name in public:
            assert functions.pop(name) == []
        assert all(storage == ["static"] for storage in functions.values()), functions
        data = [n for n in own if isinstance(n, c_ast.Decl)]
        assert all("static" in n.storage for n in data), [n.name for n in data]
        header = art.root / "include" / f"{art.name}.h"
        declared = [n for n in _parse(header, art.root, fake_libc).ext
                    if n.coord is not None and n.coord.file == str(header)]
        # a static arena: the context's typedef, its init, the entry, the reentrant entry
        header_names = [f"{art.name}_ctx", f"{art.name}_ctx_init", f"{art.name}_run",
                        f"{art.name}_run_ctx"] if len(public) > 1 else public
        assert [n.name for n in declared] == header_names


def test_pycparser_parses_the_runtime_header(fake_libc, tmp_path):
    unit = _parse(runtime_dir() / "aot_kernel_helpers.h", tmp_path, fake_libc)
    names = {n.decl.name for n in unit.ext if isinstance(n, c_ast.FuncDef)}
    assert set(HELPERS) <= names


# ---------------------------------------------------------- runtime header

@pytest.mark.parametrize("toolchain", TOOLCHAINS, ids=lambda t: t.kind.value)
def test_runtime_header_matches_the_helper_catalogue(toolchain):
    """Every catalogued helper, redeclared with its catalogued prototype
    after the header (a mismatch is a conflicting-types error), and every
    macro defined as a constant expression usable in a static initialiser."""
    lines = ['#include "aot_kernel_helpers.h"']
    lines += [f"{spec.prototype};" for spec in HELPERS.values()]
    lines += [f"static const double check_{m.lower()} = {m};" for m in MACROS]
    lines += ["double check_sum(void);", "double check_sum(void)", "{",
              "    return " + " + ".join(f"check_{m.lower()}" for m in MACROS) + ";", "}"]
    compile_check("\n".join(lines) + "\n", toolchain, include_dirs=[runtime_dir()])


def test_runtime_header_is_documented_c99():
    text = (runtime_dir() / "aot_kernel_helpers.h").read_text()
    assert text.startswith("/*") and "#ifndef AOT_KERNEL_HELPERS_H" in text
    assert text.isascii() and "//" not in re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    definitions = re.findall(r"^(static inline .*?)\(", text, re.M)
    assert definitions and all(d.startswith("static inline") for d in definitions)
    # at file scope: only static definitions, macros, comments and braces
    assert not re.search(r"^(?!static|#|\s|/\*| \*|[{}]|$|AOT_)", text, re.M)


def test_status_codes_are_distinct():
    values = [v for _, v, _ in STATUS_CODES]
    assert values[0] == 0 and len(set(values)) == len(values)


# ------------------------------------------------------ header macros in C

@pytest.mark.parametrize("compiler", COMPILERS)
def test_header_macros_as_seen_by_c(tmp_path, compiler):
    plan = tuple_plan()
    art = write_artifact(plan, tmp_path / "art")
    main = tmp_path / "macros.c"
    names = ["TUPLES_OK", "TUPLES_ERR_NULL", "TUPLES_ERR_POOL", "TUPLES_ARENA_BYTES",
             "TUPLES_ARENA_ALIGN", "TUPLES_POOL_BYTES", "TUPLES_CONSTANT_BYTES",
             "TUPLES_NUM_INPUTS", "TUPLES_NUM_OUTPUTS", "TUPLES_INPUT_0_SIZE",
             "TUPLES_INPUT_0_NDIM", "TUPLES_INPUT_0_DIM_0", "TUPLES_INPUT_1_SIZE",
             "TUPLES_INPUT_1_NDIM", "TUPLES_OUTPUT_2_BYTES"]
    prints = "\n".join(f'    printf("%s %ld\\n", "{n}", (long)({n}));' for n in names)
    main.write_text(f'#include <stdio.h>\n#include "tuples.h"\n#include "tuples.h"\n'
                    f"int main(void)\n{{\n{prints}\n    return 0;\n}}\n")
    exe = tmp_path / "macros"
    subprocess.run([compiler, *STRICT_FLAGS, f"-I{art.root / 'include'}", str(main), "-o",
                    str(exe)], check=True)
    out = dict(line.split() for line in subprocess.run(
        [str(exe)], check=True, capture_output=True, text=True).stdout.splitlines())
    assert {k: int(v) for k, v in out.items()} == {
        "TUPLES_OK": 0, "TUPLES_ERR_NULL": 1, "TUPLES_ERR_POOL": 2, "TUPLES_ARENA_BYTES": 16,
        "TUPLES_ARENA_ALIGN": 16, "TUPLES_POOL_BYTES": 0, "TUPLES_CONSTANT_BYTES": 0,
        "TUPLES_NUM_INPUTS": 2, "TUPLES_NUM_OUTPUTS": 3, "TUPLES_INPUT_0_SIZE": 4,
        "TUPLES_INPUT_0_NDIM": 1, "TUPLES_INPUT_0_DIM_0": 4, "TUPLES_INPUT_1_SIZE": 1,
        "TUPLES_INPUT_1_NDIM": 0, "TUPLES_OUTPUT_2_BYTES": 4}


# --------------------------------------------- two models, one firmware

SCALE2 = np.array([1.0, 2.0, -3.0, 0.5, 1e-3, 7.0], dtype=np.float32)
X = np.array([[1.0, -2.0, 3.5], [0.25, 8.0, -1.0]], dtype=np.float32)
Y = np.array([[0.5, 0.5, -0.5], [4.0, -9.0, 2.0]], dtype=np.float32)

MAIN_C = r"""
#include <stdio.h>
#include "m1.h"
#include "m2.h"

/* The caller's arena for m1: aligned through the union like the static
 * arena (16 bytes on this host). */
static union {
    unsigned char bytes[M1_ARENA_BYTES];
    long double align;
} arena1;

static const float x[M1_INPUT_0_SIZE] = {@X@};
static const float y[M1_INPUT_1_SIZE] = {@Y@};

int main(void)
{
    float out1[M1_OUTPUT_0_SIZE];
    float out2[M2_OUTPUT_0_SIZE];
    int i;
    int32_t s1 = m1_run(x, y, out1, arena1.bytes);
    int32_t s2 = m2_run(x, y, out2);
    printf("status %d %d\n", (int)s1, (int)s2);
    printf("null %d %d\n", (int)m1_run(NULL, y, out1, arena1.bytes), (int)m2_run(x, NULL, out2));
    for (i = 0; i < M1_OUTPUT_0_SIZE; ++i) {
        printf("m1 %a\n", (double)out1[i]);
    }
    for (i = 0; i < M2_OUTPUT_0_SIZE; ++i) {
        printf("m2 %a\n", (double)out2[i]);
    }
    return 0;
}
"""

MAKEFILE = """
# A firmware-style build: only the variables of the two fragments.
include ../models/m1/m1.mk
include {m2_mk}

CC ?= gcc
WARNINGS := -Wall -Wextra -Wpedantic -Werror {firmware_warnings}
CFLAGS := -Os $(WARNINGS) $(M1_CFLAGS) $(M2_CFLAGS) $(M1_INCLUDES) $(M2_INCLUDES)
LDLIBS := $(M1_LDLIBS) $(M2_LDLIBS)

SRCS := main.c $(M1_SRCS) $(M2_SRCS)
OBJS := $(addprefix build/,$(notdir $(SRCS:.c=.o)))
vpath %.c $(sort $(dir $(SRCS)))

app: $(OBJS)
\t$(CC) -o $@ $^ $(LDLIBS)

# The same program linked against the libraries aot built.
app_prebuilt: build/main.o $(M1_LIB) $(M2_LIB)
\t$(CC) -o $@ $^ $(LDLIBS)

build/%.o: %.c | build
\t$(CC) $(CFLAGS) -c $< -o $@

$(OBJS): $(M1_HEADERS) $(M2_HEADERS)

# a budget check from the fragments' memory figures
ifneq ($(shell test $(M1_ARENA_BYTES) -le 48 && echo ok),ok)
$(error m1 needs $(M1_ARENA_BYTES) bytes of arena)
endif

build:
\tmkdir -p build
"""


def _c_floats(a: np.ndarray) -> str:
    return ", ".join(f"{float(v).hex()}f" for v in a.reshape(-1))


@pytest.mark.parametrize("compiler", COMPILERS)
def test_two_models_in_one_firmware_through_their_make_fragments(tmp_path, compiler):
    make = shutil.which("make")
    if make is None:
        pytest.skip("make is not installed")
    models = tmp_path / "models"
    m1 = write_artifact(addscale_plan("m1"), models / "m1")
    m2 = write_artifact(addscale_plan("m2", "static", scale=SCALE2), models / "m2")
    assert m1.metadata["helpers"] == m2.metadata["helpers"] == ["aot_max_f32"]
    build_artifacts([m1, m2])
    firmware = tmp_path / "firmware"
    firmware.mkdir()
    (firmware / "main.c").write_text(MAIN_C.replace("@X@", _c_floats(X))
                                     .replace("@Y@", _c_floats(Y)))
    (firmware / "Makefile").write_text(MAKEFILE.format(
        m2_mk=models / "m2" / "m2.mk",          # one relative, one absolute include
        firmware_warnings=" ".join(FIRMWARE_WARNINGS)))
    env = dict(os.environ, CC=compiler)
    for target in ("app", "app_prebuilt"):
        subprocess.run([make, "-s", "-C", str(firmware), target], check=True, env=env,
                       capture_output=True, text=True)
        out = subprocess.run([str(firmware / target)], check=True, capture_output=True,
                             text=True).stdout.splitlines()
        assert out[0] == "status 0 0" and out[1] == "null 1 1"
        got1 = np.array([float.fromhex(line.split()[1]) for line in out if
                         line.startswith("m1 ")], dtype=np.float32)
        got2 = np.array([float.fromhex(line.split()[1]) for line in out if
                         line.startswith("m2 ")], dtype=np.float32)
        np.testing.assert_array_equal(got1, addscale_expected(X, Y, SCALE).reshape(-1))
        np.testing.assert_array_equal(got2, addscale_expected(X, Y, SCALE2).reshape(-1))
        assert not np.array_equal(got1, got2)
