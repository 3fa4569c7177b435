"""Gradient rules of the 1-d, 3-d and adaptive pools (``nn_pool_nd.py``,
``nn_pool_adaptive.py``) and of the fast approximations
(``fast_math.py``), merged into :data:`aot.ir.ops.gradients.RULES`.

The fast approximations take the exact functions' rules (``fast_exp``'s
derivative is its result, ``fast_tanh``'s ``1 - y^2`` ...): the
approximations follow the functions to a few 1e-7, and their float64
forms are the exact functions.

Each pool rule handles windows that *tile* the input -- every input element in
exactly one window, as ``pool_size == strides`` without padding or
dilation, or an adaptive pool whose output extents divide the input's --
in the channels-first layout (``NCW``, ``NCHW``, ``NCDHW``), and raises
:class:`~aot.ir.ops.gradients.NoGradient` otherwise.  With tiling windows
the data reshapes to ``(N, C, O1, K1, O2, K2, ...)``: the average's
gradient is ``g / (K1*K2*...)`` broadcast over each window, the maximum's
goes to the window's maximum, shared equally among ties (as ``max``).
"""

from __future__ import annotations

from typing import Any

from ..expr import Call, Constant, Expr
from .gradients import Adjoints, NoGradient, call, tensor_type
from .common import np

_CANON = {1: "NCW", 2: "NCHW", 3: "NCDHW"}


def _shape(e: Expr) -> tuple[int, ...]:
    return tuple(int(d) for d in tensor_type(e).shape)  # type: ignore[arg-type]


def _tiles(c: Call, kernel: list[int]) -> tuple[list[int], list[int]]:
    """``(windows, corner)`` shapes of the tiled input."""
    x = c.args[0]
    shape, out = _shape(x), _shape(c)
    windows, corner = list(shape[:2]), list(shape[:2])
    for size, o, k in zip(shape[2:], out[2:], kernel):
        if size != o * k:
            raise NoGradient("the gradient rule handles windows that tile the input only")
        windows += [o, k]
        corner += [o, 1]
    return windows, corner


def _check_layout(c: Call, n: int) -> None:
    layout = c.attrs.layout  # type: ignore[attr-defined]
    if layout != _CANON[n] or c.attrs.out_layout not in ("", layout):  # type: ignore
        raise NoGradient(f"the gradient rule handles the {_CANON[n]} layout only")


def _tiled_grad(c: Call, g: Expr, kernel: list[int], is_max: bool) -> Adjoints:
    x = c.args[0]
    windows, corner = _tiles(c, kernel)
    g_corner = call("reshape", g, newshape=corner)
    axes = [3 + 2 * i for i in range(len(kernel))]
    if is_max:
        xr = call("reshape", x, newshape=windows)
        hit = call("cast", call("equal", xr, call("reshape", c, newshape=corner)),
                   dtype=tensor_type(x).dtype.value)
        count = call("sum", hit, axis=axes, keepdims=True)
        share = call("divide", call("multiply", hit, g_corner), count)
    else:
        taps = int(np.prod(kernel))
        scale = Constant(np.asarray(1.0 / taps, dtype=tensor_type(x).dtype.np))
        share = call("broadcast_to", call("multiply", g_corner, scale), shape=windows)
    return [call("reshape", share, newshape=list(_shape(x)))]


def _window_rule(n: int, is_max: bool):
    def rule(c: Call, g: Expr) -> Adjoints:
        from .nn_pool_nd import pool_axes
        _check_layout(c, n)
        axes = pool_axes(c.attrs)  # type: ignore[arg-type]
        if any(a.stride != a.kernel or a.dilation != 1 or a.before or a.after for a in axes):
            raise NoGradient("the gradient rule handles windows that tile the input "
                             "(strides = pool_size, no padding or dilation)")
        return _tiled_grad(c, g, [a.kernel for a in axes], is_max)
    return rule


def _adaptive_rule(n: int, is_max: bool):
    def rule(c: Call, g: Expr) -> Adjoints:
        _check_layout(c, n)
        shape, out = _shape(c.args[0]), _shape(c)
        kernel = [size // o if size % o == 0 else 0 for size, o in zip(shape[2:], out[2:])]
        if not all(kernel):
            raise NoGradient("the gradient rule handles output sizes that divide the input's "
                             "(windows that tile the input) only")
        return _tiled_grad(c, g, kernel, is_max)
    return rule


def _fast_rules() -> dict[str, Any]:
    from .gradients import RULES
    return {"fast_exp": RULES["exp"], "fast_tanh": RULES["tanh"], "fast_erf": RULES["erf"],
            "nn.fast_softmax": RULES["nn.softmax"]}


EXTRA_RULES: dict[str, Any] = {
    "nn.max_pool1d": _window_rule(1, True),
    "nn.avg_pool1d": _window_rule(1, False),
    "nn.max_pool3d": _window_rule(3, True),
    "nn.avg_pool3d": _window_rule(3, False),
    "nn.adaptive_max_pool1d": _adaptive_rule(1, True),
    "nn.adaptive_avg_pool1d": _adaptive_rule(1, False),
    "nn.adaptive_max_pool2d": _adaptive_rule(2, True),
    "nn.adaptive_avg_pool2d": _adaptive_rule(2, False),
    "nn.adaptive_max_pool3d": _adaptive_rule(3, True),
    "nn.adaptive_avg_pool3d": _adaptive_rule(3, False),
    **_fast_rules(),
}
