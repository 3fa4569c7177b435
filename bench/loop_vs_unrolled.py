"""A recurrent keyword spotter as a loop and unrolled, on a Cortex-M4F:
code bytes, constant bytes, arena bytes and exact instructions per
inference (QEMU).

    PYTHONPATH=. python bench/loop_vs_unrolled.py [--steps 49] [--hidden 32]

The model: MFCC-like frames ``[steps, 1, 10]`` -> GRU (hidden ``H``) ->
the last hidden state -> a dense layer to 12 classes (an ONNX graph, as
the torch exporters write a GRU keyword spotter).  The *loop* form is
what the importer makes of it (one loop over time, compiled to a C loop
over the static arena).  The *unrolled* form is the same Relay program
with the loop unrolled at the Relay level (:func:`unroll`: the loop's
body substituted once per step, the step counter folded), compiled the
same way.  Needs arm-none-eabi-gcc and qemu-system-arm (``make deps``).
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
from pathlib import Path

import numpy as np

import aot
from aot.emit.lower.static_loop import static_loop
from aot.ir.analysis import free_vars
from aot.ir.expr import Constant, Expr, Function, Let
from aot.ir.module import IRModule
from aot.ir.visitor import ExprMutator, post_order


def gru_kws(steps: int, hidden: int, features: int = 10, classes: int = 12) -> bytes:
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(7)
    w = rng.normal(0, 0.3, (1, 3 * hidden, features)).astype(np.float32)
    r = rng.normal(0, 0.3, (1, 3 * hidden, hidden)).astype(np.float32)
    b = rng.normal(0, 0.1, (1, 6 * hidden)).astype(np.float32)
    fc = rng.normal(0, 0.3, (hidden, classes)).astype(np.float32)
    nodes = [helper.make_node("GRU", ["x", "W", "R", "B"], ["Y", "Yh"], hidden_size=hidden),
             helper.make_node("Reshape", ["Yh", "shape"], ["h"]),
             helper.make_node("MatMul", ["h", "FC"], ["logits"])]
    inits = [numpy_helper.from_array(a, n) for a, n in
             ((w, "W"), (r, "R"), (b, "B"), (fc, "FC"),
              (np.array([1, hidden], np.int64), "shape"))]
    g = helper.make_graph(nodes, "kws",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                         [steps, 1, features])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT,
                                                         [1, classes])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
    return m.SerializeToString()


def _closed_value(e: Expr) -> np.ndarray | None:
    if free_vars(e) or any(isinstance(n, (Function, Let)) for n in post_order(e)):
        return None
    mod = IRModule()
    mod.add("main", Function((), e))
    return np.asarray(aot.interpret(aot.infer_types(mod)))


def unroll(mod: IRModule, limit: int = 10_000) -> IRModule:
    """``main`` with every static loop (:mod:`aot.emit.lower.static_loop`)
    whose condition folds to a constant each step unrolled."""
    main = mod["main"]
    replace = ExprMutator()
    for node in post_order(main.body, into_functions=False):
        loop = static_loop(node) if isinstance(node, Let) else None
        if loop is None:
            continue
        from aot.ir.expr import Call
        call = node.body
        assert isinstance(call, Call) and call.op is loop.var, "the loop is called once"
        state = list(call.args)
        for _ in range(limit):
            sub = ExprMutator()
            sub.memo.update(zip(loop.fn.params, state))
            go = _closed_value(sub.visit(loop.cond))
            assert go is not None, "the loop condition does not fold"
            if bool(go) == loop.exit_when:
                replace.memo[node] = sub.visit(loop.exit)
                break
            nxt = [sub.visit(a) for a in loop.tail.args]
            state = []
            for e in nxt:
                v = _closed_value(e) if not isinstance(e, Constant) else None
                state.append(Constant(v) if v is not None and v.size == 1 else e)
        else:
            raise AssertionError("the loop did not end")
    out = IRModule()
    out.add("main", Function(main.params, replace.visit(main.body), attrs=main.attrs))
    return aot.infer_types(out)


def sizes(lib: Path) -> tuple[int, int]:
    """(code bytes, read-only data bytes) of the model library."""
    done = subprocess.run(["arm-none-eabi-size", "-A", str(lib)], capture_output=True,
                          text=True, check=True)
    code = rodata = 0
    for line in done.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[1].isdigit():
            if parts[0].startswith(".text"):
                code += int(parts[1])
            elif parts[0].startswith(".rodata"):
                rodata += int(parts[1])
    return code, rodata


def measure(mod: IRModule, name: str, work: Path) -> dict[str, int]:
    from aot.compiler import plan
    from aot.profiler import profile_module
    p = plan(mod, name, tuning="scalar")
    art = aot.compile(mod, work / name, name=name, target="cortex-m4")
    code, rodata = sizes(Path(art.root) / "lib" / f"lib{name}.a")
    prof = profile_module(mod, target="cortex-m4", name=name, work_dir=work / f"{name}-prof")
    return {"code": code, "rodata": rodata, "arena": p.arena_bytes, "pool": p.pool_bytes,
            "loops": len(p.loops), "insns": int(prof.total)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=49)
    ap.add_argument("--hidden", type=int, default=32)
    args = ap.parse_args()
    loop = aot.from_onnx(gru_kws(args.steps, args.hidden))
    flat = unroll(loop)
    x = np.random.default_rng(0).normal(0, 1, (args.steps, 1, 10)).astype(np.float32)
    np.testing.assert_allclose(aot.interpret(flat, x), aot.interpret(loop, x), rtol=1e-5,
                               atol=1e-6)
    work = Path(tempfile.mkdtemp(prefix="aot-loop-bench-"))
    rows = {"loop": measure(loop, "kws_loop", work),
            "unrolled": measure(flat, "kws_unrolled", work)}
    print(f"GRU keyword spotter, {args.steps} steps, hidden {args.hidden}, Cortex-M4F "
          "(arm-none-eabi-gcc -O2, QEMU mps2-an386)")
    print(f"{'form':10} {'code B':>8} {'rodata B':>9} {'arena B':>8} {'pool B':>7} "
          f"{'instructions':>13}")
    for form, r in rows.items():
        print(f"{form:10} {r['code']:8d} {r['rodata']:9d} {r['arena']:8d} {r['pool']:7d} "
              f"{r['insns']:13d}")


if __name__ == "__main__":
    main()
