"""The package's layering, read from its own imports.

The rules (DESIGN.md, "Layering"):

* the IR (``aot.ir``) imports nothing above it: not the passes, the
  backend, the frontends, the interpreter, the driver or the package root;
* the passes never import the backend, the frontends or the driver;
* the backend's stages point down only: ``kernel`` < ``objects`` < ``plan`` < ``lower``
  < ``c`` < ``build`` (a stage imports the ones before it);
* no module imports another module's private names or private modules;
* nothing but the command line imports the package root ``aot``.

Every import counts, including those inside functions (a lazy import is
still a dependency).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "aot"

#: the backend's stages, lowest first
STAGES = ("kernel", "objects", "plan", "lower", "c", "build")


@dataclass(frozen=True)
class Import:
    importer: str          # dotted module name
    target: str            # the module imported (for `from m import n`: m, or m.n if a module)
    name: str              # the name imported ("" for a whole module)
    line: int

    def __str__(self) -> str:
        what = f"{self.target}.{self.name}" if self.name else self.target
        return f"{self.importer}:{self.line} imports {what}"


def _module_name(path: Path) -> tuple[str, bool]:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    is_package = parts[-1] == "__init__"
    return ".".join(parts[:-1] if is_package else parts), is_package


MODULES = {_module_name(p)[0]: p for p in sorted(PACKAGE.rglob("*.py"))}


def _imports() -> list[Import]:
    found = []
    for module, path in MODULES.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                found += [Import(module, a.name, "", node.lineno) for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = module.split(".") if is_package else module.split(".")[:-1]
                if node.level:
                    base = base[:len(base) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                for a in node.names:
                    sub = f"{target}.{a.name}"
                    found.append(Import(module, sub, "", node.lineno) if sub in MODULES
                                 else Import(module, target, a.name, node.lineno))
    return [i for i in found if i.target == "aot" or i.target.startswith("aot.")]


IMPORTS = _imports()


def _under(module: str, *packages: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def _violations(importers: tuple[str, ...], forbidden: tuple[str, ...]) -> list[str]:
    return [str(i) for i in IMPORTS
            if _under(i.importer, *importers) and _under(i.target, *forbidden)]


def test_the_ir_imports_nothing_above_it():
    above = ("aot.passes", "aot.emit", "aot.frontend", "aot.interpreter", "aot.compiler",
             "aot.builder", "aot.cli")
    assert not _violations(("aot.ir",), above)


def test_passes_import_neither_the_backend_nor_the_frontends():
    assert not _violations(("aot.passes",), ("aot.emit", "aot.frontend", "aot.compiler",
                                             "aot.cli"))


def test_backend_stages_point_down():
    bad = []
    for i in IMPORTS:
        a, b = i.importer.split("."), i.target.split(".")
        if a[:2] == b[:2] == ["aot", "emit"] and len(a) > 2 and len(b) > 2 \
                and a[2] in STAGES and b[2] in STAGES \
                and STAGES.index(b[2]) > STAGES.index(a[2]):
            bad.append(str(i))
    assert not bad, "a stage imports a later one:\n" + "\n".join(bad)


def test_no_private_names_cross_module_boundaries():
    bad = [str(i) for i in IMPORTS if i.target != i.importer and (
        (i.name.startswith("_") and not i.name.startswith("__"))
        or any(part.startswith("_") and not part.startswith("__")
               for part in i.target.split(".")))]
    assert not bad, "\n".join(bad)


def test_only_the_command_line_imports_the_package_root():
    bad = [str(i) for i in IMPORTS
           if i.target == "aot" and i.importer not in ("aot", "aot.cli", "aot.__main__")]
    assert not bad, "\n".join(bad)


def test_the_rules_see_the_imports():
    """The walk finds relative, absolute and function-level imports."""
    assert any(i.importer == "aot.cli" and i.target == "aot" for i in IMPORTS)
    assert any(i.importer == "aot.emit.lower.dataflow" and i.target == "aot.emit.plan.arena"
               for i in IMPORTS)
    assert len(IMPORTS) > 500


def test_every_family_module_is_registered_by_its_package():
    """The operator, lowering and converter families register by being
    imported from their package's ``__init__``: a family file missing there
    would silently register nothing."""
    for package in ("aot.ir.ops", "aot.emit.lower.ops", "aot.frontend.onnx.ops",
                    "aot.frontend.tflite.ops"):
        imported = {i.target for i in IMPORTS if i.importer == package}
        modules = {m for m in MODULES if m.startswith(package + ".")}
        helpers = {m for m in modules
                   if not any(i.target == m for i in IMPORTS if i.importer == package)
                   and any(i.target == m for i in IMPORTS if i.importer.startswith(package))}
        missing = sorted(modules - imported - helpers)
        assert not missing, f"{package}/__init__.py does not import {missing}"
