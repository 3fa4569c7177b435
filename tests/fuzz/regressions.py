"""Saved fuzz failures: one self-contained file each, replayed by
``tests/fuzz/test_fuzz.py``.

* ``<hash>.relay``: the shrunk program, preceded by comment lines
  ``// fuzz: <family> seed <seed>: <kind>`` and ``// args: <json>`` (main's
  arguments: tensors as ``{"dtype", "shape", "data"}``, tuples as
  ``{"tuple": [...]}``, ADT values as ``{"ctor": name, "fields": [...]}``);
* ``<hash>.onnx``: the shrunk model, its inputs in the model's
  ``metadata_props`` (key ``aot_fuzz_inputs``, the same JSON) and the
  failure in ``aot_fuzz_note``.

The hash is of the content, so saving the same reproducer twice writes
one file.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np

from campaign import Failure, Item

DIR = Path(__file__).resolve().parents[1] / "fuzz_regressions"


def encode(spec: Any) -> Any:
    from random_programs import CtorSpec
    if isinstance(spec, CtorSpec):
        return {"ctor": spec.name, "fields": [encode(f) for f in spec.fields]}
    if isinstance(spec, tuple):
        return {"tuple": [encode(f) for f in spec]}
    a = np.asarray(spec)
    return {"dtype": a.dtype.name, "shape": list(a.shape), "data": a.reshape(-1).tolist()}


def decode(obj: Any) -> Any:
    from random_programs import CtorSpec
    if "ctor" in obj:
        return CtorSpec(obj["ctor"], tuple(decode(f) for f in obj["fields"]))
    if "tuple" in obj:
        return tuple(decode(f) for f in obj["tuple"])
    return np.array(obj["data"], dtype=obj["dtype"]).reshape(obj["shape"])


def save(f: Failure, directory: Path = DIR) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    item = f.item
    note = f"{item.family} seed {item.seed}: {f.kind}"
    if item.graph is not None:
        model = item.graph.model
        del model.metadata_props[:]
        inputs = {k: encode(v) for k, v in item.graph.inputs.items()}
        for key, value in (("aot_fuzz_inputs", json.dumps(inputs)), ("aot_fuzz_note", note)):
            entry = model.metadata_props.add()
            entry.key, entry.value = key, value
        data = model.SerializeToString()
        path = directory / (hashlib.sha256(data).hexdigest()[:16] + ".onnx")
        path.write_bytes(data)
        return path
    args = json.dumps([encode(s) for s in item.specs])
    text = f"// fuzz: {note}\n// args: {args}\n{item.text}"
    path = directory / (hashlib.sha256(text.encode()).hexdigest()[:16] + ".relay")
    path.write_text(text)
    return path


def load(path: Path) -> Item:
    if path.suffix == ".onnx":
        import onnx
        from onnx_graphs import Graph
        model = onnx.load(str(path))
        props = {p.key: p.value for p in model.metadata_props}
        inputs = {k: decode(v) for k, v in json.loads(props["aot_fuzz_inputs"]).items()}
        family, _, seed = props["aot_fuzz_note"].split(":")[0].split()
        return Item(family, int(seed), graph=Graph(model, inputs))
    lines = path.read_text().split("\n", 2)
    assert lines[0].startswith("// fuzz: ") and lines[1].startswith("// args: "), path
    family, _, seed = lines[0][len("// fuzz: "):].split(":")[0].split()
    specs = tuple(decode(o) for o in json.loads(lines[1][len("// args: "):]))
    return Item(family, int(seed), lines[2], specs)


def saved(directory: Path = DIR) -> list[Path]:
    return sorted(p for p in directory.glob("*") if p.suffix in (".relay", ".onnx"))
