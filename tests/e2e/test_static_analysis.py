"""The generated C under static analyzers: ``gcc -fanalyzer`` and
``clang --analyze``, 0 warnings.

The C analysed: the MLPerf Tiny models (dataflow kernels: convolutions,
depthwise convolutions, pooling, dense, softmax; clang on all four, gcc on
the smallest, see below), a pack of four random whole-language programs (the
program backend: object pool, reference counts, ADT cells, closures,
pattern matching), a pack of random operator chains (fused elementwise,
broadcast, reduction and layout kernels) and six corpus programs (tier
B, packed).  Each artifact is written with ``build=False`` and every
``src/*.c`` is analysed with the artifact's include paths, ``-std=c99``.

Suppressions: :data:`SUPPRESSED` lists (file, checker, message) with the
reason each is a false positive; one entry (gcc's analyzer and the
memcpy bit casts of the float16 helper).

Cost: gcc's analyzer explores paths through the kernels' loop nests and
takes about 90 CPU seconds on ds_cnn's 450 KB of C (4.5 MB for the
autoencoder, whose dense weights are initialisers), so gcc sees the
autoencoder's kernels only through the same templates in the chains and
the packs, and ds_cnn (the smallest model holding every layer kind of the
four) under the ``slow`` marker.  clang's analyzer takes under a second per
model.

:func:`test_analyzers_report_a_planted_bug` proves the set-up is live: a
null dereference and an out-of-bounds write, built the same way, must be
reported by both.

Reported by this test (CPU seconds on the CI machine are in the README's
"Reliability" section): 0 warnings from each analyzer.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import aot

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "fuzz"))  # the fuzzer's generators

#: (file name, checker, message pattern) -> why it is a false positive
SUPPRESSED: dict[tuple[str, str, str], str] = {
    ("aot_kernel_helpers.h", "-Wanalyzer-use-of-uninitialized-value",
     r"use of uninitialized value ‘\*\(unsigned int \*\)&(shifted|f|bits)’"):
        "aot_f16_to_f32 type-puns with memcpy (float <-> uint32_t, the C99 way that "
        "compilers turn into a register move); gcc 12's analyzer does not model memcpy "
        "between scalars of different types and calls the source uninitialized, though "
        "each is assigned just before (shifted, f, bits); clang's analyzer agrees it is "
        "fine, and the function is checked on all 65,536 halves (tests/emit)",
}

GCC = ["gcc", "-std=c99", "-fanalyzer", "-O0", "-c", "-o", "/dev/null"]
CLANG = ["clang", "--analyze", "-std=c99", "-Xanalyzer", "-analyzer-output=text",
         "-o", "/dev/null"]

WARNING = re.compile(r"^(?P<where>[^:\n]+:\d+:\d+): warning: (?P<what>.*?)"
                     r"(?: \[(?P<checker>[^\]]+)\])?$", re.M)


def analyze(tool: list[str], root: Path, timeout: float = 900) -> list[str]:
    """The warnings (not suppressed) of ``tool`` on every C file of the
    artifact at ``root``."""
    includes = [f"-I{p}" for p in (root / "include", root / "runtime_c") if p.is_dir()]
    found = []
    for c in sorted((root / "src").glob("*.c")):
        r = subprocess.run([*tool, *includes, str(c)], capture_output=True, text=True,
                           timeout=timeout)
        assert r.returncode == 0 or "warning:" in r.stderr, r.stderr[-3000:]
        for m in WARNING.finditer(r.stderr):
            checker = m.group("checker") or ""
            where, what = m.group("where"), m.group("what")
            if not any(Path(where.split(":")[0]).name == name and checker.endswith(check)
                       and re.search(pattern, what) for name, check, pattern in SUPPRESSED):
                found.append(f"{where}: {what} [{checker}]")
    return found


def need(tool: str) -> None:
    if shutil.which(tool) is None:
        pytest.fail(f"{tool} is not installed (make deps / scripts/install-ci-deps.sh)")


# ------------------------------------------------------------ the artifacts

def _mlperf(name: str, out: Path) -> Path:
    spec = importlib.util.spec_from_file_location(
        "mlperf_tiny_models", ROOT / "examples" / "mlperf_tiny" / "models.py")
    models = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(models)
    aot.compile(aot.from_onnx(models.build(name)), out, name=name, build=False)
    return out


def _lang_pack(out: Path) -> Path:
    from campaign import Prepared, _lang_pack as pack, item_seed, make_item, prepare
    preps = []
    k = 0
    while len(preps) < 4:
        p = prepare(make_item("lang", item_seed(7, "lang", k), slot=len(preps)))
        k += 1
        if isinstance(p, Prepared):
            preps.append(p)
    mod, _ = pack(preps)
    # random programs: some grow their pool with the input (the caller sizes it)
    aot.compile(mod, out, name="langpack", build=False, pool_bytes=1 << 18)
    return out


def _chain_pack(out: Path) -> Path:
    from campaign import Prepared, item_seed, make_item, pack_modules, prepare
    preps = [p for k in range(12)
             if isinstance(p := prepare(make_item("chain", item_seed(7, "chain", k))), Prepared)]
    aot.compile(pack_modules(preps), out, name="chains", build=False)
    return out


def _corpus(out: Path) -> Path:
    from c_harness import pack
    from test_corpus_semantics import CORPUS, diverges, has_main, ill_typed, load, records
    if not CORPUS.exists():
        pytest.fail("../shared/corpus is not beside the repository")
    texts = []
    for rec in records("B"):
        if ill_typed(rec) or diverges(rec) or not has_main(rec):
            continue
        try:
            mod = aot.infer_types(load(rec))
            if any(not getattr(p.checked_type, "is_static", False) for p in mod["main"].params):
                continue
            aot.compile(mod, tempfile.mkdtemp(), name="probe", build=False)
        except aot.DiagnosticError:
            continue
        from aot.ir.printer import print_module
        texts.append(print_module(mod))
        if len(texts) == 6:
            break
    assert len(texts) == 6, len(texts)
    from c_harness import Case
    aot.compile(pack([Case(f"c{i}", t, []) for i, t in enumerate(texts)]), out,
                name="corpus", build=False)
    return out


ARTIFACTS = {
    "langpack": _lang_pack, "chains": _chain_pack, "corpus": _corpus,
    **{f"mlperf-{n}": (lambda out, n=n: _mlperf(n, out))
       for n in ("ds_cnn", "resnet8", "mobilenet_v1_025", "fc_autoencoder")},
}

#: what gcc's analyzer sees (module docstring: its cost)
GCC_SET = ["langpack", "chains", "corpus"]
GCC_SLOW_SET = ["mlperf-ds_cnn"]


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory):
    made: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in made:
            made[name] = ARTIFACTS[name](tmp_path_factory.mktemp(name.replace("-", "_")))
        return made[name]
    return get


@pytest.mark.parametrize("name", sorted(ARTIFACTS))
def test_clang_analyzer_is_silent(artifacts, name):
    need("clang")
    found = analyze(CLANG, artifacts(name))
    assert not found, f"clang --analyze on {name}:\n" + "\n".join(found)


@pytest.mark.parametrize("name", GCC_SET + [pytest.param(n, marks=pytest.mark.slow)
                                            for n in GCC_SLOW_SET])
def test_gcc_analyzer_is_silent(artifacts, name):
    need("gcc")
    found = analyze(GCC, artifacts(name))
    assert not found, f"gcc -fanalyzer on {name}:\n" + "\n".join(found)


PLANTED = """\
#include <stddef.h>
#include <stdint.h>
static int32_t cells[4];
int32_t planted_null(int32_t k) {
    int32_t *p = NULL;
    if (k > 2) { p = &cells[0]; }
    return *p;                       /* NULL when k <= 2 */
}
void planted_oob(void) {
    int32_t local[4];
    for (int i = 0; i <= 4; i++) { local[i] = i; }   /* writes local[4] */
    cells[0] = local[3];
}
"""


def test_analyzers_report_a_planted_bug(tmp_path):
    need("gcc")
    need("clang")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "planted.c").write_text(PLANTED)
    for tool, what in ((GCC, "gcc"), (CLANG, "clang")):
        found = analyze(tool, tmp_path)
        assert any("null" in f.lower() or "NULL" in f for f in found), (what, found)
