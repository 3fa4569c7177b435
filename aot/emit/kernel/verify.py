"""The kernel-IR verifier.

:func:`verify_kernel` checks what construction cannot check node by node,
and what :mod:`aot.emit.c.printer` relies on to print C that compiles
warning-free, collecting every problem before it raises:

* **Scoping** (the rules in :mod:`aot.emit.kernel.ir`): a variable is used
  only where its :class:`For` or :class:`Decl` is visible, with the dtype it
  was declared with; no name is declared twice in nested scopes; loop
  variables are never assigned; every temporary is read.
* **Buffers**: parameters are distinct and not ``LOCAL``; a buffer that is
  not a parameter is ``LOCAL`` or ``CONST``; one name, one buffer; constant
  indices lie inside the buffer.
* **Names**: no variable shares a name with a buffer or shadows a called
  or ``math.h`` function; the ``aot_`` prefix belongs to the runtime.
* **Warning hazards**: comparisons decided by their operands' ranges
  (:func:`~aot.emit.kernel.ranges.decided_comparison`) and the like, which
  :mod:`aot.emit.kernel.simplify` folds away.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...ir.dtype import DType
from .ir import (MATH_FUNCTIONS, Assign, BinaryOperator, BinOp, Block, Buffer, BufferScope,
                 Call, Cast, Comment, Const, Decl, Expr, For, IfThenElse, Kernel,
                 KernelIRError, Load, Stmt, Store, Var)
from .ranges import decided_comparison
from .walk import buffers_in, walk_exprs

__all__ = ["verify_kernel"]


def _warning_hazard(e: Expr) -> str | None:
    """Why the C for ``e`` would draw a -Wall/-Wextra warning, if it would."""
    if isinstance(e, BinOp):
        if decided_comparison(e) is not None:
            return f"comparison {e.op.value} on {e.a.dtype} decided by the operands' ranges"
        if e.op is BinaryOperator.BIT_XOR and e.a.dtype is DType.BOOL and e.a == e.b:
            return "bool ^ of identical operands (printed as a self-comparison)"
    if isinstance(e, Cast) and e.to is DType.BOOL and (e.a.dtype.is_int):
        if decided_comparison(BinOp(BinaryOperator.NE, e.a, Const(0, e.a.dtype))) is not None:
            return "conversion to bool decided by the operand's range"
    return None


def verify_kernel(kernel: Kernel) -> None:
    """Check scoping, buffer use and names; raise KernelIRError listing
    every problem found.  What the printer relies on to produce C that
    compiles warning-free is checked here."""
    problems = _Verifier(kernel).run()
    if problems:
        raise KernelIRError(f"kernel {kernel.name}:\n  " + "\n  ".join(problems))


@dataclass
class _Binding:
    var: Var
    is_loop: bool
    read: bool = False


class _Verifier:
    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.problems: list[str] = []
        self.buffers: dict[str, Buffer] = {}
        self.scopes: list[dict[str, _Binding]] = []
        self.bindings: list[_Binding] = []
        self.functions: set[str] = set()

    def run(self) -> list[str]:
        for p in self.kernel.params:
            if p.name in self.buffers:
                self.problems.append(f"duplicate parameter {p.name}")
            if p.scope is BufferScope.LOCAL:
                self.problems.append(f"local buffer {p.name} cannot be a parameter")
            self.buffers[p.name] = p
        for b in buffers_in(self.kernel.body):
            known = self.buffers.get(b.name)
            if known is None:
                if b.scope not in (BufferScope.LOCAL, BufferScope.CONST):
                    self.problems.append(f"buffer {b.name} ({b.scope.value}) is not a parameter")
                self.buffers[b.name] = b
            elif known != b:
                self.problems.append(f"two different buffers named {b.name}")
        self.stmt(self.kernel.body, new_scope=True)
        for b in self.bindings:
            if not b.is_loop and not b.read:
                self.problems.append(f"temporary {b.var.name} is never read")
        names = {b.var.name for b in self.bindings}
        for name in sorted(names & set(self.buffers)):
            self.problems.append(f"{name} names both a variable and a buffer")
        reserved = self.functions | {f for base in MATH_FUNCTIONS for f in (base, base + "f")}
        for name in sorted((names | set(self.buffers)) & reserved):
            self.problems.append(f"{name} shadows a function")
        for name in sorted(names | set(self.buffers)):
            if name.lower().startswith("aot_"):
                self.problems.append(f"{name}: the aot_ prefix is reserved for the runtime")
        return self.problems

    def lookup(self, name: str) -> _Binding | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def bind(self, v: Var, is_loop: bool) -> None:
        if self.lookup(v.name) is not None:
            self.problems.append(f"{v.name} is declared twice in nested scopes")
        binding = _Binding(v, is_loop)
        self.scopes[-1][v.name] = binding
        self.bindings.append(binding)

    def expr(self, root: Expr) -> None:
        for e in walk_exprs(root):
            if isinstance(e, Var):
                bound = self.lookup(e.name)
                if bound is None:
                    self.problems.append(f"{e.name} used out of scope")
                    continue
                if bound.var != e:
                    self.problems.append(f"{e.name} used as {e.dtype}, declared {bound.var.dtype}")
                bound.read = True
            elif isinstance(e, Load):
                self.access(e.buffer, e.index, e.lanes)
            elif isinstance(e, Call):
                self.functions.add(e.name)
            hazard = _warning_hazard(e)
            if hazard is not None:
                self.problems.append(f"{hazard}: compilers warn about it "
                                     f"(run aot.emit.kernel.simplify first)")

    def access(self, buffer: Buffer, index: Expr, lanes: int = 1) -> None:
        if isinstance(index, Const) and not 0 <= int(index.value) <= buffer.size - lanes:
            self.problems.append(f"constant index {index.value} outside {buffer.name}"
                                 f"[{buffer.size}]")

    def stmt(self, s: Stmt, new_scope: bool = False) -> None:
        if isinstance(s, Block):
            if new_scope:
                self.scopes.append({})
            for x in s.stmts:
                self.stmt(x, new_scope=True)
            if new_scope:
                self.scopes.pop()
        elif isinstance(s, For):
            self.expr(s.start)
            self.expr(s.extent)
            self.scopes.append({})
            self.bind(s.var, is_loop=True)
            self.stmt(s.body, new_scope=True)
            self.scopes.pop()
        elif isinstance(s, IfThenElse):
            self.expr(s.cond)
            self.stmt(s.then, new_scope=True)
            if s.else_ is not None:
                self.stmt(s.else_, new_scope=True)
        elif isinstance(s, Store):
            self.expr(s.index)
            self.expr(s.value)
            self.access(s.buffer, s.index)
        elif isinstance(s, Decl):
            if s.init is not None:
                self.expr(s.init)
            self.bind(s.var, is_loop=False)
        elif isinstance(s, Assign):
            self.expr(s.value)
            bound = self.lookup(s.var.name)
            if bound is None:
                self.problems.append(f"assignment to undeclared {s.var.name}")
            elif bound.is_loop:
                self.problems.append(f"assignment to loop variable {s.var.name}")
            elif bound.var != s.var:
                self.problems.append(f"{s.var.name} assigned as {s.var.dtype}, "
                                     f"declared {bound.var.dtype}")
        elif isinstance(s, Comment):
            pass
        else:
            self.problems.append(f"unknown statement {type(s).__name__}")
