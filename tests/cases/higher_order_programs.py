"""Programs for higher-order gradient tests: closures, lists (a prelude
fold), globals, operators and closures as values (``@map``, ``@foldl``,
a closure in a reference), ``if``, recursion (global, local, mutual),
references and ``match`` (on a prelude list and on an ADT holding
tensors), float64.

Each case: name -> (source, arguments, dataflow) where ``arguments``
builds @main's arguments from a generator and ``dataflow`` says whether
the optimised gradient is a static tensor program (everything the
backward pass needs is known at compile time) or keeps control flow."""

from __future__ import annotations

from typing import Callable

import numpy as np

Args = Callable[[np.random.Generator], list[np.ndarray]]


def _vec(*shape: int) -> Args:
    return lambda rng: [rng.uniform(0.2, 1.2, shape) for _ in range(2)]


CASES: dict[str, tuple[str, Args, bool]] = {
    "closure": ("""
def @main(%x: Tensor[(3), float64], %y: Tensor[(3), float64]) {
  let %f = fn (%a: Tensor[(3), float64]) { multiply(%a, %y) };
  let %g = fn (%h: fn (Tensor[(3), float64]) -> Tensor[(3), float64], %b: Tensor[(3), float64]) {
    %h(sin(%b))
  };
  sum(add(%g(%f, %x), %f(exp(%x))))
}
""", _vec(3), True),
    "fold": ("""
def @main(%x: Tensor[(3), float64], %w: Tensor[(3), float64]) {
  let %xs = Cons(%x, Cons(tanh(%x), Cons(%w, Nil)));
  let %step = fn (%acc: Tensor[(3), float64], %e: Tensor[(3), float64]) {
    add(multiply(%acc, %w), %e)
  };
  sum(@foldl(%step, zeros_like(%x), %xs))
}
""", _vec(3), True),
    "refs": ("""
def @main(%x: Tensor[(3), float64], %y: Tensor[(3), float64]) {
  let %r = ref(%x);
  let %u = ref_write(%r, multiply(ref_read(%r), %y));
  let %v = ref_write(%r, add(ref_read(%r), sin(%x)));
  sum(multiply(ref_read(%r), ref_read(%r)))
}
""", _vec(3), True),
    "function_values": ("""
def @sq(%v: Tensor[(2), float64]) -> Tensor[(2), float64] { multiply(%v, %v) }
def @main(%x: Tensor[(2), float64], %y: Tensor[(2), float64]) {
  let %ys = @map(@sq, Cons(%x, Cons(%y, Nil)));
  let %s = @foldl(add, zeros_like(%x), %ys);
  let %r = ref(fn (%a: Tensor[(2), float64]) { sin(%a) });
  let %u = ref_write(%r, fn (%a: Tensor[(2), float64]) { multiply(%a, %y) });
  sum(ref_read(%r)(%s))
}
""", _vec(2), True),
    "if": ("""
def @main(%x: Tensor[(3), float64], %y: Tensor[(3), float64]) {
  if (greater(sum(subtract(%x, %y)), 0f64)) {
    sum(multiply(%x, %y))
  } else {
    sum(exp(multiply(%y, %y)))
  }
}
""", lambda rng: [rng.uniform(0.2, 1.2, 3), rng.uniform(0.2, 1.2, 3) + np.array([0, 0, 2.0])],
        False),
    "global_recursion": ("""
def @pow(%x: Tensor[(2), float64], %n: int32) -> Tensor[(2), float64] {
  if (less_equal(%n, 0)) { ones_like(%x) } else { multiply(%x, @pow(%x, subtract(%n, 1))) }
}
def @main(%x: Tensor[(2), float64], %n: int32) { sum(@pow(sin(%x), %n)) }
""", lambda rng: [rng.uniform(0.2, 1.2, 2), np.array(3, "int32")], False),
    "local_recursion": ("""
def @main(%x: Tensor[(2), float64], %n: int32) {
  let %loop = fn (%i: int32, %acc: Tensor[(2), float64]) -> Tensor[(2), float64] {
    if (less(%i, %n)) { %loop(add(%i, 1), sin(add(%acc, %x))) } else { %acc }
  };
  sum(%loop(0, %x))
}
""", lambda rng: [rng.uniform(0.2, 1.2, 2), np.array(3, "int32")], False),
    "mutual_recursion": ("""
def @even(%x: Tensor[(2), float64], %n: int32) -> Tensor[(2), float64] {
  if (equal(%n, 0)) { %x } else { @odd(cos(%x), subtract(%n, 1)) }
}
def @odd(%x: Tensor[(2), float64], %n: int32) -> Tensor[(2), float64] {
  if (equal(%n, 0)) { multiply(%x, %x) } else { @even(sin(%x), subtract(%n, 1)) }
}
def @main(%x: Tensor[(2), float64], %n: int32) { sum(@even(%x, %n)) }
""", lambda rng: [rng.uniform(0.2, 1.2, 2), np.array(3, "int32")], False),
    "match": ("""
type Shape {
  Circle(Tensor[(), float64]),
  Rect(Tensor[(), float64], Tensor[(), float64]),
}
def @area(%s: Shape) -> Tensor[(), float64] {
  match (%s) {
    Circle(%r) => multiply(3.14f64, multiply(%r, %r)),
    Rect(%a, %b) => multiply(%a, %b),
  }
}
def @pick(%k: int32, %a: Tensor[(), float64], %b: Tensor[(), float64]) -> Shape {
  if (equal(%k, 0)) { Circle(%a) } else { Rect(%a, exp(%b)) }
}
def @main(%a: Tensor[(), float64], %b: Tensor[(), float64], %k: int32) {
  let %xs = Cons(@pick(%k, %a, %b), Cons(Rect(%b, %b), Nil));
  match (%xs) {
    Cons(%s, Cons(%t, _)) => add(@area(%s), multiply(@area(%t), %a)),
    _ => %a,
  }
}
""", lambda rng: [np.array(rng.uniform(0.2, 1.2)), np.array(rng.uniform(0.2, 1.2)),
                  np.array(1, "int32")], False),
}
