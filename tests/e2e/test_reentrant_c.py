"""The reentrant entries and the stack budget in C, without Python.

* Two pthreads run one static-arena model and one pool-backed program
  side by side, each on a context of its own (``<name>_run_ctx``), 1,000
  calls each with inputs of their own; every result must equal the
  single-threaded one bit for bit, and that one the interpreter's.
* A deep non-tail recursion on a thread with a 256 KiB stack: 9,000
  nested calls (under the default ``max_depth`` of 10,000, which counts
  calls, not bytes) used to overflow the stack; the stack budget
  (``<NAME>_STACK_BYTES`` by default, or the context's) makes it return
  ``ERR_DEPTH``, while a recursion within the budget computes the right
  sum.  The control run with an unbounded budget must die of the overflow
  -- which shows the scenario is real and the test can fail.

Built with every available compiler, at -O0 and -O2, with the strict
warning flags (the test's own main too).
"""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import numpy as np
import pytest

import aot
from aot.emit.build.toolchain import STRICT_FLAGS, available_toolchains

from c_harness import assert_matches

COMPILERS = [t.kind.value for t in available_toolchains()]
HEADER = '#[version = "0.0.5"]\n'

DATAFLOW = HEADER + """
def @main(%x: Tensor[(24, 24), float32], %y: Tensor[(24, 24), float32]) -> Tensor[(24, 24), float32] {
  let %a = nn.dense(tanh(%x), %y);
  let %b = nn.dense(%a, %x);
  add(nn.dense(%b, %a), %y)
}
"""

PROGRAM = HEADER + """
def @build(%n: int32, %k: int32) -> List[int32] {
  if (%n == 0) { Nil } else { Cons(%n * %k, @build(%n - 1, %k)) }
}
def @main(%n: int32, %k: int32) -> int32 {
  let %xs = @map(fn (%v: int32) -> int32 { %v + %k }, @build(%n, %k));
  @foldl(fn (%acc: int32, %v: int32) -> int32 { %acc + %v }, 0, %xs)
}
"""

DEEP = HEADER + """
def @sum_to(%n: int32) -> int32 {
  if (%n == 0) { 0 } else { %n + @sum_to(%n - 1) }
}
def @main(%n: int32) -> int32 { @sum_to(%n) }
"""

MAIN_C = r"""
#define _POSIX_C_SOURCE 200112L
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "rdf.h"
#include "rprog.h"
#include "rdeep.h"

#define CALLS 1000

static const float xs[2][RDF_INPUT_0_SIZE] = {@XS@};
static const float ys[2][RDF_INPUT_1_SIZE] = {@YS@};
static const int32_t ns[2] = {@NS@};
static const int32_t ks[2] = {@KS@};
static float want[2][RDF_OUTPUT_0_SIZE];
static int32_t prog_want[2];

static rdf_ctx df_contexts[2];
static rprog_ctx prog_contexts[2];
static int bad[2];
static int ids[2] = {0, 1};

static void *worker(void *arg)
{
    int t = *(int *)arg;
    int i;
    float out[RDF_OUTPUT_0_SIZE];
    int32_t got = 0;
    for (i = 0; i < CALLS; i++) {
        if (rdf_run_ctx(&df_contexts[t], xs[t], ys[t], out) != RDF_OK ||
                memcmp(out, want[t], sizeof out) != 0) {
            bad[t]++;
        }
        if (rprog_run_ctx(&prog_contexts[t], &ns[t], &ks[t], &got) != RPROG_OK ||
                got != prog_want[t]) {
            bad[t]++;
        }
    }
    return NULL;
}

static int threads(void)
{
    pthread_t th[2];
    int t, i;
    for (t = 0; t < 2; t++) {
        rdf_ctx_init(&df_contexts[t]);
        rprog_ctx_init(&prog_contexts[t], RPROG_STACK_BYTES);
        /* the reference: one thread, the static contexts */
        if (rdf_run(xs[t], ys[t], want[t]) != RDF_OK ||
                rprog_run(&ns[t], &ks[t], &prog_want[t]) != RPROG_OK) {
            printf("reference call failed\n");
            return 1;
        }
        printf("prog %d %ld\n", t, (long)prog_want[t]);
        printf("df %d", t);
        for (i = 0; i < RDF_OUTPUT_0_SIZE; i++) {
            printf(" %a", (double)want[t][i]);
        }
        printf("\n");
    }
    for (t = 0; t < 2; t++) {
        if (pthread_create(&th[t], NULL, worker, &ids[t]) != 0) {
            return 1;
        }
    }
    for (t = 0; t < 2; t++) {
        pthread_join(th[t], NULL);
    }
    printf("bad %d %d\n", bad[0], bad[1]);
    printf("pool %lu %lu\n", (unsigned long)rprog_pool_in_use_ctx(&prog_contexts[0]),
           (unsigned long)rprog_pool_in_use_ctx(&prog_contexts[1]));
    return 0;
}

static rdeep_ctx deep_context;
static int unbounded;

static void report(const char *what, int32_t n, int32_t st, int32_t out)
{
    printf("%s %ld %ld %ld\n", what, (long)n, (long)st, (long)(st == RDEEP_OK ? out : -1));
    fflush(stdout);
}

static void *deep_worker(void *arg)
{
    int32_t n, out = 0, st;
    (void)arg;
    if (unbounded) {
        rdeep_ctx_init(&deep_context, (size_t)-1);
        n = 9000;
        st = rdeep_run_ctx(&deep_context, &n, &out);
        report("unbounded", n, st, out);
        return NULL;
    }
    /* the static context: the default budget, RDEEP_STACK_BYTES */
    n = 9000;
    st = rdeep_run(&n, &out);
    report("static", n, st, out);
    n = 300;
    st = rdeep_run(&n, &out);
    report("static", n, st, out);
    /* a context with a budget of its own */
    rdeep_ctx_init(&deep_context, 128u * 1024u);
    n = 9000;
    st = rdeep_run_ctx(&deep_context, &n, &out);
    report("ctx", n, st, out);
    n = 1000;
    st = rdeep_run_ctx(&deep_context, &n, &out);
    report("ctx", n, st, out);
    return NULL;
}

static int deep(void)
{
    pthread_attr_t attr;
    pthread_t th;
    if (pthread_attr_init(&attr) != 0 || pthread_attr_setstacksize(&attr, 256u * 1024u) != 0 ||
            pthread_create(&th, &attr, deep_worker, NULL) != 0) {
        printf("cannot start a thread with a 256 KiB stack\n");
        return 1;
    }
    pthread_join(th, NULL);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "threads") == 0) {
        return threads();
    }
    unbounded = argc > 1 && strcmp(argv[1], "unbounded") == 0;
    return deep();
}
"""


