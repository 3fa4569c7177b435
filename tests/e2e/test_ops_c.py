"""Every operator of the catalogue through the whole C pipeline.

The per-family files ``test_ops_c_<family>.py`` hold tables of cases (one
program per case, a call of the operator under test with the shapes and
attributes of the operator tables in tests/ops/ and tests/emit/), and each
of their tests packs its table into one program with
:func:`c_harness.check_cases`: one ``aot.compile`` + ``aot.load`` checks
them all against ``aot.interpret``.  This file holds the helpers they
share and the coverage test: every registered operator must be the subject
of at least one case (a case is named ``"<op>:<detail>"``), so a new
operator fails here until it gets cases.

Inputs are random but deterministic (one ``np.random.default_rng`` per
case, seeded from the case's name), with edge values mixed in where the
operator's semantics make them interesting: NaN, infinities, -0.0, the
integer extremes, zero divisors.
"""

from __future__ import annotations

import contextlib
import importlib
import resource
import zlib
from typing import Iterator, Sequence

import numpy as np

import aot
from aot.ir.expr import Call, Op
from aot.ir.registry import all_ops
from aot.ir.visitor import post_order
from c_harness import Case, assert_matches, check_cases, compile_and_load, flatten, pack
from cases.common import program

FAMILY_MODULES = ["test_ops_c_elemwise", "test_ops_c_nn", "test_ops_c_conv",
                  "test_ops_c_reduce", "test_ops_c_transform", "test_ops_c_qnn",
                  "test_ops_c_qnn_nonlinear", "test_ops_c_qsoftmax", "test_ops_c_nd",
                  "test_ops_c_fast_math", "test_ops_c_breadth"]

FLOAT_SPECIALS = [np.nan, np.inf, -np.inf, -0.0, 0.0]


def rng_for(name: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(name.encode()))


def data(rng: np.random.Generator, shape: Sequence[int], dtype: str, *,
         lo: int = -100, hi: int = 100, specials: bool = False,
         positive: bool = False) -> np.ndarray:
    """Random data of ``dtype``: normal floats (``positive``: |x| + 0.5),
    integers uniform in ``[lo, hi]`` clipped to the dtype, bools half true.
    ``specials`` overwrites a few elements with edge values (floats: NaN,
    +-inf, -0.0; integers: the dtype's min and max)."""
    shape = tuple(shape)
    dt = np.dtype(dtype)
    if dt.kind == "f":
        x = rng.standard_normal(shape)
        if positive:
            x = np.abs(x) + 0.5
        x = x.astype(dt)
        edges = FLOAT_SPECIALS
    elif dt.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    else:
        info = np.iinfo(dt)
        low = 1 if positive else max(lo, int(info.min))
        x = rng.integers(low, min(hi, int(info.max)), shape, endpoint=True).astype(dt)
        edges = [int(info.min), int(info.max)]
    if specials and x.size:
        flat = x.reshape(-1)
        for k, v in enumerate(edges[:flat.size]):
            flat[(k * 7 + 3) % flat.size] = v
    return np.asarray(x)


def case(name: str, params: Sequence[tuple[str, Sequence[int], str]], body: str,
         args: Sequence[np.ndarray] | None = None, *, rtol: float | None = None,
         atol: float | None = None, specials: bool = False, positive: bool = False,
         lo: int = -100, hi: int = 100) -> Case:
    """A case calling ``body`` on parameters ``params``; without ``args``
    they are drawn with :func:`data` from the case's own generator."""
    if args is None:
        rng = rng_for(name)
        args = [data(rng, shape, dt, lo=lo, hi=hi, specials=specials, positive=positive)
                for _, shape, dt in params]
    return Case(name, program(params, body), list(args), rtol, atol)


@contextlib.contextmanager
def memory_limit(extra_bytes: int) -> Iterator[None]:
    """Limit this process (and the compilers it starts) to its current
    address space plus ``extra_bytes``: a code-size blow-up becomes a
    MemoryError or a failed build instead of exhausting the machine."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as f:
        used = int(f.read().split()[0]) * resource.getpagesize()
    limit = used + extra_bytes
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def text_case(name: str, params: str, body: str, *args: np.ndarray,
              rtol: float | None = None, atol: float | None = None) -> Case:
    """A case from a written parameter list (``"%x: Tensor[(2), int8]"``)."""
    return Case(name, f"def @main({params}) {{\n  {body}\n}}\n",
                [np.asarray(a) for a in args], rtol, atol)


def values(shape: Sequence[int], dtype: str = "float32", seed: int = 0, lo: int = -50,
           hi: int = 50, specials: bool = False) -> np.ndarray:
    """:func:`data` from a generator seeded with ``seed``."""
    return data(np.random.default_rng(seed), shape, dtype, lo=lo, hi=hi, specials=specials)


def check_signed_zeros(cases: Sequence[Case], name: str) -> None:
    """:func:`c_harness.check_cases` compares floats with a tolerance, to
    which -0.0 equals 0.0.  This packs ``cases`` into one build too and,
    besides the values, requires every zero of a float result to have the
    interpreter's sign."""
    fn = compile_and_load(pack(cases), name=name)
    results = fn(*[a for c in cases for a in c.args])
    for c, got in zip(cases, results):
        want = aot.interpret(aot.parse(c.text), *c.args)
        for i, (g, w) in enumerate(zip(flatten(got), flatten(want))):
            assert_matches(g, w, f"{c.name} output {i}", c.rtol, c.atol)
            if w.dtype.kind == "f":
                zero = (g == 0) & (w == 0)
                bad = zero & (np.signbit(g) != np.signbit(w))
                assert not bad.any(), (
                    f"{c.name} output {i}: zero of the wrong sign at {np.argwhere(bad).tolist()}"
                    f" (C {g[bad].tolist()}, interpreter {w[bad].tolist()}) for inputs "
                    f"{[a.reshape(-1)[:8].tolist() for a in c.args]}")


