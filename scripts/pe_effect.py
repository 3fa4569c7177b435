"""What PartialEvaluate does to compile time and generated code:
``python scripts/pe_effect.py [--build]``.

For every tier-A program of the Relay corpus with a ``@main`` (through the
wrapper main of tests/e2e/test_corpus_lang_c.py where it needs one), the
tier-B programs that are not plain dataflow, and examples/list_fold.relay,
the program is compiled at opt level 3 without and with PartialEvaluate
(``build=False``: passes, lowering, planning, rendering) and compared:
compile time, PartialEvaluate's own time, bytes of generated C, closures
(function literals) left after the PROGRAM pipeline, and whether the
result is plain dataflow (``aot.compiler.is_dataflow``).  With
``--build`` every program is also built (gcc, -O2 as ``aot.compile``) and
the ``.text`` of its library compared.  The corpus is the project's
conformance corpus, beside a development checkout; where it is absent (a
user's clone) only examples/list_fold.relay is measured, and the script
says so.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "e2e"),
                str(ROOT / "tests" / "fuzz")]


def entries() -> list[tuple[str, str]]:
    """(name, module text) of the programs measured."""
    from aot.compiler import is_dataflow, optimize_for_c
    from aot.ir.printer import print_module
    from test_corpus_c import tier_a_main_entries, _classify
    from test_corpus_lang_c import Report
    from test_corpus_semantics import records
    from test_corpus_semantics import CORPUS
    out = [("examples/list_fold.relay", (ROOT / "examples" / "list_fold.relay").read_text())]
    if not CORPUS.exists():
        print(f"no conformance corpus at {CORPUS}: measuring examples/list_fold.relay only",
              file=sys.stderr)
        return out
    out += [(e.name, e.text) for e in tier_a_main_entries(Report("A"))]
    for rec in records("B"):
        kind, mod = _classify(rec)
        if kind == "compile" and not is_dataflow(optimize_for_c(mod)):
            out.append((rec["id"], print_module(mod)))
    return [(n, t) for n, t in out if _compiles(t)]


def _compiles(text: str) -> bool:
    import aot
    try:
        mod = aot.infer_types(aot.parse(text))
    except aot.DiagnosticError:
        return False
    return "main" in mod


def measure(text: str, pe: bool, build: bool) -> dict:
    import aot
    from aot.compiler import is_dataflow, optimize_program
    from aot.passes.manager import PassContext, PassTiming
    from pe_sweep import closures
    mod = aot.parse(text)
    ctx = dict(opt_level=3, required=["PartialEvaluate"] if pe else [],
               disabled=[] if pe else ["PartialEvaluate"])
    timing = PassTiming()
    with PassContext(**ctx, instruments=[timing]):
        start = time.perf_counter()
        with tempfile.TemporaryDirectory() as d:
            art = aot.compile(mod, d, name="m", build=build, pool_bytes=1 << 23)
            seconds = time.perf_counter() - start
            src = art.layout.src_dir
            c_bytes = sum(p.stat().st_size for p in src.glob("*.c"))
            text_bytes = _text_size(art.layout.root) if build else 0
    with PassContext(**ctx):
        program = optimize_program(mod)
    return {"seconds": seconds, "pe": timing.seconds.get("PartialEvaluate", 0.0),
            "c_bytes": c_bytes, "text": text_bytes, "closures": closures(program),
            "dataflow": is_dataflow(program)}


def _text_size(root: Path) -> int:
    libs = list(root.glob("lib/*.a"))
    out = subprocess.run(["size", "-t", *map(str, libs)], capture_output=True, text=True,
                         check=True).stdout.strip().splitlines()[-1]
    return int(out.split()[0])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", action="store_true", help="build and compare .text too")
    ap.add_argument("-v", "--verbose", action="store_true", help="one line per program")
    args = ap.parse_args(argv)
    import aot
    rows = []
    for name, text in entries():
        try:
            before = measure(text, False, args.build)
            after = measure(text, True, args.build)
        except aot.DiagnosticError as e:
            print(f"{name}: refused: {str(e).splitlines()[0]}")
            continue
        rows.append((name, before, after))
        if args.verbose:
            print(f"{name}: {before['seconds']:.2f} s -> {after['seconds']:.2f} s "
                  f"(PE {after['pe'] * 1e3:.0f} ms), C {before['c_bytes']} -> "
                  f"{after['c_bytes']} B, .text {before['text']} -> {after['text']} B, "
                  f"closures {before['closures']} -> {after['closures']}, dataflow "
                  f"{before['dataflow']} -> {after['dataflow']}", flush=True)
    n = len(rows)
    tot = {k: (sum(b[k] for _, b, _ in rows), sum(a[k] for _, _, a in rows))
           for k in ("seconds", "c_bytes", "text", "closures")}
    ratios = [a["c_bytes"] / b["c_bytes"] for _, b, a in rows if b["c_bytes"]]
    had = [r for r in rows if r[1]["closures"]]
    print(f"\n{n} programs at opt level 3, without -> with PartialEvaluate:")
    print(f"  compile time {tot['seconds'][0]:.1f} s -> {tot['seconds'][1]:.1f} s "
          f"(PartialEvaluate {sum(a['pe'] for _, _, a in rows):.2f} s, at most "
          f"{max(a['pe'] for _, _, a in rows) * 1e3:.0f} ms)")
    print(f"  generated C {tot['c_bytes'][0]} -> {tot['c_bytes'][1]} bytes (per program: "
          f"median x{statistics.median(ratios):.2f}, min x{min(ratios):.2f}, "
          f"max x{max(ratios):.2f})")
    if args.build:
        print(f"  .text {tot['text'][0]} -> {tot['text'][1]} bytes")
    print(f"  closures {tot['closures'][0]} -> {tot['closures'][1]}; {len(had)} programs had "
          f"closures, {sum(1 for r in had if not r[2]['closures'])} have none after")
    print(f"  plain dataflow after the PROGRAM pipeline: "
          f"{sum(b['dataflow'] for _, b, _ in rows)} -> {sum(a['dataflow'] for _, _, a in rows)}")
    grown = sorted(rows, key=lambda r: r[2]["c_bytes"] / max(1, r[1]["c_bytes"]))[-5:]
    for name, b, a in reversed(grown):
        print(f"  grew most: {name}: C {b['c_bytes']} -> {a['c_bytes']} B")
    return 0


if __name__ == "__main__":
    sys.exit(main())
