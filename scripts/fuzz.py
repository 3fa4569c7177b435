"""Differential fuzzing of the compiler: ``make fuzz N=10000 SEED=1``.

Random whole-language Relay programs, random operator chains and random
ONNX graphs (built from the ONNX converters' registry), each compiled to
C in batches and compared with the interpreter (and the ONNX graphs with
onnxruntime).  Failures are shrunk to small reproducers and saved in
``tests/fuzz_regressions/``, which ``tests/fuzz/test_fuzz.py`` replays on
every test run.  The machinery is in ``tests/fuzz/campaign.py``.

Usage::

    python scripts/fuzz.py [-n 10000] [--seed 1] [--families lang,chain,onnx]
                           [--batch 20] [--minutes M] [--no-shrink] [--no-save]

Exit status 1 if anything failed.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "fuzz"), str(ROOT / "tests" / "e2e")]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=1000, help="programs in all (split over families)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--families", default="lang,chain,onnx")
    ap.add_argument("--batch", type=int, default=20, help="programs per C build")
    ap.add_argument("--minutes", type=float, help="stop after this long")
    ap.add_argument("--no-shrink", action="store_true")
    ap.add_argument("--no-save", action="store_true")
    ap.add_argument("-q", "--quiet", action="store_true")
    args = ap.parse_args(argv)
    os.environ.setdefault("AOT_VERIFY_PASSES", "0")
    import onnxruntime  # noqa: F401 - fail early if the reference is missing

    from campaign import run_campaign
    from regressions import DIR
    start = time.monotonic()
    deadline = start + args.minutes * 60 if args.minutes else None

    def log(line: str) -> None:
        if not args.quiet or line.startswith(("FAILURE", "saved", "shrunk")):
            print(f"[{time.monotonic() - start:7.1f}s] {line}", flush=True)

    stats = run_campaign(args.n, args.seed, tuple(args.families.split(",")), args.batch,
                         deadline, not args.no_shrink, None if args.no_save else DIR, log)
    took = time.monotonic() - start
    print(f"\n{stats.programs} programs ({stats.discarded} discarded by the generator or "
          f"onnxruntime, {stats.refused} ONNX graphs refused by the importer), "
          f"{stats.builds} C builds, {len(stats.failures)} failures, {took:.0f} s on "
          f"{os.cpu_count()} cores ({platform.processor() or platform.machine()}), seed "
          f"{args.seed}")
    for reason, count in sorted(stats.refused_reasons.items(), key=lambda r: -r[1])[:10]:
        print(f"  refused x{count}: {reason}")
    for f in stats.failures:
        print("  " + f.summary())
    return 1 if stats.failures else 0


if __name__ == "__main__":
    sys.exit(main())
