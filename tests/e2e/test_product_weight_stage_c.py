"""Matrix products whose weight is computed as it is read (a cast of int8
weights standing for a weight-only quantized model's DequantizeLinear,
fused as the product's prologue) stage each unit tile's weights in a
local array once for all rows (aot/emit/lower/ops/nn_product_wstage.py).
One program holds every shape the staging must handle -- dense over 2-d
and 3-d inputs with a remainder unit tile, matmul with and without
transposed operands, batch_matmul with a broadcast weight, a float16
product -- and two that are not staged (one row; one unit's reduction
over the budget); it is built staged and with staging switched off, and
the two must agree bit for bit (the staging changes where a weight is
converted, never a product or a sum) and match the interpreter."""

from __future__ import annotations

from test_ops_c import case
from wstage_check import check_staged

F, H, I8 = "float32", "float16", "int8"


def _product(name, xs, ws, call, dt=F):
    body = call.replace("%W", f'cast(%w, dtype="{dt}")')
    return case(f"{name}", [("x", xs, dt), ("w", ws, I8)], body, lo=-8, hi=8)


CASES = [
    _product("dense-remainder", (5, 12), (11, 12), "nn.dense(%x, %W, units=11)"),
    _product("dense-3d", (2, 3, 10), (4, 10), "nn.dense(%x, %W)"),
    _product("matmul", (4, 9), (9, 10), "nn.matmul(%x, %W)"),
    _product("matmul-ta-tb", (9, 3), (5, 9),
             "nn.matmul(%x, %W, transpose_a=True, transpose_b=True)"),
    _product("batch_matmul", (2, 3, 6), (1, 5, 6), "nn.batch_matmul(%x, %W, transpose_b=True)"),
    _product("batch_matmul-nt", (2, 3, 6), (1, 6, 9),
             "nn.batch_matmul(%x, %W, transpose_b=False)"),
    _product("dense-float16", (3, 20), (9, 20), "nn.dense(%x, %W)", dt=H),
    _product("one-row", (1, 12), (6, 12), "nn.dense(%x, %W)"),
    _product("too-large", (2, 520), (3, 520), "nn.dense(%x, %W)"),
]
#: the cases whose weights are staged (all but the last two)
STAGED = len(CASES) - 2


def test_staged_weights_are_bit_identical(monkeypatch):
    check_staged(monkeypatch, CASES, "pwst", STAGED)
