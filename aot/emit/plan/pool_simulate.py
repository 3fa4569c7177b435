"""The exact pool need of a call: ``runtime_c/aot_runtime.h``'s allocator
run over every path of the entry function's object IR.

Design note
-----------
The pool's behaviour is deterministic once the path is: block sizes are
static (:mod:`.pool_layout`), and which block a request gets depends only
on the order of earlier allocations and frees.  So this module executes
the object IR (:mod:`aot.emit.objects.ir`) abstractly: values are blocks
of a simulated pool (address, size, reference count, tag, fields, code),
static objects, or *unknown* (``<ext>``: never freed, tag and fields
unknown); tensor contents are not tracked.  Allocation is
``aot_alloc`` (exact-size free lists popped last-in first-out, first fit
with splitting above ``2 * AOT_POOL_SMALL_MAX``, the bump pointer),
release is ``aot_release`` (the dead worklist in the C's order) and
``aot_free_block`` (the bump pointer lowered by a block at the top, the
pool reset when nothing is live).  A branch on a tensor (``If``) or on the
tag of an unknown value (``Switch``) forks the path; a ``Switch`` on a
cell the call built takes its tag; a closure call runs the code the
closure holds.

The need is the highest bump pointer of any path: a pool of that many
bytes never fails, and one ``AOT_POOL_ALIGN`` smaller fails on that path.
Self tail loops run iteration by iteration; a loop-head state (pool,
locals) already met in the same call is not explored again (its
continuation is the one already explored; its peak so far is kept), so a
loop that frees what each iteration allocates settles after a few
iterations.  For the same reason paths that reach the same state where
branches join (after an ``If``, a ``Switch``, a call) are merged into one,
keeping the highest and the lowest peak: two branches that allocate alike
cost one path, not two, and a sequence of them does not multiply.  The simulation
gives up (``None``: the caller falls back to allocation totals) on a
recursive call, a closure of unknown code, a loop that has not settled
after :data:`MAX_ITERATIONS`, or more than :data:`MAX_STEPS` statements in
all.  It assumes the pool is empty when the call starts (true when the
entry takes and returns only tensors: every call leaves it empty).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..objects import ir as O
from .pool_layout import LAYOUTS, POOL_SMALL_MAX, Layout

__all__ = ["SimulatedNeed", "simulate", "simulate_layout", "MAX_STEPS", "MAX_ITERATIONS"]

#: statements executed over all paths, plus the live objects of every path
#: at every branch (forks and merges copy and compare pools), before the
#: simulation gives up: ONNX GRU and LSTM (a Loop per direction over a
#: loop per step, whose free lists settle after some 60 iterations) take
#: under 600,000 (2 s); charging branches by pool size makes a program whose
#: paths double at each branch give up in seconds, not minutes
MAX_STEPS = 1_000_000
#: iterations of one self tail loop (per call) before it gives up; an
#: ONNX GRU whose input projection is bound before the loop (ONNX's
#: test_gru_with_initial_bias) reaches a repeated state between 64 and 256
MAX_ITERATIONS = 256
EXT = "<ext>"


class _GiveUp(Exception):
    pass


@dataclass(frozen=True, slots=True)
class SimulatedNeed:
    """``need``: the highest bump pointer of any path; ``least``: the
    lowest peak of a path that ran to its end (a pool below it fails
    whatever the inputs; loops may leave some paths out of it)."""
    need: int
    least: int


def simulate(program: O.ObjectProgram) -> int | None:
    """The exact need over both data models, or ``None`` (module note)."""
    needs = [simulate_layout(program, layout) for layout in LAYOUTS]
    if any(n is None for n in needs):
        return None
    return max(n.need for n in needs if n is not None)


def simulate_layout(program: O.ObjectProgram, layout: Layout) -> SimulatedNeed | None:
    try:
        return _Simulator(program, layout).run()
    except _GiveUp:
        return None


@dataclass
class _Memory:
    """The pool: live objects by address -> (block, rc, tag, fields, code)."""
    heap: dict = field(default_factory=dict)
    small: dict = field(default_factory=dict)     # class -> addresses, last = front
    large: list = field(default_factory=list)     # (address, block), first = front
    top: int = 0
    in_use: int = 0
    #: the highest bump pointer on the paths merged into this one, and the
    #: lowest of their highest bump pointers
    peak: int = 0
    low: int = 0

    def copy(self) -> "_Memory":
        return _Memory(dict(self.heap), {k: list(v) for k, v in self.small.items()},
                       list(self.large), self.top, self.in_use, self.peak, self.low)

    def snapshot(self) -> tuple:
        return (tuple(sorted(self.heap.items())),
                tuple(sorted((k, tuple(v)) for k, v in self.small.items() if v)),
                tuple(self.large), self.top, self.in_use)

    # ---------------------------------------------------- aot_alloc

    def alloc(self, block: int) -> tuple[int, int]:
        addr = None
        if block <= POOL_SMALL_MAX:
            free = self.small.get(block)
            if free:
                addr = free.pop()
        else:
            for i, (a, b) in enumerate(self.large):
                if b >= block:
                    del self.large[i]
                    if b - block >= 2 * POOL_SMALL_MAX:
                        self.large.insert(0, (a + block, b - block))
                        b = block
                    addr, block = a, b
                    break
        if addr is None:
            addr = self.top
            self.top += block
            self.peak = max(self.peak, self.top)
            self.low = max(self.low, self.top)
        self.in_use += block
        return addr, block

    # ------------------------------------------- aot_release, free_block

    def retain(self, v) -> None:
        if isinstance(v, int):
            block, rc, tag, fields, code = self.heap[v]
            self.heap[v] = (block, rc + 1, tag, fields, code)

    def release(self, v) -> None:
        if not isinstance(v, int):
            return
        block, rc, tag, fields, code = self.heap[v]
        if rc > 1:
            self.heap[v] = (block, rc - 1, tag, fields, code)
            return
        dead = [v]
        while dead:
            d = dead.pop()
            for f in self.heap[d][3]:
                if isinstance(f, int):
                    fb, frc, ft, ff, fc = self.heap[f]
                    if frc == 1:
                        dead.append(f)
                    self.heap[f] = (fb, frc - 1, ft, ff, fc)
            self._free(d)

    def _free(self, addr: int) -> None:
        block = self.heap.pop(addr)[0]
        self.in_use -= block
        if self.in_use == 0:
            self.top = 0
            self.small = {}
            self.large = []
        elif addr + block == self.top:
            self.top -= block
        elif block <= POOL_SMALL_MAX:
            self.small.setdefault(block, []).append(addr)
        else:
            self.large.insert(0, (addr, block))


@dataclass
class _Path:
    """One path through a call: the pool, the current function's locals,
    whether its parameters are owned (after a tail jump), its result."""
    mem: _Memory
    env: dict
    owned: bool = False
    result: object = None

    def fork(self) -> "_Path":
        return _Path(self.mem.copy(), dict(self.env), self.owned, self.result)

    def key(self) -> tuple:
        """The state a continuation depends on."""
        return (self.mem.snapshot(), tuple(sorted(self.env.items(), key=str)), self.owned,
                self.result)


def _merged(paths: list[_Path]) -> list[_Path]:
    """``paths`` with those in the same state merged (the continuation of
    a state is the same whichever path reached it): the highest and the
    lowest peak are kept."""
    if len(paths) < 2:
        return paths
    out: dict[tuple, _Path] = {}
    for p in paths:
        key = p.key()
        if key in out:
            q = out[key].mem
            q.peak, q.low = max(q.peak, p.mem.peak), min(q.low, p.mem.low)
        else:
            out[key] = p
    return list(out.values())


class _Simulator:
    def __init__(self, program: O.ObjectProgram, layout: Layout) -> None:
        self.layout = layout
        self.codes: dict[str, O.Code] = {c.name: c for c in program.functions}
        self.statics = {s.symbol: s for s in program.statics}
        self.entry = program.entry
        self.steps = 0
        self.calls: list[str] = []
        self.ends: list[_Memory] = []   # the pool of each path that ran to its end

    def run(self) -> SimulatedNeed:
        start = _Path(_Memory(), {p: EXT for p in self.entry.params})
        paths = self._body(self.entry, [start])
        self.ends.extend(p.mem for p in paths)
        return SimulatedNeed(max((m.peak for m in self.ends), default=0),
                             min((m.low for m in self.ends), default=0))

    # ------------------------------------------------------------ values

    def value(self, path: _Path, v: O.Value):
        if isinstance(v, O.Var):
            return path.env.get(v.name)
        if isinstance(v, O.StaticRef):
            return v.symbol
        if isinstance(v, O.Field):
            base = self.value(path, v.base)
            if isinstance(base, int):
                return path.mem.heap[base][3][v.index]
            return EXT
        return EXT

    # --------------------------------------------------------- functions

    def _body(self, fn: O.Function, paths: list[_Path]) -> list[_Path]:
        """The paths through ``fn`` that return (its cleanup run), each
        with ``result`` set."""
        seen: set = set()
        done: list[_Path] = []
        for _ in range(MAX_ITERATIONS):
            fall, ret, jumped = self._block(fn, fn.body, paths)
            done.extend(fall + ret)
            paths = []
            for p in jumped:
                key = p.key()
                if key not in seen:
                    seen.add(key)
                    paths.append(p)
                else:       # continues as the path that met this state first
                    self.ends.append(p.mem)
            if not paths:
                break
        else:
            raise _GiveUp()
        for p in done:
            self._block(fn, fn.cleanup, [p])
        return _merged(done)

    def _invoke(self, path: _Path, name: str | None, self_obj, args: list) -> list[_Path]:
        code = self.codes.get(name) if name is not None else None
        if code is None or name in self.calls:
            raise _GiveUp()
        if isinstance(code, O.ForwardCode):
            return self._invoke(path, code.target, None, args)
        if isinstance(code, O.ConstructorCode):
            addr, block = path.mem.alloc(self.layout.cell(code.arity))
            for a in args:
                path.mem.retain(a)
            path.mem.heap[addr] = (block, 1, code.tag, tuple(args), None)
            path.result = addr
            return [path]
        env = {p: a for p, a in zip(code.params, args)}
        if code.kind is O.FunctionKind.CLOSURE:
            env["self"] = self_obj
        self.calls.append(code.name)
        out = self._body(code, [_Path(path.mem, env)])
        self.calls.pop()
        return out

    # -------------------------------------------------------- statements

    def _block(self, fn: O.Function, block: O.Block, paths: list[_Path]):
        """(fall-through, returned, tail-jumped) paths through ``block``;
        paths that raise end here (their peak is recorded)."""
        ret: list[_Path] = []
        jumped: list[_Path] = []
        for s in block:
            if not paths:
                break
            self.steps += len(paths)
            if self.steps > MAX_STEPS:
                raise _GiveUp()
            if isinstance(s, (O.If, O.Switch)):
                # forking and merging copy and compare each path's pool
                self.steps += sum(len(p.mem.heap) for p in paths)
                paths, r, j = (self._if(fn, s, paths) if isinstance(s, O.If) else
                               self._switch(fn, s, paths))
                paths, ret, jumped = _merged(paths), ret + r, jumped + j
            elif isinstance(s, (O.Raise, O.Return, O.TailJump)):
                self._exit(fn, s, paths)
                ret += paths if isinstance(s, O.Return) else []
                jumped += paths if isinstance(s, O.TailJump) else []
                paths = []
            elif isinstance(s, (O.CallFunction, O.CallClosure)):
                paths = _merged([q for p in paths for q in self._call(s, p)])
            else:
                for p in paths:
                    self._simple(s, p)
        return paths, ret, jumped

    def _if(self, fn: O.Function, s: O.If, paths: list[_Path]):
        forks = [p.fork() for p in paths]
        f1, r1, j1 = self._block(fn, s.then, paths)
        f2, r2, j2 = self._block(fn, s.otherwise, forks)
        return f1 + f2, r1 + r2, j1 + j2

    def _exit(self, fn: O.Function, s: O.Raise | O.Return | O.TailJump,
              paths: list[_Path]) -> None:
        for p in paths:
            if isinstance(s, O.Raise):
                self.ends.append(p.mem)
            elif isinstance(s, O.Return):
                p.result = self.value(p, s.value)
                p.mem.retain(p.result)
            else:
                self._tail_jump(fn, s, p)

    def _switch(self, fn: O.Function, s: O.Switch, paths: list[_Path]):
        tags = [t for t, _ in s.cases]
        groups: dict[int, list[_Path]] = {}
        for p in paths:
            v = self.value(p, s.scrutinee)
            if isinstance(v, int):
                known = [p.mem.heap[v][2]]
            elif v in self.statics:
                known = [self.statics[v].tag]
            else:
                known = [*tags, -1]
            for k, tag in enumerate(known):
                index = tags.index(tag) if tag in tags else len(tags)
                groups.setdefault(index, []).append(p if k == 0 else p.fork())
        blocks = [*(b for _, b in s.cases), s.default]
        fall: list[_Path] = []
        ret: list[_Path] = []
        jumped: list[_Path] = []
        for index in sorted(groups):
            f, r, j = self._block(fn, blocks[index], groups[index])
            fall, ret, jumped = fall + f, ret + r, jumped + j
        return fall, ret, jumped

    def _call(self, s: O.CallFunction | O.CallClosure, path: _Path) -> list[_Path]:
        args = [self.value(path, a) for a in s.args]
        name: str | None
        if isinstance(s, O.CallFunction):
            name, self_obj = s.function, None
        else:
            self_obj = self.value(path, s.closure)
            if isinstance(self_obj, int):
                name = path.mem.heap[self_obj][4]
            elif self_obj in self.statics:
                name = self.statics[self_obj].code
            else:
                raise _GiveUp()
        outs = self._invoke(_Path(path.mem, {}), name, self_obj, args)
        back = []
        for k, out in enumerate(outs):
            env = path.env if k == 0 else dict(path.env)
            env[s.dst] = out.result
            back.append(_Path(out.mem, env, path.owned))
        return back

    def _tail_jump(self, fn: O.Function, s: O.TailJump, p: _Path) -> None:
        new = [p.env.get(a) for a in s.args]
        for t in fn.temps:
            p.mem.release(p.env.get(t))
            p.env[t] = None
        if p.owned:
            for q in fn.params:
                p.mem.release(p.env.get(q))
        for q, a in zip(fn.params, new):
            p.env[q] = a
        p.owned = True

    def _simple(self, s: O.Stmt, p: _Path) -> None:
        """A statement without control flow (kernels, copies, the entry's
        bookkeeping and the cycle collection, which runs after every
        allocation, change no block)."""
        handler = getattr(self, "_" + type(s).__name__, None)
        if handler is not None:
            handler(s, p)

    def _AllocTensor(self, s: O.AllocTensor, p: _Path) -> None:
        addr, block = p.mem.alloc(self.layout.tensor(s.nbytes))
        p.mem.heap[addr] = (block, 1, 0, (), None)
        p.env[s.dst] = addr

    def _AllocCell(self, s: O.AllocCell, p: _Path) -> None:
        addr, block = p.mem.alloc(self.layout.cell(s.nfields))
        p.mem.heap[addr] = (block, 1, s.tag, (None,) * s.nfields, None)
        p.env[s.dst] = addr

    def _SetField(self, s: O.SetField, p: _Path) -> None:
        obj, v = self.value(p, s.obj), self.value(p, s.value)
        p.mem.retain(v)
        if isinstance(obj, int):
            block, rc, tag, fields, code = p.mem.heap[obj]
            fields = fields[:s.index] + (v,) + fields[s.index + 1:]
            p.mem.heap[obj] = (block, rc, tag, fields, code)

    def _SetCode(self, s: O.SetCode, p: _Path) -> None:
        obj = self.value(p, s.obj)
        if isinstance(obj, int):
            block, rc, tag, fields, _ = p.mem.heap[obj]
            p.mem.heap[obj] = (block, rc, tag, fields, s.code)

    def _Retain(self, s: O.Retain, p: _Path) -> None:
        v = self.value(p, s.src)
        p.mem.retain(v)
        p.env[s.dst] = v

    def _Take(self, s: O.Take, p: _Path) -> None:
        p.env[s.dst] = self.value(p, s.src)

    def _Release(self, s: O.Release, p: _Path) -> None:
        p.mem.release(p.env.get(s.var))

    def _Clear(self, s: O.Clear, p: _Path) -> None:
        p.env[s.var] = None

    def _ReleaseParams(self, s: O.ReleaseParams, p: _Path) -> None:
        if p.owned:
            for q in s.params:
                p.mem.release(p.env.get(q))

    def _StoreOutput(self, s: O.StoreOutput, p: _Path) -> None:
        p.mem.retain(self.value(p, s.src))
