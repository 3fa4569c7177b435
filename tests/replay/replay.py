"""Process replay: the generated C of a fixed set of programs, hashed.

A refactor of the backend must emit byte-identical artifacts (tinygrad's
"process replay").  :func:`programs` lists the set -- every compilable
``@main`` of the Relay corpus (tiers A and B), the bundled example, the
whole-language packs of ``tests/e2e/test_lang_c.py`` and the four MLPerf
Tiny models in both tunings -- and :func:`digest` hashes what
``aot.compile(..., build=False)`` writes (sources, header, make fragment,
metadata), or the diagnostic when the compile is refused.

``tests/replay/hashes.json`` holds the committed digests.  When a commit
changes the generated C on purpose, it says why and refreshes them::

    .venv/bin/python tests/replay/replay.py --update

To see what changed, dump the artifacts before and after the change and
``diff -r`` the two folders::

    .venv/bin/python tests/replay/replay.py --dump /tmp/before
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import sys
import tempfile
from pathlib import Path
from typing import Callable, Iterator

import numpy as np

import aot
from aot.diagnostics import DiagnosticError

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
HASHES = HERE / "hashes.json"
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "e2e")]

#: name -> a thunk returning (module, aot.compile keyword arguments)
Program = Callable[[], tuple[aot.IRModule, dict]]


def write(mod: aot.IRModule, options: dict, out: Path) -> None:
    """The artifact's sources in ``out``, or the diagnostic of a refused
    compile in ``out/refused``.  The diagnostic names its source file by the
    absolute path the checkout happens to have; that prefix is cut so the
    digest is the same in every checkout."""
    try:
        aot.compile(mod, out, build=False, **options)
    except DiagnosticError as e:
        out.mkdir(parents=True, exist_ok=True)
        (out / "refused").write_text(str(e).replace(str(ROOT.parent) + "/", ""))


#: copied verbatim from the package, not generated (aot/emit/build/stack_usage.py;
#: tests/emit/test_stack_usage.py checks the copy): its path is hashed, its bytes
#: are not, so editing the tool does not change every digest
VERBATIM = "tools/aot_stack.py"


def digest(mod: aot.IRModule, options: dict) -> str:
    """sha256 over what :func:`write` writes (path and bytes, in path order)."""
    h = hashlib.sha256()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "a"
        write(mod, options, out)
        for path in sorted(p for p in out.rglob("*") if p.is_file()):
            h.update(str(path.relative_to(out)).encode() + b"\0")
            if path.relative_to(out).as_posix() == VERBATIM:
                continue
            h.update(path.read_bytes() + b"\0")
    return h.hexdigest()


def _corpus() -> Iterator[tuple[str, Program]]:
    from test_corpus_semantics import CORPUS, diverges, has_main, ill_typed, load, records

    if not CORPUS.exists():
        return
    for rec in records("AB"):
        if ill_typed(rec) or not has_main(rec) or diverges(rec):
            continue
        yield f"corpus/{rec['id']}", (lambda rec=rec: (load(rec), {"name": "replay"}))


def _lang_packs() -> Iterator[tuple[str, Program]]:
    from test_lang_c import PACKS, build

    for pack, cases in sorted(PACKS.items()):
        yield f"lang/{pack}", (lambda cases=cases: (build(list(cases)), {"name": "replay"}))


def _example() -> Iterator[tuple[str, Program]]:
    path = ROOT / "examples" / "list_fold.relay"
    yield "examples/list_fold", lambda: (aot.parse(path.read_text(), str(path)),
                                         {"name": "list_fold"})


def _mlperf() -> Iterator[tuple[str, Program]]:
    if importlib.util.find_spec("onnx") is None:
        return
    spec = importlib.util.spec_from_file_location(
        "mlperf_tiny_models", ROOT / "examples" / "mlperf_tiny" / "models.py")
    models = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(models)
    for name in models.MODELS:
        for tuning in ("scalar", "simd"):
            def program(name=name, tuning=tuning):
                mod = aot.from_onnx(models.MODELS[name]())
                return mod, {"name": name, "tuning": tuning}
            yield f"mlperf/{name}/{tuning}", program


def programs() -> dict[str, Program]:
    found: dict[str, Program] = {}
    for source in (_example, _lang_packs, _corpus, _mlperf):
        found.update(source())
    return found


def digests(names: list[str] | None = None) -> dict[str, str]:
    table = programs()
    out = {}
    for name in names or sorted(table):
        np.random.seed(0)
        mod, options = table[name]()
        out[name] = digest(mod, options)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--update", action="store_true", help="rewrite hashes.json")
    parser.add_argument("--dump", metavar="DIR", type=Path,
                        help="write every program's artifact into DIR/<program> instead")
    args = parser.parse_args()
    if args.dump:
        for name, program in sorted(programs().items()):
            np.random.seed(0)
            mod, options = program()
            write(mod, options, args.dump / name.replace("/", "__"))
        return 0
    table = digests()
    if args.update:
        HASHES.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
        print(f"{len(table)} digests written to {HASHES}")
        return 0
    old = json.loads(HASHES.read_text())
    changed = sorted(k for k in table if old.get(k) != table[k])
    print("\n".join(changed) or "no change")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
