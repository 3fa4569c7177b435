"""Shrinking a failing fuzz item to a small reproducer.

Design note
-----------
Greedy delta debugging over the program, keeping a candidate only when it
still fails *the same way* (the same failure kind: a mismatch stays a
mismatch, a compile crash a compile crash) and is smaller:

* Relay items (the ``lang`` and ``chain`` families): the module is typed,
  and every node whose type equals one of its children's types may be
  replaced by that child (a ``let`` by its body, an ``if`` by a branch, a
  call by an argument, a ``match`` by a clause's right side); unused
  global functions are dropped and non-scalar tensor constants become
  zeros.  Each candidate is printed and parsed back, so a candidate that
  leaves a variable unbound or is ill typed is simply rejected by the
  front end.  Candidates removing the largest subtrees are tried first;
  after an accepted step the enumeration restarts on the smaller program.
* ONNX items: the graph is first cut to the ancestors of the earliest
  node output that fails when made the only graph output; then each edge
  from a node into the failing part is cut, its producer replaced by a
  new graph input fed with the value onnxruntime computed for it, and
  nodes no longer reachable are dropped; the result is usually one node
  and its inputs.

Budget: at most ``max_checks`` checks (each may cost a C build) and
``max_seconds``; whatever the budget, the result fails the same way.
"""

from __future__ import annotations

import copy
import time
from typing import Any, Callable

import numpy as np

import aot
from aot.ir.expr import Call, Constant, Expr, If, Let, Match, Var
from aot.ir.module import IRModule
from aot.ir.printer import print_module
from aot.ir.visitor import ExprMutator, children, post_order

from campaign import Failure, Item, check_item


def _prelude_names() -> tuple[set[str], set[str]]:
    p = aot.prelude()
    return {gv.name for gv in p.functions}, {t.name for t in p.type_definitions}


def module_text(mod: IRModule) -> str:
    """The module without the prelude's definitions (the parser adds
    them back)."""
    fns, types = _prelude_names()
    out = IRModule()
    for t, data in mod.type_definitions.items():
        if t.name not in types:
            out.add_type(data)
    for gv, fn in mod.functions.items():
        if gv.name not in fns:
            out.add(gv, fn)
    return print_module(out)


def _replace(fn: Expr, target: Expr, new: Expr) -> Expr:
    m = ExprMutator()
    m.memo[target] = new
    return m.visit(fn)


def _same_type(a: Expr, b: Expr) -> bool:
    try:
        return a.checked_type is not None and a.checked_type == b.checked_type
    except Exception:  # noqa: BLE001 - incomparable types
        return False


def _size(e: Expr) -> int:
    return len(post_order(e))


def relay_candidates(text: str) -> list[str]:
    """Smaller variants of ``text`` (possibly ill formed), biggest cut first."""
    try:
        mod = aot.infer_types(aot.parse(text))
    except aot.DiagnosticError:
        return []
    prelude_fns, _ = _prelude_names()
    scored: list[tuple[int, str]] = []

    def emit(gain: int, variant: IRModule) -> None:
        try:
            scored.append((gain, module_text(variant)))
        except Exception:  # noqa: BLE001 - unprintable variant
            pass

    for gv, fn in list(mod.functions.items()):
        if gv.name in prelude_fns:
            continue
        if gv.name != "main":
            variant = copy.copy(mod)
            variant.functions = {g: f for g, f in mod.functions.items() if g is not gv}
            emit(_size(fn), variant)
        for node in post_order(fn):
            subs: list[Expr] = []
            if isinstance(node, (Let, If, Call, Match)):
                kids = ([c.rhs for c in node.clauses] if isinstance(node, Match)
                        else [c for c in children(node) if not isinstance(c, Var)
                              or isinstance(node, Call)])
                subs = [c for c in kids if _same_type(node, c)]
            elif isinstance(node, Constant) and node.data.ndim > 0 and node.data.any():
                subs = [Constant(np.zeros_like(node.data))]
            for new in subs:
                variant = copy.copy(mod)
                variant.functions = dict(mod.functions)
                variant.functions[gv] = _replace(fn, node, new)
                emit(_size(node) - _size(new) + 1, variant)
    scored.sort(key=lambda s: -s[0])
    seen: set[str] = set()
    return [t for _, t in scored if not (t in seen or seen.add(t)) and t != text]


def _fails_same(item: Item, kind: str) -> bool:
    f = check_item(item)
    return f is not None and f.kind == kind


