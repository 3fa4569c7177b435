"""Audit the operator catalogue's attribute defaults against Relay's.

Every registered operator with a Relay counterpart has two sets of
defaults to agree with:

* the **C++ attrs defaults** (``TVM_ATTR_FIELD(f).set_default(...)`` in
  ``include/tvm/relay/attrs/*.h`` and ``include/tvm/relay/qnn/attrs.h``):
  Relay's text format omits an attribute equal to it, so our text parser
  must fill in exactly that value -- it is our attrs dataclass's default;
* the **Python API defaults** (the keyword defaults of
  ``python/tvm/relay/op/**.py`` and ``python/tvm/relay/qnn/op/*.py``):
  our builder mirrors that API, so its keyword defaults (the record's
  ``api_defaults``, else the attrs default) must equal them.

The operator -> C++ attrs struct map comes from the registrations in
``src/relay/op`` and ``src/relay/qnn/op`` (``RELAY_REGISTER_OP(name)
... .set_attrs_type<X>()``); the Python function is the operator's short
name in its namespace's API files.  Values are compared after a small
normalisation: ``NullValue<...>()``, ``None``, ``[]`` and (for an
optional dtype) ``""`` are all "unset"; a Python ``None`` whose body
computes the real default is listed as not compared.

Usage (a TVM work tree, or a bare repository with a revision)::

    python scripts/audit_relay_defaults.py /path/to/tvm
    python scripts/audit_relay_defaults.py /work/.mirror/apache+tvm/repo --rev v0.19.0

Exit status 1 when a difference is found.  Neither tests nor users need
this script; it is a maintenance tool.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from aot.ir.attrs import to_raw
from aot.ir.registry import OpDef, all_ops

ATTRS_HEADERS = ("include/tvm/relay/attrs/", "include/tvm/relay/qnn/attrs.h")
REGISTRATION_DIRS = ("src/relay/op/", "src/relay/qnn/op/")
#: operator name prefix -> the Python API files that define its functions
PY_API = {
    "": ("python/tvm/relay/op/tensor.py", "python/tvm/relay/op/transform.py",
         "python/tvm/relay/op/reduce.py", "python/tvm/relay/op/algorithm.py"),
    "nn": ("python/tvm/relay/op/nn/nn.py",),
    "image": ("python/tvm/relay/op/image/image.py",),
    "qnn": ("python/tvm/relay/qnn/op/qnn.py",),
}
#: a Python default we could not evaluate, or a parameter without one
NO_DEFAULT = object()


# ------------------------------------------------------------ reading TVM

class Source:
    """Files of a TVM checkout: a work tree, or a git repository at ``rev``."""

    def __init__(self, path: Path, rev: str | None) -> None:
        self.path = path
        self.rev = rev
        if rev is not None:
            self.rev = self._git("rev-parse", f"{rev}^{{commit}}").strip() \
                if not rev.startswith("refs/") else rev
        elif not (path / "include" / "tvm").is_dir():
            sys.exit(f"{path} is not a TVM work tree (give --rev for a bare repository)")

    def _git(self, *args: str) -> str:
        try:
            return subprocess.run(["git", "-C", str(self.path), *args], check=True,
                                  capture_output=True, text=True).stdout
        except subprocess.CalledProcessError as exc:
            # an ambiguous tag name (tag and branch) resolves through refs/tags/
            if args[0] == "rev-parse" and not args[1].startswith("refs/"):
                return self._git("rev-parse", "refs/tags/" + args[1])
            sys.exit(f"git {' '.join(args)}: {exc.stderr.strip()}")

    def files(self, prefix: str) -> list[str]:
        if self.rev is not None:
            return sorted(self._git("ls-tree", "-r", "--name-only", self.rev, "--",
                                    prefix).split())
        root = self.path / prefix
        found = [root] if root.is_file() else sorted(root.rglob("*"))
        return [str(p.relative_to(self.path)) for p in found if p.is_file()]

    def read(self, name: str) -> str:
        if self.rev is not None:
            return self._git("show", f"{self.rev}:{name}")
        return (self.path / name).read_text()


def balanced(text: str, start: int, open_: str = "(", close: str = ")") -> str:
    """The text between ``text[start]`` (an opening bracket) and its match,
    skipping string and character literals."""
    depth, i = 0, start
    while i < len(text):
        c = text[i]
        if c in "\"'":
            i += 1
            while text[i] != c:
                i += 2 if text[i] == "\\" else 1
        elif c == open_:
            depth += 1
        elif c == close:
            depth -= 1
            if depth == 0:
                return text[start + 1:i]
        i += 1
    raise ValueError(f"unbalanced {open_} at {start}")


# ------------------------------------------------------- the C++ defaults

@dataclass(frozen=True)
class CppField:
    name: str
    default: Any            # NO_DEFAULT when the field has none (required)
    spelling: str           # the C++ expression, for the report


def cpp_structs(src: Source) -> dict[str, dict[str, CppField]]:
    """struct name -> field name -> its default, from the attrs headers."""
    structs: dict[str, dict[str, CppField]] = {}
    for prefix in ATTRS_HEADERS:
        for name in src.files(prefix):
            if name.endswith(".h"):
                structs.update(_structs_in(src.read(name)))
    return structs


def _structs_in(text: str) -> Iterator[tuple[str, dict[str, CppField]]]:
    for m in re.finditer(r"struct\s+(\w+)\s*:\s*public\s+(?:tvm::)?AttrsNode<\1>", text):
        decl = text.index("TVM_DECLARE_ATTRS", m.end())
        body = balanced(text, text.index("{", decl), "{", "}")
        fields: dict[str, CppField] = {}
        starts = [f for f in re.finditer(r"TVM_ATTR_FIELD\((\w+)\)", body)]
        for f, nxt in zip(starts, starts[1:] + [None]):
            chain = body[f.end():nxt.start() if nxt else len(body)]
            d = chain.find(".set_default(")
            if d < 0:
                fields[f.group(1)] = CppField(f.group(1), NO_DEFAULT, "(none)")
                continue
            spelling = " ".join(balanced(chain, d + len(".set_default")).split())
            fields[f.group(1)] = CppField(f.group(1), cpp_value(spelling), spelling)
        yield m.group(1), fields


def cpp_value(e: str) -> Any:
    """A C++ default expression as a raw attribute value (None = unset)."""
    e = e.strip()
    if e.startswith("NullValue<") or e == "nullptr":
        return None
    if e.startswith('"'):
        return ast.literal_eval(e)
    if e in ("true", "false"):
        return e == "true"
    m = re.fullmatch(r"Bool\((\w+)\)|Integer\((.+)\)|static_cast<\w+>\((.+)\)", e)
    if m:
        return cpp_value(next(g for g in m.groups() if g is not None))
    m = re.fullmatch(r"DataType::(Float|Int|UInt)\((\d+)(?:,\s*1)?\)", e)
    if m:
        return {"Float": "float", "Int": "int", "UInt": "uint"}[m.group(1)] + m.group(2)
    m = re.fullmatch(r"Array<[\w:<>]+>\s*\(?\{(.*)\}\)?", e)
    if m:
        return [cpp_value(x) for x in m.group(1).split(",") if x.strip()]
    m = re.fullmatch(r"(-?[\d.]+(?:e-?\d+)?)f?", e)
    if m:
        num = m.group(1)
        return float(num) if any(c in num for c in ".e") else int(num)
    return NO_DEFAULT


def op_structs(src: Source) -> dict[str, str]:
    """operator name -> its C++ attrs struct ("" when it has none), from
    the registrations (a registration macro's body counts: it may add a
    prefix, ``RELAY_REGISTER_OP("qnn." OpName)``, and the attrs type)."""
    texts = [src.read(n) for d in REGISTRATION_DIRS for n in src.files(d)
             if n.endswith((".cc", ".h"))]
    macros = {}
    for text in texts:
        for m in re.finditer(r"#define\s+(\w*REGISTER_\w*OP)\(OpName\)((?:.*\\\n)*.*)", text):
            macros[m.group(1)] = m.group(2)
    out: dict[str, str] = {}
    for text in texts:
        regs = list(re.finditer(r"\b(\w*REGISTER_\w*OP)\(\"([\w.]+)\"\)", text))
        for r, nxt in zip(regs, regs[1:] + [None]):
            macro = macros.get(r.group(1), "")
            prefix = re.search(r"RELAY_REGISTER_OP\(\"([\w.]*)\" OpName\)", macro)
            name = (prefix.group(1) if prefix else "") + r.group(2)
            chunk = text[r.end():nxt.start() if nxt else len(text)] + macro
            found = re.search(r"set_attrs_type<(\w+)>", chunk)
            if found and name not in out:
                out[name] = found.group(1)
            elif name not in out and "set_num_inputs" in chunk:
                out[name] = ""
    return out


# ---------------------------------------------------- the Python defaults

def py_signatures(src: Source) -> dict[str, dict[str, Any]]:
    """``prefix.name`` -> parameter -> Python default (NO_DEFAULT when none)."""
    out: dict[str, dict[str, Any]] = {}
    for prefix, files in PY_API.items():
        for name in files:
            for node in ast.parse(src.read(name)).body:
                if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
                    key = f"{prefix}.{node.name}" if prefix else node.name
                    out.setdefault(key, _defaults(node.args))
    return out


def _defaults(args: ast.arguments) -> dict[str, Any]:
    params = args.posonlyargs + args.args
    padded = [None] * (len(params) - len(args.defaults)) + list(args.defaults)
    pairs = list(zip(params, padded)) + list(zip(args.kwonlyargs, args.kw_defaults))
    out = {}
    for p, d in pairs:
        try:
            out[p.arg] = NO_DEFAULT if d is None else ast.literal_eval(d)
        except ValueError:
            out[p.arg] = NO_DEFAULT
    return out


# -------------------------------------------------------------- comparing

def _unset(v: Any) -> bool:
    return v is None or v == [] or v == ()


def same(ours: Any, theirs: Any, optional: bool) -> bool:
    """``ours`` (a raw value) equals ``theirs`` after normalisation."""
    if isinstance(theirs, tuple):
        theirs = list(theirs)
    if _unset(ours) or (optional and ours == ""):
        return _unset(theirs) or (optional and theirs == "")
    if isinstance(ours, bool) or isinstance(theirs, bool):
        return isinstance(theirs, (bool, int)) and bool(ours) == bool(theirs) \
            and theirs in (0, 1) and ours in (0, 1)
    if isinstance(ours, (int, float)) and isinstance(theirs, (int, float)):
        return float(ours) == float(theirs)
    if isinstance(ours, list) and isinstance(theirs, (int, float)) and ours:
        # a scalar the Python body widens to every position (conv1d's strides=1)
        return all(same(a, theirs, False) for a in ours)
    if isinstance(ours, list) and isinstance(theirs, list):
        return len(ours) == len(theirs) and all(same(a, b, False) for a, b in zip(ours, theirs))
    return bool(ours == theirs)


@dataclass
class Report:
    compared: list[str] = dataclasses.field(default_factory=list)
    python_only: list[str] = dataclasses.field(default_factory=list)
    no_counterpart: list[str] = dataclasses.field(default_factory=list)
    fields: int = 0
    cpp_diffs: list[str] = dataclasses.field(default_factory=list)
    py_diffs: list[str] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)


def audit_op(op: OpDef, struct: str, structs: dict[str, dict[str, CppField]],
             py: dict[str, Any] | None, rep: Report) -> None:
    cpp = structs.get(struct, {})
    ours = dataclasses.fields(op.attrs_type)
    if struct and struct not in structs:
        rep.notes.append(f"{op.name}: C++ struct {struct} not found in the attrs headers")
    if not struct and ours and op.name in rep.compared:
        rep.notes.append(f"{op.name}: Relay registers no attrs type; ours has "
                         f"{[f.name for f in ours]}")
    builder_attrs = op.builder_defaults()
    for f in ours:
        rep.fields += 1
        default = to_raw(f.default if f.default is not dataclasses.MISSING
                         else f.default_factory())  # type: ignore[misc]
        optional = "None" in str(f.type)
        c = cpp.get(f.name)
        if struct and c is None:
            rep.notes.append(f"{op.name}.{f.name}: not a field of C++ {struct}")
        elif c is not None and c.default is NO_DEFAULT:
            rep.notes.append(f"{op.name}.{f.name}: C++ has no default ({c.spelling}); "
                             f"ours {default!r}")
        elif c is not None and not same(default, c.default, optional):
            rep.cpp_diffs.append(f"{op.name}.{f.name}: attrs {default!r} vs C++ "
                                 f"{c.spelling}")
        if py is None or f.name not in py:
            continue
        builder = to_raw(getattr(builder_attrs, f.name))
        p = py[f.name]
        if p is NO_DEFAULT:
            continue   # a required Python parameter: any builder default will do
        if p is None and not _unset(builder) and not optional:
            rep.notes.append(f"{op.name}.{f.name}: Python None (computed in the body); "
                             f"builder {builder!r}")
        elif not same(builder, p, optional):
            rep.py_diffs.append(f"{op.name}.{f.name}: builder {builder!r} vs Python {p!r}")
    for name in sorted(set(cpp) - {f.name for f in ours}):
        rep.notes.append(f"{op.name}: C++ field {struct}.{name} has no counterpart here")


def audit(src: Source) -> Report:
    structs = cpp_structs(src)
    registered = op_structs(src)
    pys = py_signatures(src)
    rep = Report()
    for op in sorted(all_ops(), key=lambda o: o.name):
        py = pys.get(op.name)
        if op.name not in registered:
            # a Python-level composite in Relay (std is sqrt of variance)
            (rep.python_only if py is not None else rep.no_counterpart).append(op.name)
            if py is not None:
                audit_op(op, "", {}, py, rep)
            continue
        rep.compared.append(op.name)
        if py is None and dataclasses.fields(op.attrs_type):
            rep.notes.append(f"{op.name}: no Python API function found")
        audit_op(op, registered[op.name], structs, py, rep)
    return rep


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tvm", type=Path, help="a TVM work tree or git repository")
    ap.add_argument("--rev", help="revision to read (required for a bare repository)")
    args = ap.parse_args(argv)
    rep = audit(Source(args.tvm, args.rev))
    total = len(rep.compared) + len(rep.python_only) + len(rep.no_counterpart)
    print(f"operators: {total} registered, {len(rep.compared)} with a Relay operator, "
          f"{len(rep.python_only)} only a Relay Python function, {rep.fields} attrs fields "
          f"compared")
    if rep.python_only:
        print(f"Relay Python function only (no C++ attrs): {', '.join(rep.python_only)}")
    if rep.no_counterpart:
        print(f"no Relay counterpart: {', '.join(rep.no_counterpart)}")
    for title, lines in (("attrs defaults differing from the C++ attrs", rep.cpp_diffs),
                         ("builder defaults differing from the Python API", rep.py_diffs),
                         ("notes (not differences)", rep.notes)):
        print(f"\n{title}: {len(lines)}")
        for line in lines:
            print(f"  {line}")
    return 1 if rep.cpp_diffs or rep.py_diffs else 0


if __name__ == "__main__":
    sys.exit(main())