def ops_called(text: str) -> set[str]:
    found: set[str] = set()
    mod = aot.parse(text)
    for fn in mod.functions.values():
        for node in post_order(fn):
            if isinstance(node, Call) and isinstance(node.op, Op):
                found.add(node.op.name)
    return found


def all_family_cases() -> list[Case]:
    cases: list[Case] = []
    for name in FAMILY_MODULES:
        cases.extend(importlib.import_module(name).all_cases())
    return cases


def test_every_operator_has_cases():
    cases = all_family_cases()
    subjects: dict[str, int] = {}
    for c in cases:
        op = c.name.split(":")[0]
        subjects[op] = subjects.get(op, 0) + 1
        assert op in ops_called(c.text), f"case {c.name} does not call {op}"
    names = [c.name for c in cases]
    assert len(names) == len(set(names)), "case names must be unique"
    missing = sorted(op.name for op in all_ops() if op.name not in subjects)
    assert not missing, f"operators without a C test case: {missing}"
    unknown = sorted(set(subjects) - {op.name for op in all_ops()})
    assert not unknown, f"cases named after no registered operator: {unknown}"


#: empty tensors, across the families: a loop of no iterations, a buffer of
#: no bytes, a reduction over nothing
EMPTY = [
    ("exp", [("x", (0, 3), "float32")], "exp(%x)"),
    ("add", [("x", (0, 3), "int8"), ("y", (3,), "int8")], "add(%x, %y)"),
    ("nn.softmax", [("x", (0, 3), "float32")], "nn.softmax(%x)"),
    ("nn.dense", [("x", (0, 4), "float32"), ("w", (2, 4), "float32")], "nn.dense(%x, %w)"),
    ("nn.dense", [("x", (2, 0), "float32"), ("w", (3, 0), "float32")], "nn.dense(%x, %w)"),
    ("nn.batch_matmul", [("x", (0, 2, 3), "float32"), ("y", (0, 4, 3), "float32")],
     "nn.batch_matmul(%x, %y, transpose_b=True)"),
    ("sum", [("x", (0, 3), "float32")], "sum(%x, axis=[1])"),
    ("max", [("x", (2, 0), "float32")], "max(%x, axis=[1])"),
    ("mean", [("x", (0, 2), "int32")], "mean(%x, axis=[0])"),
    ("argsort", [("x", (0,), "float32")], "argsort(%x)"),
    ("sort", [("x", (2, 0), "float32")], "sort(%x, axis=1)"),
    ("topk", [("x", (0, 4), "float32")], "topk(%x, k=2)"),
    ("transpose", [("x", (0, 3), "float32")], "transpose(%x)"),
    ("cast", [("x", (0,), "float32")], 'cast(%x, dtype="int8")'),
    ("take", [("x", (3, 2), "float32"), ("i", (0,), "int32")], "take(%x, %i, axis=0)"),
    ("strided_slice", [("x", (4,), "float32")], "strided_slice(%x, begin=[3], end=[1])"),
    ("nn.conv2d", [("x", (0, 2, 4, 4), "float32"), ("w", (3, 2, 3, 3), "float32")],
     "nn.conv2d(%x, %w)"),
    ("nn.max_pool2d", [("x", (1, 0, 4, 4), "float32")], "nn.max_pool2d(%x, pool_size=[2, 2])"),
    ("image.resize2d", [("x", (0, 1, 2, 2), "float32")], "image.resize2d(%x, size=[3, 3])"),
    ("qnn.quantize", [("x", (0, 2), "float32")], "qnn.quantize(%x, 0.5f, 0)"),
]


def test_empty_tensors():
    check_cases([case(f"{op}:empty-{k}", params, body)
                 for k, (op, params, body) in enumerate(EMPTY)], "empty")