def shrink_relay(f: Failure, max_checks: int = 150, max_seconds: float = 300,
                 log: Callable[[str], None] = lambda s: None) -> Failure:
    item = f.item
    start, checks = time.monotonic(), 0
    current = item.text
    try:  # the printer's form, which the candidates have (a fair length)
        normal = module_text(aot.infer_types(aot.parse(current)))
    except aot.DiagnosticError:
        normal = current
    if normal != current and _fails_same(Item(item.family, item.seed, normal, item.specs),
                                         f.kind):
        current = normal
    progress = True
    while progress and checks < max_checks and time.monotonic() - start < max_seconds:
        progress = False
        for cand in relay_candidates(current):
            if len(cand) >= len(current):
                continue
            if checks >= max_checks or time.monotonic() - start >= max_seconds:
                break
            checks += 1
            trial = Item(item.family, item.seed, cand, item.specs)
            if _fails_same(trial, f.kind):
                current = cand
                progress = True
                log(f"  shrink: {len(current)} chars after {checks} checks")
                break
    final = Item(item.family, item.seed, current, item.specs)
    again = check_item(final)
    assert again is not None and again.kind == f.kind, "shrinking lost the failure"
    return again


# -------------------------------------------------------------------- ONNX

def _sub_graph(model: Any, outputs: list[str], feeds: dict[str, np.ndarray],
               cut: dict[str, np.ndarray],
               values: dict[str, np.ndarray]) -> tuple[Any, dict[str, np.ndarray]]:
    """The part of ``model`` computing ``outputs``, with the tensors in
    ``cut`` turned into graph inputs (fed with the given values)."""
    import onnx
    from onnx import helper
    g = model.graph
    producers = {o: n for n in g.node for o in n.output}
    need, keep = list(outputs), set()
    while need:
        t = need.pop()
        n = producers.get(t)
        if t in cut or n is None or id(n) in keep:
            continue
        keep.add(id(n))
        need.extend(i for i in n.input if i)
    nodes = [n for n in g.node if id(n) in keep]
    used = {i for n in nodes for i in n.input} | set(outputs)
    inits = [t for t in g.initializer if t.name in used and t.name not in cut]
    ins = [i for i in g.input if i.name in used and i.name not in cut]
    ins += [helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, list(v.shape))
            for name, v in cut.items() if name in used]
    new_feeds = {i.name: (cut[i.name] if i.name in cut else feeds[i.name]) for i in ins}
    # outputs with their shapes (the checker wants them)
    outs = [helper.make_tensor_value_info(o, onnx.TensorProto.FLOAT, list(values[o].shape))
            for o in outputs]
    graph = helper.make_graph(nodes, g.name, ins, outs, inits)
    m = helper.make_model(graph, opset_imports=list(model.opset_import),
                          producer_name="aot-fuzz")
    m.ir_version = model.ir_version
    return m, new_feeds


def shrink_onnx(f: Failure, max_checks: int = 60,
                log: Callable[[str], None] = lambda s: None) -> Failure:
    from onnx_graphs import Graph, all_values
    item = f.item
    model, feeds = item.graph.model, item.graph.inputs
    try:
        values = all_values(model, feeds)
    except Exception:  # noqa: BLE001 - cannot evaluate the parts: keep as is
        return f
    checks = 0

    def attempt(outputs: list[str], cut: dict[str, np.ndarray]) -> Item | None:
        nonlocal checks
        checks += 1
        m, fd = _sub_graph(model, outputs, feeds, cut, values)
        trial = Item(item.family, item.seed, graph=Graph(m, fd))
        return trial if _fails_same(trial, f.kind) else None

    best, cut, outputs = item, {}, [o.name for o in model.graph.output]
    for n in model.graph.node:           # the earliest failing output alone
        if checks >= max_checks:
            break
        found = attempt([n.output[0]], {})
        if found is not None:
            best, outputs = found, [n.output[0]]
            break
    changed = True
    while changed and checks < max_checks:
        changed = False
        for n in best.graph.model.graph.node:
            for t in n.input:
                if t in values and t not in cut and checks < max_checks:
                    trial_cut = dict(cut, **{t: values[t]})
                    found = attempt(outputs, trial_cut)
                    if found is not None:
                        best, cut, changed = found, trial_cut, True
                        log(f"  shrink: {len(best.graph.model.graph.node)} nodes")
                        break
            if changed:
                break
    again = check_item(best)
    assert again is not None and again.kind == f.kind, "shrinking lost the failure"
    return again


def shrink_failure(f: Failure, log: Callable[[str], None] = lambda s: None) -> Failure:
    if f.item.graph is not None:
        return shrink_onnx(f, log=log)
    return shrink_relay(f, log=log)
