"""Every registered operator has every column, and the catalogue the
issues name is complete."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from aot.ir.attrs import Attrs
from aot.ir.registry import OpDef, PatternKind, all_ops, lookup

OPS = all_ops()


@pytest.mark.parametrize("op", OPS, ids=lambda o: o.name)
def test_every_column_is_present(op: OpDef) -> None:
    assert op.name and op.name == op.name.strip()
    assert isinstance(op.arity, int) and op.arity >= 0
    assert inspect.isclass(op.attrs_type) and issubclass(op.attrs_type, Attrs)
    assert dataclasses.is_dataclass(op.attrs_type)
    assert op.attrs_type.__dataclass_params__.frozen  # type: ignore[attr-defined]
    op.attrs_type()  # every field has a default
    assert callable(op.rel)
    assert isinstance(op.pattern, PatternKind)
    assert callable(op.compute)
    assert op.doc and len(op.doc) < 200
    assert op.family


def test_names_are_unique_and_sorted() -> None:
    names = [op.name for op in OPS]
    assert names == sorted(set(names))


CATALOGUE = """
add subtract multiply divide floor_divide mod power maximum minimum negative abs exp log
sqrt rsqrt sigmoid tanh erf floor ceil round sign clip nn.relu nn.leaky_relu nn.prelu
nn.softmax nn.log_softmax nn.dense nn.matmul nn.batch_matmul nn.bias_add nn.batch_norm
nn.layer_norm nn.dropout copy concatenate expand_dims
nn.conv1d nn.conv2d nn.conv2d_transpose nn.max_pool2d nn.avg_pool2d nn.global_avg_pool2d
nn.global_max_pool2d nn.pad nn.batch_flatten nn.upsampling
reshape reshape_like transpose squeeze split strided_slice take gather tile repeat reverse
where full zeros ones full_like zeros_like ones_like cast arange layout_transform one_hot
stack
equal not_equal less less_equal greater greater_equal logical_and logical_or logical_not
sum mean max min prod argmax argmin variance std broadcast_to broadcast_to_like
collapse_sum_like
image.resize2d argsort topk sort
qnn.quantize qnn.dequantize qnn.requantize qnn.add qnn.mul qnn.dense qnn.conv2d
qnn.concatenate
""".split()


@pytest.mark.parametrize("name", CATALOGUE)
def test_catalogue_operator_is_registered(name: str) -> None:
    assert lookup(name) is not None, f"{name} is not registered"
