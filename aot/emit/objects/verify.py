"""The object-IR verifier: reference counting checked on every path.

Design note
-----------
:func:`verify_program` runs each function's body as an abstract
interpretation over the *state* of each local, following every path
(both arms of an ``If``, every case of a ``Switch``; a ``TailJump``,
``Return`` or ``Raise`` ends a path):

* ``UNSET`` -- declared, NULL, never assigned on this path;
* ``HELD`` -- holds a reference the function owns;
* ``BORROWED`` -- a parameter (or ``self``): valid, not ours to release;
* ``RELEASED`` / ``CLEARED`` -- released (and set to NULL after it).

A local's abstract value is the *set* of states it may be in; where paths
join the sets are united, so a rule that must hold on every path holds
for every state in the set.  The rules, each named in the error:

1. **defined before use**: a value read is ``HELD`` or ``BORROWED`` on
   every path, and declared (a parameter, temporary or local);
2. **nothing used after release**: not ``RELEASED`` nor ``CLEARED``;
3. **released exactly once**: an assignment never overwrites a reference
   still held (a leak); a ``Release`` releases a ``HELD`` local; a
   temporary released in the body is cleared before anything releases it
   again (the cleanup and every ``TailJump`` release every temporary); the
   cleanup releases each temporary exactly once and nothing else;
4. **every error path frees what it holds**: at every exit to ``done``
   (``Return``, ``Raise``, the failure edge of an allocation or a call,
   the end of the entry's body) no local but the temporaries holds a
   reference, and no temporary is released-but-not-cleared;
5. **structure**: no statement after one that ends its path; a function
   body (not the entry's) ends on every path; ``loops`` is set exactly
   when there is a ``TailJump``, whose arguments are held locals, one per
   parameter; entry statements only in the entry; every function, static
   object and code a statement names exists.

A violation raises :class:`~aot.emit.objects.ir.ObjectIRError` naming the
function and the statement.
"""

from __future__ import annotations

import enum
from typing import Iterable

from . import ir as O
from .walk import describe, iter_stmts, stmt_values, value_statics, value_vars

__all__ = ["verify_program", "verify_function"]


class _S(enum.Enum):
    UNSET = "unset"
    HELD = "held"
    BORROWED = "borrowed"
    RELEASED = "released"
    CLEARED = "cleared"


_State = dict[str, frozenset[_S]]
_HELD = frozenset({_S.HELD})
_VALID = frozenset({_S.HELD, _S.BORROWED})
_ENTRY_ONLY = (O.CheckPointers, O.ClearOutput, O.BeginCall, O.CopyIn, O.CopyOut, O.StoreOutput)
_CLEANUP_ONLY = (O.ReleaseParams, O.Leave, O.CollectCycles, O.EndCall)
_ASSIGNING = (O.AllocTensor, O.AllocCell, O.Retain, O.Take, O.CallFunction, O.CallClosure)
_FALLIBLE = (O.AllocTensor, O.AllocCell, O.CallFunction, O.CallClosure)
_ENDS = (O.Return, O.Raise, O.TailJump)


def verify_program(program: O.ObjectProgram) -> None:
    """Check every function of ``program`` and the names they use."""
    names = [f.name for f in program.functions]
    symbols = {s.symbol for s in program.statics}
    where = "object program"
    _require(len(set(names)) == len(names), where, None, "two functions share a name")
    _require(sorted(program.declared) == sorted(names), where, None,
             "the declared functions are not the defined ones")
    known = set(names) | symbols
    for s in program.statics:
        _require(s.code is None or s.code in names, s.symbol, None, f"no code {s.code}")
    for code in (*program.functions, program.entry):
        if isinstance(code, O.Function):
            verify_function(code, known)
        elif isinstance(code, O.ForwardCode):
            _require(code.target in names, code.name, None, f"no function {code.target}")


