"""Random programs through PartialEvaluate: ``python scripts/pe_sweep.py -n 5000``.

Each program of the fuzzer's whole-language family is run by the
reference interpreter before and after the opt-level-3 PROGRAM pipeline
with PartialEvaluate (as generated, and with main's tensor arguments bound
to constants), PartialEvaluate's output verified (well formed, well
typed; ``--verify all``: every pass's), each
pipeline under a time limit; every ``--c-every``-th program also goes
through C, ``--batch`` per build.  The machinery is
``tests/fuzz/pe_sweep.py``; ``tests/fuzz/test_pe_sweep.py`` runs a slice of
it on every test run.

Usage::

    python scripts/pe_sweep.py [-n 5000] [--seed 1] [--c-every 10] [--batch 20]
                               [--minutes M] [--verify all|pe|none]
                               [--shard K/M]

Prints every difference (with the program) and a summary; exit status 1
if anything failed.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "fuzz"), str(ROOT / "tests" / "e2e")]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=5000, help="programs")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--c-every", type=int, default=10,
                    help="every k-th program also goes to C (0: none)")
    ap.add_argument("--batch", type=int, default=20, help="programs per C build")
    ap.add_argument("--minutes", type=float, help="stop after this long")
    ap.add_argument("--shard", default="0/1",
                    help="K/M: only programs whose index is K mod M (M processes share a sweep)")
    ap.add_argument("--verify", choices=("all", "pe", "none"), default="pe",
                    help="the pass verifier after every pass, after PartialEvaluate, or never")
    args = ap.parse_args(argv)
    os.environ.setdefault("AOT_VERIFY_PASSES", "0")

    from pe_sweep import sweep
    start = time.monotonic()
    deadline = start + args.minutes * 60 if args.minutes else None

    def log(line: str) -> None:
        print(f"[{time.monotonic() - start:7.1f}s] {line}", flush=True)

    stats = sweep(args.n, args.seed, c_every=args.c_every, batch=args.batch,
                  deadline=deadline, verify=args.verify,
                  shard=tuple(int(x) for x in args.shard.split("/")), log=log)
    took = time.monotonic() - start
    print(f"\n{stats.programs} programs (seed {args.seed}, shard {args.shard}; "
          f"{stats.discarded} draws discarded), "
          f"{stats.checks} pipeline runs with PartialEvaluate (dynamic and static arguments), "
          f"{stats.c_programs} programs in {stats.c_builds} C builds, "
          f"{len(stats.failures)} differences, {took:.0f} s")
    print(f"PartialEvaluate: {stats.pe_seconds:.1f} s in all, at most "
          f"{stats.pe_max * 1e3:.0f} ms on one program")
    for mode in stats.had_closures:
        print(f"  {mode}: {stats.had_closures[mode]} programs with closures, "
              f"{stats.closure_free_after[mode]} of them without any after")
    for f in stats.failures:
        print(f"\n{f.summary()} (seed {f.item.seed})\n{f.message}\n{f.item.text}")
    return 1 if stats.failures else 0


if __name__ == "__main__":
    sys.exit(main())
