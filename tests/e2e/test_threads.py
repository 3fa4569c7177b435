"""Loaded models called from several Python threads at once (issue 18).

cffi releases the GIL while the C runs, so two threads calling one loaded
library really do run its entry side by side.  A static-arena model keeps
its arena, and a whole-language program its object pool and depth
counter, in static storage: before ``aot.load`` serialised calls, two
threads calling one static-arena model got wrong results (975 calls in
1,000) and two threads calling one pool-backed program crashed.  Each
thread here calls with inputs of its own and checks every result against
the interpreter's (computed up front); a context per thread
(``model.context()``) runs the reentrant entry with no lock at all.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

import numpy as np
import pytest

import aot
from c_harness import assert_matches, compile_and_load

HEADER = '#[version = "0.0.5"]\n'

#: A dataflow model whose intermediate tensors live in the arena.
DATAFLOW = HEADER + """
def @main(%x: Tensor[(48, 48), float32], %y: Tensor[(48, 48), float32]) -> Tensor[(48, 48), float32] {
  let %a = nn.dense(tanh(%x), %y);
  let %b = nn.dense(%a, %x);
  add(nn.dense(%b, %a), %y)
}
"""

#: A program with ADTs, closures and non-tail recursion (the object pool,
#: the depth counter).
PROGRAM = HEADER + """
def @build(%n: int32, %k: int32) -> List[int32] {
  if (%n == 0) { Nil } else { Cons(%n * %k, @build(%n - 1, %k)) }
}
def @main(%n: int32, %k: int32) -> int32 {
  let %xs = @map(fn (%v: int32) -> int32 { %v + %k }, @build(%n, %k));
  @foldl(fn (%acc: int32, %v: int32) -> int32 { %acc + %v }, 0, %xs)
}
"""

THREADS = 4
CALLS = 1000


def _hammer(calls: list[Callable[[int], None]]) -> list[str]:
    """Run each ``calls[t](i)`` for i < CALLS in thread t, all at once;
    the failures (first per thread)."""
    errors: list[str] = []
    start = threading.Barrier(len(calls))

    def worker(t: int) -> None:
        start.wait()
        try:
            for i in range(CALLS):
                calls[t](i)
        except BaseException as exc:   # noqa: BLE001 -- reported by the test
            errors.append(f"thread {t}: {exc}")

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(len(calls))]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return errors


def _dataflow_inputs(t: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(t)
    return ((rng.standard_normal((48, 48)) * 0.3).astype(np.float32),
            (rng.standard_normal((48, 48)) * 0.3).astype(np.float32))


@pytest.fixture(scope="module")
def dataflow() -> tuple[Any, list[tuple[np.ndarray, np.ndarray]], list[np.ndarray]]:
    mod = aot.parse(DATAFLOW)
    fn = compile_and_load(mod, name="thr_df", arena="static")
    inputs = [_dataflow_inputs(t) for t in range(THREADS)]
    wants = [fn(*args) for args in inputs]     # one thread: the reference
    for args, want in zip(inputs, wants):
        assert_matches(want, aot.interpret(mod, *args), "one thread")
    return fn, inputs, wants


@pytest.fixture(scope="module")
def program() -> tuple[Any, Any]:
    mod = aot.parse(PROGRAM)
    fn = compile_and_load(mod, name="thr_prog")
    return mod, fn


def _program_args(t: int) -> tuple[np.ndarray, np.ndarray]:
    return np.asarray(300 + 7 * t, np.int32), np.asarray(t + 1, np.int32)


def test_static_arena_model_from_threads(dataflow) -> None:
    fn, inputs, wants = dataflow
    bad = [0] * THREADS

    def call(t: int) -> Callable[[int], None]:
        def once(i: int) -> None:
            if not np.array_equal(fn(*inputs[t]), wants[t]):
                bad[t] += 1
        return once

    assert _hammer([call(t) for t in range(THREADS)]) == []
    assert bad == [0] * THREADS, f"wrong results per thread: {bad}"


def test_static_arena_contexts_from_threads(dataflow) -> None:
    fn, inputs, wants = dataflow
    bad = [0] * THREADS
    contexts = [fn.context() for _ in range(THREADS)]

    def call(t: int) -> Callable[[int], None]:
        def once(i: int) -> None:
            if not np.array_equal(contexts[t](*inputs[t]), wants[t]):
                bad[t] += 1
        return once

    assert _hammer([call(t) for t in range(THREADS)]) == []
    assert bad == [0] * THREADS, f"wrong results per thread: {bad}"


def test_caller_arena_model_needs_no_lock(dataflow) -> None:
    """A caller-arena model keeps no state: its context() is a plain copy
    and the library lock is not taken."""
    _, inputs, wants = dataflow
    fn = compile_and_load(aot.parse(DATAFLOW), name="thr_dfc")
    mine = fn.context()
    assert mine._ctx is None and type(mine._lock).__name__ == "_NoLock"
    assert_matches(mine(*inputs[0]), wants[0], "caller arena")


def _program_calls(mod: Any, runners: list[Any]) -> list[Callable[[int], None]]:
    wants = [int(aot.interpret(mod, *_program_args(t))) for t in range(THREADS)]

    def call(t: int) -> Callable[[int], None]:
        args = _program_args(t)

        def once(i: int) -> None:
            got = int(runners[t](*args))
            assert got == wants[t], f"call {i}: {got} != {wants[t]}"
        return once
    return [call(t) for t in range(THREADS)]


def test_pool_program_from_threads(program) -> None:
    mod, fn = program
    assert _hammer(_program_calls(mod, [fn] * THREADS)) == []
    assert fn.pool_in_use() == 0


def test_pool_program_contexts_from_threads(program) -> None:
    mod, fn = program
    contexts = [fn.context() for _ in range(THREADS)]
    assert _hammer(_program_calls(mod, contexts)) == []
    assert [c.pool_in_use() for c in contexts] == [0] * THREADS


DEEP = HEADER + """
def @sum_to(%n: int32) -> int32 {
  if (%n == 0) { 0 } else { %n + @sum_to(%n - 1) }
}
def @main(%n: int32) -> int32 { @sum_to(%n) }
"""


def test_deep_recursion_on_a_small_thread_stack() -> None:
    """9,000 nested calls -- under the default max_depth of 10,000, which
    counts calls -- on a Python thread with a 256 KiB stack used to
    overflow it (a segfault of the whole process); the stack budget
    (64 KiB, the default, even under sanitizers here; or a context's own)
    turns it into ERR_DEPTH, and
    recursion within the budget still computes the right sum (frames take
    64-96 bytes at -O2/-O0, about 210 under AddressSanitizer: the sums
    stay well inside either budget)."""
    fn = compile_and_load(aot.parse(DEEP), name="thr_deep", pool_bytes=4 << 20,
                          stack_bytes=64 * 1024)
    seen: dict[str, Any] = {}

    def run() -> None:
        n = np.asarray(9000, np.int32)
        with pytest.raises(aot.DiagnosticError, match="ERR_DEPTH.*65536 bytes of stack") as e:
            fn(n)
        seen["static"] = str(e.value)
        seen["static 100"] = int(fn(np.asarray(100, np.int32)))
        ctx = fn.context(stack_bytes=128 * 1024)
        with pytest.raises(aot.DiagnosticError, match="ERR_DEPTH.*131072 bytes of stack"):
            ctx(n)
        seen["ctx 400"] = int(ctx(np.asarray(400, np.int32)))
        seen["pools"] = (fn.pool_in_use(), ctx.pool_in_use())

    old = threading.stack_size(256 * 1024)
    try:
        thread = threading.Thread(target=run)
        thread.start()
        thread.join()
    finally:
        threading.stack_size(old)
    assert seen.get("static 100") == 100 * 101 // 2, seen
    assert seen["ctx 400"] == 400 * 401 // 2
    assert seen["pools"] == (0, 0)
