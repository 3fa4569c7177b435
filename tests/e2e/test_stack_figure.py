"""The worst-case stack aot reports (metadata.json's stack.library) holds
in C: a deep recursion on a pthread whose stack is the figure plus what the
thread itself needs returns ERR_DEPTH, and on a stack of half the figure
the same recursion overflows (so the figure is not merely huge, and the
test can fail)."""

from __future__ import annotations

import signal
import subprocess

import aot
from aot.emit.build.toolchain import STRICT_FLAGS, find_toolchain

DEEP = """
def @sum_to(%n: int32) -> int32 {
  if (%n == 0) { 0 } else { %n + @sum_to(%n - 1) }
}
def @main(%n: int32) -> int32 { @sum_to(%n) }
"""

MAIN_C = r"""
#define _POSIX_C_SOURCE 200112L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "deep.h"

static int32_t status = -1;

static void *worker(void *arg)
{
    int32_t sum = 0;
    (void)arg;
    status = deep_run(&(int32_t){100000}, &sum);
    return NULL;
}

int main(int argc, char **argv)
{
    pthread_t th;
    pthread_attr_t attr;
    size_t bytes = (size_t)strtoul(argc > 1 ? argv[1] : "0", NULL, 10);
    if (pthread_attr_init(&attr) != 0 || pthread_attr_setstacksize(&attr, bytes) != 0 ||
            pthread_create(&th, &attr, worker, NULL) != 0) {
        printf("cannot start a thread with a %lu-byte stack\n", (unsigned long)bytes);
        return 1;
    }
    pthread_join(th, NULL);
    printf("%d\n", (int)status);
    return 0;
}
"""

#: what the thread needs besides the model: glibc's thread start, the
#: worker's frame, the thread's TLS carved from the same allocation
THREAD_BYTES = 16384


def test_the_figure_bounds_a_deep_recursion_on_a_thread(tmp_path):
    art = aot.compile(aot.parse(DEEP), tmp_path / "deep", name="deep", pool_bytes=8 << 20)
    fig = art.metadata["stack"]["library"]
    assert fig["bound"] == "stack budget"
    (tmp_path / "main.c").write_text(MAIN_C)
    exe = tmp_path / "main"
    toolchain = find_toolchain()
    # the library's sanitizers (AOT_SANITIZE), which its objects call into
    subprocess.run([*toolchain.command, *STRICT_FLAGS, "-O2", *toolchain.sanitize_flags,
                    f"-I{art.root / 'include'}", f"-I{art.root / 'runtime_c'}",
                    str(tmp_path / "main.c"), str(art.layout.library), "-o", str(exe),
                    "-pthread", "-lm"], check=True)
    page = 4096
    enough = -(-(fig["bytes"] + THREAD_BYTES) // page) * page
    done = subprocess.run([str(exe), str(enough)], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout) == (0, "3\n")          # DEEP_ERR_DEPTH
    half = -(-(fig["bytes"] // 2) // page) * page
    crash = subprocess.run([str(exe), str(half)], capture_output=True, text=True, timeout=120)
    if "address" in toolchain.sanitizers:      # ASan reports the overflow and exits
        assert crash.returncode != 0 and "stack-overflow" in crash.stderr, \
            (crash.returncode, crash.stderr[-2000:])
    else:
        assert crash.returncode == -signal.SIGSEGV, (crash.returncode, crash.stdout)
