"""IRModule: global functions and type definitions.

A module owns one :class:`GlobalVar` per global name and one
:class:`Constructor` object per constructor name, so that lookups by name
and references by identity agree.  Passes do not mutate a module they are
given: they build a new one (``copy`` then ``add``).
"""

from __future__ import annotations

from typing import Iterator

from .adt import Constructor, TypeData
from .expr import Expr, Function, GlobalVar
from .types import GlobalTypeVar


class IRModule:
    def __init__(self) -> None:
        self.functions: dict[GlobalVar, Function] = {}
        self.type_definitions: dict[GlobalTypeVar, TypeData] = {}
        self._gvars: dict[str, GlobalVar] = {}
        self._ctors: dict[str, Constructor] = {}
        #: the functions and type definitions as type inference returned
        #: them (:func:`~aot.ir.type_infer.infer_types` skips a module that
        #: still holds exactly these objects); None: not inferred
        self._inferred: tuple[tuple, tuple] | None = None

    # ------------------------------------------------------------- globals
    def global_var(self, name: str) -> GlobalVar:
        """The module's GlobalVar for ``name``, created if new."""
        gv = self._gvars.get(name)
        if gv is None:
            gv = self._gvars[name] = GlobalVar(name)
        return gv

    def get_global_var(self, name: str) -> GlobalVar:
        if name not in self._gvars or self._gvars[name] not in self.functions:
            raise KeyError(f"no global function @{name}")
        return self._gvars[name]

    def add(self, gv: GlobalVar | str, func: Expr) -> GlobalVar:
        """Add or replace a global function."""
        if isinstance(gv, str):
            gv = self.global_var(gv)
        else:
            known = self._gvars.setdefault(gv.name, gv)
            assert known is gv, f"a different GlobalVar @{gv.name} is in the module"
        assert isinstance(func, Function), f"@{gv.name} must be a Function"
        self.functions[gv] = func
        return gv

    def __getitem__(self, key: GlobalVar | str) -> Function:
        if isinstance(key, str):
            key = self.get_global_var(key)
        return self.functions[key]

    def __contains__(self, key: GlobalVar | str) -> bool:
        if isinstance(key, str):
            gv = self._gvars.get(key)
            return gv is not None and gv in self.functions
        return key in self.functions

    def __iter__(self) -> Iterator[GlobalVar]:
        return iter(self.functions)

    # ------------------------------------------------------------- types
    def add_type(self, data: TypeData) -> None:
        self.type_definitions[data.header] = data
        for c in data.constructors:
            self._ctors[c.name] = c

    def lookup_type(self, key: GlobalTypeVar | str) -> TypeData:
        if isinstance(key, str):
            key = GlobalTypeVar(key)
        return self.type_definitions[key]

    def has_type(self, name: str) -> bool:
        return GlobalTypeVar(name) in self.type_definitions

    def constructor(self, name: str) -> Constructor | None:
        return self._ctors.get(name)

    # ------------------------------------------------------------- whole
    def copy(self) -> IRModule:
        new = IRModule()
        new.functions = dict(self.functions)
        new.type_definitions = dict(self.type_definitions)
        new._gvars = dict(self._gvars)
        new._ctors = dict(self._ctors)
        new._inferred = self._inferred
        return new

    def update(self, other: IRModule) -> None:
        """Add every type definition and function of ``other`` (which must
        not clash with ours)."""
        for data in other.type_definitions.values():
            self.add_type(data)
        for gv, func in other.functions.items():
            self.add(gv, func)

    @property
    def is_typed(self) -> bool:
        return all(f.checked_type is not None for f in self.functions.values())

    @staticmethod
    def from_expr(expr: Expr, base: IRModule | None = None,
                  name: str = "main") -> IRModule:
        """A module whose ``@main`` is ``expr`` (a Function is used as is,
        anything else becomes the body of a function without parameters)."""
        from .analysis import free_vars
        mod = base.copy() if base is not None else IRModule()
        if not isinstance(expr, Function):
            expr = Function(tuple(free_vars(expr)), expr, span=expr.span)
        mod.add(name, expr)
        return mod

    def __str__(self) -> str:
        from .printer import print_module
        return print_module(self)

    def __repr__(self) -> str:
        names = ", ".join("@" + g.name for g in self.functions)
        return f"IRModule({names})"