def verify_function(fn: O.Function, known: set[str] | None = None) -> None:
    """Check ``fn`` (see the module note); ``known``: the functions and
    static objects its statements may name (None: not checked)."""
    _Checker(fn, known).run()


def _require(ok: bool, where: str, stmt: O.Stmt | None, message: str) -> None:
    if not ok:
        at = "" if stmt is None else f" at {describe(stmt)}"
        raise O.ObjectIRError(f"object IR of {where}{at}: {message}")


class _Checker:
    def __init__(self, fn: O.Function, known: set[str] | None) -> None:
        self.fn = fn
        self.known = known
        self.temps = set(fn.temps)
        self.locals = set(fn.locals)
        self.is_entry = fn.kind is O.FunctionKind.ENTRY

    def fail(self, ok: bool, stmt: O.Stmt | None, message: str) -> None:
        _require(ok, f"function {self.fn.name}", stmt, message)

    def run(self) -> None:
        fn = self.fn
        declared = [*fn.params, *fn.temps, *fn.locals]
        self.fail(len(set(declared)) == len(declared), None, "a local is declared twice")
        jumps = any(isinstance(s, O.TailJump) for s in iter_stmts(fn.body))
        self.fail(jumps == fn.loops, None, "`loops` does not match the tail jumps")
        self.check_cleanup()
        state: _State = {name: frozenset({_S.UNSET}) for name in (*fn.temps, *fn.locals)}
        state.update((p, frozenset({_S.BORROWED})) for p in fn.params)
        if fn.kind is O.FunctionKind.CLOSURE:
            state["self"] = frozenset({_S.BORROWED})
        end = self.block(fn.body, state)
        if end is not None:
            self.fail(self.is_entry, None, "the body does not end on every path")
            self.exit(end, None)

    def check_cleanup(self) -> None:
        released = [s.var for s in self.fn.cleanup if isinstance(s, O.Release)]
        self.fail(sorted(released) == sorted(self.fn.temps), None,
                  f"the cleanup releases {released}, not each temporary once "
                  f"{list(self.fn.temps)}")
        for s in self.fn.cleanup:
            self.fail(isinstance(s, (O.Release, *_CLEANUP_ONLY)), s, "not a cleanup statement")
            for v in stmt_values(s):
                self.fail(isinstance(v, O.Deref) or next(value_vars(v), None) in self.fn.params,
                          s, "the cleanup reads a local")
        params = [s for s in self.fn.cleanup if isinstance(s, O.ReleaseParams)]
        self.fail(bool(params) == self.fn.loops, None,
                  "owned parameters are released iff the function loops")

    # ------------------------------------------------------------ paths

    def block(self, block: O.Block, state: _State | None) -> _State | None:
        for s in block:
            if state is None:
                self.fail(False, s, "unreachable: after a statement that ends the path")
                return None
            state = self.stmt(s, state)
        return state

    def read(self, state: _State, stmt: O.Stmt, values: Iterable[O.Value]) -> None:
        for v in values:
            for name in value_vars(v):
                st = state.get(name, frozenset())
                self.fail(name in state, stmt, f"{name} is not declared")
                self.fail(not st & {_S.RELEASED, _S.CLEARED}, stmt,
                          f"{name} used after release")
                self.fail(st <= _VALID, stmt,
                          f"{name} used before definition on some path ({_name(state, name)})")
            if self.known is not None:
                for symbol in value_statics(v):
                    self.fail(symbol in self.known, stmt, f"no static object {symbol}")
            self.fail(not isinstance(v, O.Deref) or isinstance(stmt, O.CollectCycles), stmt,
                      "an output slot read outside the cycle collection")

    def assign(self, state: _State, stmt: O.Stmt, dst: str) -> None:
        self.fail(dst in self.temps or dst in self.locals, stmt,
                  f"{dst} is not a temporary or local")
        self.fail(_S.HELD not in state[dst], stmt,
                  f"{dst} assigned while it may hold a reference (a leak)")
        state[dst] = _HELD

    def exit(self, state: _State, stmt: O.Stmt | None) -> None:
        """An exit to ``done`` (the cleanup releases the temporaries)."""
        for name, st in sorted(state.items()):
            if name in self.temps:
                self.fail(_S.RELEASED not in st, stmt,
                          f"{name} released here and again by the cleanup")
            else:
                self.fail(_S.HELD not in st, stmt,
                          f"the exit leaks the reference {name} may hold")

    def stmt(self, s: O.Stmt, state: _State) -> _State | None:
        self.fail(self.is_entry or not isinstance(s, _ENTRY_ONLY), s, "an entry statement")
        self.fail(not isinstance(s, _CLEANUP_ONLY), s, "a cleanup statement in the body")
        self.read(state, s, stmt_values(s) if not isinstance(s, O.CallKernel) else
                  (a.value for a in s.inputs))
        if isinstance(s, _FALLIBLE):
            self.exit(state, s)
        if isinstance(s, (O.If, O.Switch)):
            return self.branches(s, state)
        if isinstance(s, _ENDS):
            self.end(s, state)
            return None
        if isinstance(s, _ASSIGNING):
            self.assign(state, s, s.dst)
        self.effect(s, state)
        return state

    def effect(self, s: O.Stmt, state: _State) -> None:
        if isinstance(s, O.Release):
            self.fail(state.get(s.var) == _HELD, s,
                      f"{s.var} released but it may hold no reference ({_name(state, s.var)})")
            state[s.var] = frozenset({_S.RELEASED})
        elif isinstance(s, O.Clear):
            self.fail(state.get(s.var) == {_S.RELEASED}, s,
                      f"{s.var} cleared while it may hold a reference ({_name(state, s.var)})")
            state[s.var] = frozenset({_S.CLEARED})
        elif isinstance(s, O.CallKernel):
            for o in s.outputs:
                self.fail(o.temp in self.temps and state.get(o.temp) == _HELD, s,
                          f"kernel output {o.temp} is not a fresh tensor held by a temporary")
        elif isinstance(s, (O.CallFunction, O.SetCode)) and self.known is not None:
            name = s.function if isinstance(s, O.CallFunction) else s.code
            self.fail(name in self.known, s, f"no function {name}")
        elif isinstance(s, O.CopyIn):
            self.fail(state.get(s.dst) == _HELD, s, f"{s.dst} is not a tensor held here")

    def end(self, s: O.Stmt, state: _State) -> None:
        """A statement that ends its path."""
        if not isinstance(s, O.TailJump):
            self.exit(state, s)
            return
        self.fail(len(s.args) == len(self.fn.params), s, "one argument per parameter")
        for a in s.args:
            self.fail(a in self.locals and state.get(a) == _HELD, s,
                      f"{a} is not a local holding the next argument")
        for name, st in sorted(state.items()):
            if name in self.temps:
                self.fail(_S.RELEASED not in st, s, f"{name} released twice by the jump")
            elif name not in s.args:
                self.fail(_S.HELD not in st, s, f"the jump leaks the reference {name} may hold")

    def branches(self, s: O.If | O.Switch, state: _State) -> _State | None:
        blocks = (s.then, s.otherwise) if isinstance(s, O.If) else \
            (*(b for _, b in s.cases), s.default)
        if isinstance(s, O.Switch):
            tags = [t for t, _ in s.cases]
            self.fail(len(set(tags)) == len(tags), s, "a tag switched on twice")
        ends = [self.block(b, dict(state)) for b in blocks]
        return _join([e for e in ends if e is not None])


def _name(state: _State, var: str) -> str:
    st = state.get(var)
    return "not declared" if st is None else " or ".join(sorted(x.value for x in st))


def _join(states: list[_State]) -> _State | None:
    if not states:
        return None
    out = dict(states[0])
    for other in states[1:]:
        for name, st in other.items():
            out[name] = out[name] | st
    return out