def _floats(a: np.ndarray) -> str:
    return "{" + ", ".join(float(v).hex() + "f" for v in a.reshape(-1)) + "}"


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory) -> tuple[Path, dict, list]:
    root = tmp_path_factory.mktemp("reentrant")
    rng = np.random.default_rng(7)
    xs = [(rng.standard_normal((24, 24)) * 0.3).astype(np.float32) for _ in range(2)]
    ys = [(rng.standard_normal((24, 24)) * 0.3).astype(np.float32) for _ in range(2)]
    ns, ks = [37, 52], [3, -2]
    arts = [aot.compile(aot.parse(DATAFLOW), root / "rdf", name="rdf", arena="static",
                        build=False),
            aot.compile(aot.parse(PROGRAM), root / "rprog", name="rprog", build=False,
                        pool_bytes=1 << 20),     # the list grows with %n: no bound
            aot.compile(aot.parse(DEEP), root / "rdeep", name="rdeep", build=False,
                        pool_bytes=4 << 20)]
    main = (MAIN_C.replace("@XS@", ", ".join(_floats(x) for x in xs))
            .replace("@YS@", ", ".join(_floats(y) for y in ys))
            .replace("@NS@", ", ".join(map(str, ns))).replace("@KS@", ", ".join(map(str, ks))))
    (root / "main.c").write_text(main)
    inputs = {"xs": xs, "ys": ys, "ns": ns, "ks": ks}
    return root, inputs, arts


def _build(root: Path, arts: list, compiler: str, opt: str) -> Path:
    exe = root / f"main-{compiler}{opt}"
    if exe.is_file():
        return exe
    includes = [f"-I{a.root / d}" for a in arts for d in ("include", "runtime_c")]
    sources = [str(a.root / "src" / f"{a.name}.c") for a in arts]
    subprocess.run([compiler, *STRICT_FLAGS, opt, "-ffp-contract=off", "-fno-strict-aliasing",
                    *includes, str(root / "main.c"), *sources, "-o", str(exe), "-pthread", "-lm"],
                   check=True)
    return exe


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
@pytest.mark.parametrize("compiler", COMPILERS)
def test_two_threads_two_contexts(artifacts, compiler, opt) -> None:
    root, inputs, arts = artifacts
    out = subprocess.run([str(_build(root, arts, compiler, opt)), "threads"], check=True,
                         capture_output=True, text=True, timeout=300).stdout.splitlines()
    rows = {tuple(line.split()[:2]): line.split()[2:] for line in out}
    bad = next(line for line in out if line.startswith("bad ")).split()[1:]
    assert bad == ["0", "0"], f"wrong results per thread: {bad}"
    pool = next(line for line in out if line.startswith("pool ")).split()[1:]
    assert pool == ["0", "0"]
    prog, df = aot.parse(PROGRAM), aot.parse(DATAFLOW)
    for t in range(2):
        want = aot.interpret(prog, np.asarray(inputs["ns"][t], np.int32),
                             np.asarray(inputs["ks"][t], np.int32))
        assert int(rows[("prog", str(t))][0]) == int(want)
        got = np.array([float.fromhex(v) for v in rows[("df", str(t))]], np.float32)
        assert_matches(got.reshape(24, 24), aot.interpret(df, inputs["xs"][t], inputs["ys"][t]),
                       f"thread {t}")


def _sum_to(n: int) -> int:
    return n * (n + 1) // 2


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
@pytest.mark.parametrize("compiler", COMPILERS)
def test_deep_recursion_on_a_small_stack_returns_err_depth(artifacts, compiler, opt) -> None:
    root, _, arts = artifacts
    header = (arts[2].root / "include" / "rdeep.h").read_text()
    assert "#define RDEEP_MAX_DEPTH 10000 " in header      # 9,000 calls pass the depth bound
    assert "#define RDEEP_STACK_BYTES 65536 " in header
    out = subprocess.run([str(_build(root, arts, compiler, opt))], check=True,
                         capture_output=True, text=True, timeout=300).stdout.splitlines()
    assert out == ["static 9000 3 -1", f"static 300 0 {_sum_to(300)}",
                   "ctx 9000 3 -1", f"ctx 1000 0 {_sum_to(1000)}"]


@pytest.mark.parametrize("compiler", COMPILERS)
def test_without_the_budget_the_stack_overflows(artifacts, compiler) -> None:
    """The control: the same recursion with an unbounded stack budget
    crashes the 256 KiB thread (so the test above would fail without the
    budget)."""
    root, _, arts = artifacts
    result = subprocess.run([str(_build(root, arts, compiler, "-O2")), "unbounded"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == -signal.SIGSEGV, (result.returncode, result.stdout)
    assert result.stdout == ""
