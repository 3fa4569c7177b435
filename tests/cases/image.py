"""image.resize2d cases, shared by tests/ops/test_image.py,
tests/emit/test_lower_pool_image.py and tests/e2e/test_ops_c_conv.py."""

from __future__ import annotations

#: coordinate transformation modes every method runs with (cubic: CUBIC_MODES)
MODES = ["half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel",
         "tf_half_pixel_for_nn"]
#: (input (h, w), output (h, w)): up, down, mixed, to one row, from 2 x 2
SIZES = [((4, 4), (8, 8)), ((6, 4), (3, 2)), ((4, 6), (6, 9)), ((5, 3), (1, 6)),
         ((2, 2), (7, 5))]
#: nearest_neighbor's rounding methods ("" is the mode's default)
ROUNDINGS = ["", "round", "floor", "ceil", "round_prefer_floor", "round_prefer_ceil"]

CUBIC_MODES = ["half_pixel", "align_corners", "asymmetric"]
CUBIC_SIZES = SIZES[:3]
#: (cubic_alpha, cubic_exclude)
CUBIC_PARAMS = [(-0.5, 0), (-0.75, 0), (-0.75, 1)]
