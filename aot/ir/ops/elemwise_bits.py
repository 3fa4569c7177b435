"""Operator family: elemwise (bitwise logic and shifts on integers).

``bitwise_and``, ``bitwise_or``, ``bitwise_xor`` and ``bitwise_not``, and
``left_shift`` / ``right_shift``, as Relay names them: broadcasting like
the arithmetic (both operands of one integer dtype; the result has it).
Booleans are refused (``logical_*`` is their logic).

Shifts have NumPy's meaning, defined for every amount (Relay's is C's,
undefined outside ``[0, bits)``): ``left_shift`` wraps (the bits shifted
out are lost) and gives 0 for an amount below 0 or of ``bits`` and more;
``right_shift`` is arithmetic on signed types, and an amount out of range
gives 0, or -1 for a negative signed value.
"""

from __future__ import annotations

from typing import Callable, Sequence

from ..types import Type
from .common import (PatternKind, RelationError, TensorType, as_array, broadcast_rel, defop,
                     identity_rel, np, out_tensor_type)

FAMILY = "elemwise"


def _int_only(name: str, rel: Callable) -> Callable:
    def checked(args: Sequence[Type], attrs: object) -> object:
        for a in args:
            if isinstance(a, TensorType) and not a.dtype.is_int:
                raise RelationError(f"{name} takes integer tensors, got {a}"
                                    + (" (logical_* are the operators on bool)"
                                       if a.dtype.is_bool else ""))
        return rel(args, attrs)
    return checked


def shift(x: np.ndarray, s: np.ndarray, left: bool) -> np.ndarray:
    """NumPy's shifts with every out-of-range amount defined (see above)."""
    x, s = np.broadcast_arrays(np.asarray(x), np.asarray(s))
    bits = x.dtype.itemsize * 8
    amount = s.astype(np.int64) if s.dtype != np.uint64 else \
        np.minimum(s, np.uint64(bits)).astype(np.int64)
    ok = (amount >= 0) & (amount < bits)
    safe = np.where(ok, amount, 0).astype(x.dtype)
    with np.errstate(all="ignore"):
        if left:
            return np.where(ok, np.left_shift(x, safe), x.dtype.type(0)).astype(x.dtype)
        fill = np.where(x < 0, x.dtype.type(-1), x.dtype.type(0)) if x.dtype.kind == "i" \
            else np.zeros_like(x)
        return np.where(ok, np.right_shift(x, safe), fill).astype(x.dtype)


def _binary(fn: Callable) -> Callable:
    def compute(args: Sequence[np.ndarray], attrs: object, out: Type) -> np.ndarray:
        return as_array(fn(*args), out_tensor_type(out).dtype)
    return compute


_BINARY: list[tuple[str, Callable, str]] = [
    ("bitwise_and", np.bitwise_and, "a & b"),
    ("bitwise_or", np.bitwise_or, "a | b"),
    ("bitwise_xor", np.bitwise_xor, "a ^ b"),
    ("left_shift", lambda a, b: shift(a, b, True),
     "a << b (wrapping; 0 for amounts out of [0, bits))"),
    ("right_shift", lambda a, b: shift(a, b, False),
     "a >> b (arithmetic on signed; out-of-range amounts fill with the sign)"),
]
for _name, _f, _doc in _BINARY:
    defop(_name, arity=2, rel=_int_only(_name, broadcast_rel), pattern=PatternKind.BROADCAST,
          compute=_binary(_f), doc=f"element-wise {_doc}", family=FAMILY)

defop("bitwise_not", arity=1, rel=_int_only("bitwise_not", identity_rel),
      pattern=PatternKind.ELEMWISE, compute=_binary(np.invert), doc="element-wise ~x",
      family=FAMILY)

__all__ = ["shift"]
