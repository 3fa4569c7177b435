#!/usr/bin/env python3
"""Sizes, instruction counts and the report table of the embedded example.

    measure.py size --size-tool arm-none-eabi-size --elf app.elf --info model_info.json
                    -o size.json [MODEL_OBJECTS...]
    measure.py count --runs1 insns.txt --runs3 insns.txt --info model_info.json -o count.json
    measure.py table DIR...          (DIR holds size.json and count.json)

Definitions:

* flash = text + data, RAM = data + bss (Berkeley ``size``).  For the whole
  image that includes the start-up code, newlib (printf and semihosting)
  and the test vectors; the *model* columns count only the model's own
  symbols in the linked image (``nm``: every generated symbol starts with the
  model name), so they do not depend on what the firmware around it links.
  RAM of the model = its arena (in the firmware's .bss, or the library's
  when compiled with --arena static) + the stack of one inference, measured
  by the firmware (main.c paints the stack).
* instructions per inference = (count with RUNS=3 - count with RUNS=1) / 2,
  both whole-program counts from the QEMU plugin: start-up, checking and
  printing cancel out.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path


def berkeley_size(tool: str, files: list[str]) -> list[dict[str, int]]:
    out = subprocess.run([tool, "-B", *files], check=True, capture_output=True, text=True).stdout
    rows = []
    for line in out.splitlines()[1:]:
        text, data, bss = (int(v) for v in line.split()[:3])
        rows.append({"text": text, "data": data, "bss": bss,
                     "flash": text + data, "ram": data + bss})
    return rows


def model_symbols(nm: str, elf: str, name: str) -> dict[str, int]:
    """Bytes of the model's symbols in the linked image, by section kind:
    code (t), constants (r), data (d), bss (b)."""
    out = subprocess.run([nm, "-S", "--size-sort", elf], check=True, capture_output=True,
                         text=True).stdout
    sums = {"code": 0, "const": 0, "data": 0, "bss": 0}
    kinds = {"t": "code", "r": "const", "d": "data", "b": "bss"}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) != 4:
            continue
        _, size, kind, symbol = parts
        if symbol.startswith(name + "_") and kind.lower() in kinds:
            sums[kinds[kind.lower()]] += int(size, 16)
    return sums


def read_stack(run_log: Path) -> int | None:
    if not run_log.exists():
        return None
    m = re.search(r"stack used by the inference: (?:>= )?(\d+) bytes", run_log.read_text())
    return int(m.group(1)) if m else None


def cmd_size(args: argparse.Namespace) -> int:
    info = json.loads(Path(args.info).read_text())
    image = berkeley_size(args.size_tool, [args.elf])[0]
    nm = re.sub(r"size$", "nm", args.size_tool)
    symbols = model_symbols(nm, args.elf, info["name"])
    objects = berkeley_size(args.size_tool, args.objects) if args.objects else []
    obj_total = {k: sum(o[k] for o in objects) for k in ("text", "data", "bss")}
    result = {
        "name": info["name"], "macs": info["macs"], "opt": args.opt,
        "image": image, "model_symbols": symbols, "model_objects": obj_total,
        "arena_bytes": info["arena_bytes"],
    }
    Path(args.output).write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    print(f"{info['name']}: image flash {image['flash']} B (text {image['text']} + data "
          f"{image['data']}), RAM {image['ram']} B (data {image['data']} + bss {image['bss']})")
    print(f"{info['name']}: model code {symbols['code']} B, constants {symbols['const']} B, "
          f"arena {info['arena_bytes']} B")
    return 0


def read_insns(path: str) -> int:
    m = re.search(r"insns:\s*(\d+)", Path(path).read_text())
    if not m:
        raise SystemExit(f"measure.py: error: {path}: no 'insns: N' line")
    return int(m.group(1))


def cmd_count(args: argparse.Namespace) -> int:
    info = json.loads(Path(args.info).read_text())
    one, three = read_insns(args.runs1), read_insns(args.runs3)
    if (three - one) % 2:
        print(f"measure.py: warning: odd difference {three - one}", file=sys.stderr)
    per = (three - one) // 2
    stack = read_stack(Path(args.runs1).with_name("run.log"))
    result = {"name": info["name"], "macs": info["macs"], "insns_runs1": one,
              "insns_runs3": three, "insns_per_inference": per,
              "insns_per_mac": per / info["macs"] if info["macs"] else None,
              "stack_bytes": stack}
    Path(args.output).write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    per_mac = f", {per / info['macs']:.2f} per MAC ({info['macs']} MACs)" if info["macs"] else ""
    print(f"{info['name']}: {per} instructions per inference{per_mac}")
    if stack is not None:
        print(f"{info['name']}: {stack} bytes of stack per inference")
    return 0


def cmd_table(args: argparse.Namespace) -> int:
    header = ["model", "opt", "MACs", "flash", "RAM", "model code", "weights", "arena",
              "stack", "insns/inference", "insns/MAC"]
    rows = [header]
    for d in args.dirs:
        size = json.loads((Path(d) / "size.json").read_text())
        count = json.loads((Path(d) / "count.json").read_text())
        sym = size["model_symbols"]
        per_mac = count["insns_per_mac"]
        opt = size.get("opt") or Path(d).name.removeprefix("arm")
        rows.append([size["name"], opt, f"{size['macs']:,}", f"{size['image']['flash']:,}",
                     f"{size['image']['ram']:,}", f"{sym['code']:,}", f"{sym['const']:,}",
                     f"{size['arena_bytes']:,}",
                     "?" if count["stack_bytes"] is None else f"{count['stack_bytes']:,}",
                     f"{count['insns_per_inference']:,}",
                     "-" if per_mac is None else f"{per_mac:.2f}"])
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = []
    for k, r in enumerate(rows):
        cells = [c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))]
        lines.append("| " + " | ".join(cells) + " |")
        if k == 0:
            lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    print("\n".join(lines))
    print("\nflash, RAM: whole Cortex-M4F image in bytes (flash = text + data, RAM = data + bss,"
          " the caller-owned arena included; newlib's printf and the test vectors too).\n"
          "model code, weights: the model's own symbols in the image; stack: deepest stack "
          "of one inference.")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("size")
    s.add_argument("--size-tool", required=True)
    s.add_argument("--elf", required=True)
    s.add_argument("--info", required=True)
    s.add_argument("--opt", default="")
    s.add_argument("-o", "--output", required=True)
    s.add_argument("objects", nargs="*")
    s.set_defaults(func=cmd_size)
    c = sub.add_parser("count")
    c.add_argument("--runs1", required=True)
    c.add_argument("--runs3", required=True)
    c.add_argument("--info", required=True)
    c.add_argument("-o", "--output", required=True)
    c.set_defaults(func=cmd_count)
    t = sub.add_parser("table")
    t.add_argument("dirs", nargs="+")
    t.set_defaults(func=cmd_table)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
