"""Rewrite a ``Loop`` that collects a tensor per iteration into a tensor
sequence, then stacks it, as a ``Loop`` with a scan output.

Design note
-----------
``torch.jit.script`` code that appends to a list in a ``for`` loop and
``torch.stack``\\ s it after (``outs.append(h)`` ... ``torch.stack(outs,
1)``) is written by the classic exporter as::

    s0 = SequenceEmpty()
    ..., s = Loop(M, c, ..., s0, ...)        body: s' = SequenceInsert(s, t)
    y = ConcatFromSequence(s, axis=a, new_axis=1)

Sequences are not IR types, and need not be: when the sequence is created
empty, only appended to (``SequenceInsert`` without a position, its only
reader in the body) and only stacked after the loop (``new_axis=1``, its
only reader), it is exactly a Loop scan output (the ``t`` of every
iteration stacked on a new axis 0) moved to axis ``a`` by a
``Transpose``.  :func:`rewrite_sequence_loops` does that on a copy of the
model before import; anything else keeps its sequence operators and is
refused as unsupported.  ``Transpose`` needs the rank: the stacked
output's declared or inferred one, or the appended tensor's plus one (an
axis 0 needs none).
"""

from __future__ import annotations

import onnx
from onnx import helper

__all__ = ["rewrite_sequence_loops"]


def _readers(nodes, name: str) -> list[onnx.NodeProto]:
    """Nodes reading ``name``, also from their subgraphs (as the node)."""
    out = []
    for n in nodes:
        if name in n.input or any(_readers(a.g.node, name) for a in n.attribute
                                  if a.type == onnx.AttributeProto.GRAPH):
            out.append(n)
    return out


def _declared_rank(infos, name: str) -> int | None:
    for vi in infos:
        if vi.name == name and vi.type.tensor_type.HasField("shape"):
            return len(vi.type.tensor_type.shape.dim)
    return None


def _rank(model: onnx.ModelProto, stacked: str, body: onnx.GraphProto,
          element: str) -> int | None:
    """The rank of the stacked tensor: declared or inferred for it, or one
    more than the appended tensor's in the loop body."""
    rank = _declared_rank((*model.graph.output, *model.graph.value_info), stacked)
    if rank is not None:
        return rank
    rank = _declared_rank((*body.output, *body.value_info), element)
    if rank is not None:
        return rank + 1
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # noqa: BLE001 - no rank then: the model is left as it is
        return None
    return _declared_rank((*inferred.graph.output, *inferred.graph.value_info), stacked)


def _rewrite_one(model: onnx.ModelProto) -> bool:
    g = model.graph
    outputs = {o.name for o in g.output}
    for empty in g.node:
        if empty.op_type != "SequenceEmpty":
            continue
        users = _readers(g.node, empty.output[0])
        if len(users) != 1 or users[0].op_type != "Loop" or empty.output[0] in outputs:
            continue
        loop = users[0]
        slots = [i for i, x in enumerate(loop.input) if x == empty.output[0]]
        if len(slots) != 1 or slots[0] < 2:
            continue
        j = slots[0] - 2                                   # carried index
        body = next(a.g for a in loop.attribute if a.name == "body")
        seq_in, seq_out = body.input[2 + j].name, body.output[1 + j].name
        inserts = _readers(body.node, seq_in)
        if len(inserts) != 1 or inserts[0].op_type != "SequenceInsert" \
                or len(inserts[0].input) != 2 or inserts[0].output[0] != seq_out \
                or _readers(body.node, seq_out):
            continue
        insert = inserts[0]
        final = loop.output[j]
        concat = _readers(g.node, final)
        if len(concat) != 1 or concat[0].op_type != "ConcatFromSequence" or final in outputs:
            continue
        cat = concat[0]
        attrs = {a.name: helper.get_attribute_value(a) for a in cat.attribute}
        if attrs.get("new_axis", 0) != 1:
            continue
        axis = int(attrs["axis"])
        rank = None if axis == 0 else _rank(model, cat.output[0], body, insert.input[1])
        if axis != 0 and rank is None:
            continue
        if rank is not None and axis < 0:
            axis += rank
        # the rewrite
        stacked = f"{final}__stacked"
        del loop.input[2 + j]
        del body.input[2 + j]
        del body.output[1 + j]
        body.node.remove(insert)
        body.output.append(helper.make_empty_tensor_value_info(insert.input[1]))
        del loop.output[j]
        loop.output.append(stacked)
        at = list(g.node).index(cat)
        g.node.remove(cat)
        if axis == 0:
            new = helper.make_node("Identity", [stacked], [cat.output[0]], name=cat.name)
        else:
            assert rank is not None
            perm = [*range(1, axis + 1), 0, *range(axis + 1, rank)]
            new = helper.make_node("Transpose", [stacked], [cat.output[0]], name=cat.name,
                                   perm=perm)
        g.node.insert(at, new)
        g.node.remove(empty)
        return True
    return False


def rewrite_sequence_loops(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model``, or a copy with every collect-and-stack loop (see the
    design note) written with scan outputs."""
    if not any(n.op_type == "SequenceEmpty" for n in model.graph.node):
        return model
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    changed = False
    while _rewrite_one(copy):
        changed = True
    return copy if changed else model
