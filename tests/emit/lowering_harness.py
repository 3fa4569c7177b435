"""Check an operator's lowering against the interpreter without a C
compiler: the whole of ``main`` becomes one fused group, is lowered to
kernel IR and executed by the kernel-IR reference evaluator
(:func:`aot.emit.kernel.evaluate.run_kernel`); the result must equal
``aot.interpret``'s within the tolerance given.  The C side of the same
check (compiled through cffi) lives in tests/e2e.

Keep shapes small: the evaluator runs one Python step per scalar.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

import aot
from aot.emit.kernel.evaluate import run_kernel
from aot.emit.lower.group import LoweredGroup, lower_group
from aot.emit.kernel.simplify import simplify_kernel
from aot.ir.attrs import FuncAttrs
from aot.ir.expr import Function
from aot.ir.module import IRModule


def main_as_group(mod: IRModule) -> Function:
    main = mod.functions[mod.global_var("main")]
    return Function(main.params, main.body, main.ret_type, attrs=FuncAttrs.of({"Primitive": 1}))


def lower_main(text: str) -> tuple[IRModule, LoweredGroup]:
    mod = aot.infer_types(aot.parse(text))
    return mod, lower_group(main_as_group(mod), "k")


def run_lowered(group: LoweredGroup, args: Sequence[np.ndarray],
                simplify: bool = True) -> list[np.ndarray]:
    kernel = simplify_kernel(group.kernel) if simplify else group.kernel
    arrays: dict[str, np.ndarray] = {}
    for buf, a in zip(group.inputs, args):
        arrays[buf.name] = np.ascontiguousarray(a, dtype=buf.dtype.np).reshape(-1).copy()
    for buf, data in group.constants:
        arrays[buf.name] = np.asarray(data, dtype=buf.dtype.np).reshape(-1)
    outs = []
    for buf in (*group.outputs, *group.scratch):
        arrays[buf.name] = np.zeros(buf.size, dtype=buf.dtype.np)
    run_kernel(kernel, arrays)
    for buf in group.outputs:
        outs.append(arrays[buf.name].reshape(buf.shape))
    return outs


def _flatten(v: object) -> list[np.ndarray]:
    if isinstance(v, tuple):
        return [x for f in v for x in _flatten(f)]
    return [np.asarray(v)]


def assert_close(got: np.ndarray, want: np.ndarray, rtol: float, atol: float,
                 what: str = "") -> None:
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    if want.dtype.kind == "f":
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                                   rtol=rtol, atol=atol, equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


def check_lowering(text: str, args: Sequence[np.ndarray], *, rtol: float = 1e-6,
                   atol: float = 1e-6) -> LoweredGroup:
    """Lower ``main`` of ``text`` as one group and compare with the
    interpreter on ``args``."""
    mod, group = lower_main(text)
    want = _flatten(aot.interpret(mod, *args))
    got = run_lowered(group, args)
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert_close(g, w, rtol, atol, f"output {i} of\n{text}")
    return group
