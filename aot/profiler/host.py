"""Wall time per kernel call on the host (see the design note of
:mod:`aot.profiler`): the hook reads the monotonic clock; the program runs
one warm-up inference, then ``runs`` timed ones, and prints every time
stamp; each call's figure is the median of its durations, the total the
sum of the medians and of the entry's own work (a preempted call lands in
one run's total, not in the medians)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Sequence

import numpy as np

from ..diagnostics import DiagnosticError
from ..emit.build.toolchain import find_toolchain, run_tool
from ..emit.c.context import MODEL_CFLAGS
from ..progress import stage
from . import driver_arrays

MAIN_C = """\
/* aot profile on the host: time stamps around every kernel call. */
#define _POSIX_C_SOURCE 199309L
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include "{name}.h"

#define CALLS {calls}
long long aot_profile_stamps[CALLS + 3];

void aot_profile_stamp(int i)
{{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    aot_profile_stamps[i] = (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}}

{arrays}
int main(int argc, char **argv)
{{
    int runs = argc > 1 ? atoi(argv[1]) : 20, r, i;
    for (r = -1; r < runs; ++r) {{          /* run -1 warms up */
        int32_t status;
        aot_profile_stamp(CALLS + 1);
        status = {name}_run({args});
        aot_profile_stamp(CALLS + 2);
        if (status != 0) {{
            return 1;
        }}
        if (r < 0) {{
            continue;
        }}
        for (i = 0; i < CALLS + 3; ++i) {{
            printf("%lld%c", aot_profile_stamps[i], i == CALLS + 2 ? '\\n' : ' ');
        }}
    }}
    return 0;
}}
"""

MODEL_C = """\
void aot_profile_stamp(int i);
#define {macro}_PROFILE_CALL(i) aot_profile_stamp(i)
#include "{source}"
"""


def profile_on_host(art: Path, meta: dict, inputs: Sequence[np.ndarray], work: Path,
                    runs: int) -> tuple[list[float], float, str]:
    """(median µs of each call, of the whole entry, where)."""
    if runs < 1:
        raise DiagnosticError(f"--runs must be at least 1, not {runs}")
    name, n = meta["name"], len(meta["calls"])
    work = work / "host"
    os.makedirs(work, exist_ok=True)
    arrays, args = driver_arrays(meta, inputs)
    (work / "main.c").write_text("#include <stdlib.h>\n" + MAIN_C.format(
        name=name, calls=n, arrays=arrays, args=args))
    (work / "model.c").write_text(MODEL_C.format(macro=name.upper(),
                                                 source=art / "src" / f"{name}.c"))
    # the default host build's flags (Toolchain.codegen_flags: -O3, the host
    # CPU's and gcc's workaround for its AVX-512 if-conversion miscompile),
    # so the profile times the code `aot.load` runs
    toolchain = find_toolchain()
    opt = list(toolchain.codegen_flags)
    cc = [*toolchain.command, *opt, "-I", str(art / "include"), "-I", str(art / "runtime_c")]
    with stage("host build"):
        run_tool([*cc, *MODEL_CFLAGS, "-c", "model.c", "-o", "model.o"], cwd=work,
                 what="compiling the model for the profile", path=work / "model.c")
        run_tool([*cc, "main.c", "model.o", "-lm", "-o", "app"], cwd=work,
                 what="linking the profiling program", path=work / "main.c")
    with stage("host run"):
        result = subprocess.run([str(work / "app"), str(runs)], capture_output=True, text=True,
                                timeout=3600, check=False)
    if result.returncode != 0:
        raise DiagnosticError(f"the profiling program failed (exit status {result.returncode})"
                              f"\n{result.stderr}")
    stamps = np.array([[int(v) for v in line.split()] for line in result.stdout.splitlines()],
                      dtype=np.int64)
    if stamps.shape != (runs, n + 3):
        raise DiagnosticError(f"the profiling program printed {stamps.shape}, expected "
                              f"{(runs, n + 3)}")
    durations = np.diff(stamps[:, :n + 1], axis=1) / 1e3
    values = [float(v) for v in np.median(durations, axis=0)]
    # the total is the sum of the medians (the entry's own work included):
    # one preempted call would otherwise put a whole time slice in every
    # run's total
    outside = (stamps[:, 0] - stamps[:, n + 1]) + (stamps[:, n + 2] - stamps[:, n])
    total = sum(values) + float(np.median(outside) / 1e3)
    return values, total, (f"{toolchain.label} {' '.join(opt)}, median of {runs} runs, "
                           "µs")
