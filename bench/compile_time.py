"""Compile time of the C backend against program size.

Builds synthetic programs of 100, 1,000 and 10,000 operators and times each
stage of ``aot.compile``: parse + type inference, the optimisation passes
and fusion, lowering + memory planning, rendering, and the C build.  Two
program shapes:

* ``distinct``: a chain of blocks ``dense -> add(bias) -> tanh -> multiply
  -> relu`` whose widths cycle through 8 sizes and whose weights all
  differ, so the C holds at most 8 distinct kernels but every block has its
  own constants (a network's usual shape);
* ``varied``: the same, with widths drawn from 64 sizes and an extra
  reduction, so the generated C holds many distinct kernels.

* ``lets``: a straight-line chain ``let %x{i+1} = add(%x{i}, 1f); ...``
  of ``--lets`` lets (default 8,000, 16,000, 32,000), the shape whose
  compile time grew faster than its length (issue 18); timed as CPU
  seconds of this process (``time.process_time``), which other jobs on
  the machine do not inflate, through ``aot check``'s work (parse + type
  inference) and the whole ``aot.compile`` (C build excluded: one kernel).

Prints a table and writes JSON (``--json``).  Usage::

    python bench/compile_time.py [--sizes 100,1000,10000] [--lets 8000,16000]
                                 [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import aot
from aot.emit.build.artifact import build_artifact, write_artifact
from aot.emit.lower.dataflow import plan_model
from aot.compiler import optimize_for_c


def program(n_ops: int, widths: list[int], seed: int = 0) -> str:
    """A chain of about ``n_ops`` operators, weights as metadata-free
    constants via params (returned separately)."""
    rng = np.random.default_rng(seed)
    lines = []
    cur, width = "%x", 16
    k = 0
    block = 0
    while k < n_ops:
        out = widths[block % len(widths)]
        block += 1
        # drawn and dropped (the weights are made in build_module): keeps the
        # add constants' random stream, hence the programs, as they were
        rng.standard_normal((out, width))
        lines.append(f"  %{k} = nn.dense({cur}, meta_w{block});")
        lines.append(f"  %{k + 1} = add(%{k}, {float(rng.standard_normal()):.3f}f);")
        lines.append(f"  %{k + 2} = tanh(%{k + 1});")
        lines.append(f"  %{k + 3} = multiply(%{k + 2}, 0.5f);")
        lines.append(f"  %{k + 4} = nn.relu(%{k + 3});")
        cur, width = f"%{k + 4}", out
        k += 5
    return lines, cur, width


def build_module(n_ops: int, widths: list[int]) -> tuple[aot.IRModule, dict]:
    lines, cur, width = program(n_ops, widths)
    params = {}
    rng = np.random.default_rng(1)
    sig = ["%x: Tensor[(1, 16), float32]"]
    prev = 16
    for i, line in enumerate(lines):
        if "nn.dense" in line:
            name = line.split("meta_w")[1].rstrip(");")
            out = widths[(int(name) - 1) % len(widths)]
            sig.append(f"%w{name}: Tensor[({out}, {prev}), float32]")
            params[f"w{name}"] = (rng.standard_normal((out, prev)) * 0.1).astype(np.float32)
            lines[i] = line.replace(f"meta_w{name}", f"%w{name}")
            prev = out
    text = "def @main(" + ", ".join(sig) + ") {\n" + "\n".join(lines) + f"\n  {cur}\n}}\n"
    return text, params


def measure(n_ops: int, shape: str) -> dict:
    widths = [8, 12, 16, 20, 24, 28, 32, 40] if shape == "distinct" else \
        [8 + 2 * i for i in range(64)]
    text, params = build_module(n_ops, widths)
    t = {}
    start = time.perf_counter()
    mod = aot.infer_types(aot.parse(text))
    t["parse_infer_s"] = time.perf_counter() - start
    start = time.perf_counter()
    fused = optimize_for_c(mod, params=params)
    t["passes_s"] = time.perf_counter() - start
    start = time.perf_counter()
    plan = plan_model(fused, "bench")
    t["lower_plan_s"] = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        art = write_artifact(plan, Path(tmp))
        t["render_s"] = time.perf_counter() - start
        start = time.perf_counter()
        build_artifact(art)
        t["build_s"] = time.perf_counter() - start
        c_bytes = sum(p.stat().st_size for p in (Path(tmp) / "src").glob("*.c"))
    t["total_s"] = sum(v for k, v in t.items())
    return {"ops": n_ops, "shape": shape, "kernels": len(plan.kernels),
            "calls": len(plan.calls), "c_bytes": c_bytes, **t}


def let_chain(n: int) -> str:
    return ("def @main(%x0: Tensor[(4,), float32]) {\n"
            + "".join(f"  let %x{i + 1} = add(%x{i}, 1f);\n" for i in range(n))
            + f"  %x{n}\n}}\n")


def measure_lets(n: int) -> dict:
    """CPU seconds of checking and of compiling (without the C build) a
    chain of ``n`` lets."""
    text = let_chain(n)
    start = time.process_time()
    aot.infer_types(aot.parse(text))
    check_s = time.process_time() - start
    with tempfile.TemporaryDirectory() as tmp:
        start = time.process_time()
        aot.compile(aot.parse(text), tmp, name="lets", build=False)
        compile_s = time.process_time() - start
    return {"lets": n, "shape": "lets", "check_cpu_s": check_s, "compile_cpu_s": compile_s}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="100,1000,10000")
    ap.add_argument("--shapes", default="distinct,varied")
    ap.add_argument("--lets", default="8000,16000,32000",
                    help="let-chain lengths ('' for none)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    rows = []
    for n in (int(s) for s in args.lets.split(",") if s):
        r = measure_lets(n)
        rows.append(r)
        print(f"{n:>7} lets: check {r['check_cpu_s']:7.2f} s, compile (no C build) "
              f"{r['compile_cpu_s']:7.2f} s  (CPU; {r['compile_cpu_s'] / n * 1e3:.2f} ms/let)",
              flush=True)
    print(f"{'ops':>6} {'shape':>9} {'kernels':>7} {'C KiB':>7} {'parse':>7} {'passes':>7} "
          f"{'lower':>7} {'render':>7} {'build':>7} {'total':>7}  (seconds)")
    for shape in (s for s in args.shapes.split(",") if s):
        for n in (int(s) for s in args.sizes.split(",")):
            r = measure(n, shape)
            rows.append(r)
            print(f"{r['ops']:>6} {shape:>9} {r['kernels']:>7} {r['c_bytes'] / 1024:>7.0f} "
                  f"{r['parse_infer_s']:>7.2f} {r['passes_s']:>7.2f} {r['lower_plan_s']:>7.2f} "
                  f"{r['render_s']:>7.2f} {r['build_s']:>7.2f} {r['total_s']:>7.2f}",
                  flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
