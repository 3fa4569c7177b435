"""nn.conv1d_transpose, nn.conv3d and nn.conv3d_transpose cases, shared by
tests/ops/test_nn_conv_nd.py and tests/e2e/test_ops_c_nd.py."""

from __future__ import annotations

#: data shape, weight shape, attributes (data NCDHW / weight OIDHW unless
#: the layouts say otherwise)
CONV3D = [
    ((1, 4, 3, 4, 5), (6, 2, 2, 3, 2), dict(groups=2, padding=[1, 0, 1], strides=[1, 2, 1])),
    ((1, 2, 3, 3, 3), (2, 2, 3, 3, 3), dict(padding=[1])),
    ((1, 3, 4, 5, 2), (2, 2, 3, 2, 4), dict(padding=[0, 1, 1, 1, 0, 0], dilation=[2, 1, 1],
                                            data_layout="NDHWC", kernel_layout="DHWIO")),
    ((1, 1, 2, 2, 2), (1, 1, 3, 3, 3), dict(padding=[2], strides=[2])),   # taps in padding
]

#: data shape, weight shape, attributes (data NCW / weight IOW by default)
TRANSPOSE1D = [
    ((1, 4, 5), (4, 3, 3), dict(groups=2, padding=[1], strides=[2], output_padding=[1])),
    ((2, 3, 4), (3, 2, 2), dict(strides=[3], dilation=[2], padding=[0, 2])),
    ((1, 5, 3), (2, 3, 4), dict(data_layout="NWC", kernel_layout="WIO", strides=[2])),
]

#: data shape, weight shape, attributes (data NCDHW / weight IODHW unless
#: the layouts say otherwise): strides with dilations coprime to them, a
#: common factor (stride 2 dilation 2, stride 6 dilation 4), groups,
#: output_padding, channels-last layouts
TRANSPOSE3D = [
    ((1, 4, 2, 3, 2), (4, 3, 2, 3, 2), dict(groups=2, strides=[2, 1, 2], padding=[1, 0, 1],
                                            output_padding=[1, 0, 0])),
    ((1, 2, 3, 2, 2), (2, 2, 3, 2, 2), dict(strides=[3, 2, 6], dilation=[2, 1, 4],
                                            padding=[0, 1, 0, 2, 0, 1])),
    ((1, 2, 3, 4, 3), (2, 2, 3, 3, 2), dict(data_layout="NDHWC", kernel_layout="DHWIO",
                                            strides=[2, 2, 1], dilation=[2, 1, 1],
                                            padding=[1])),
]

#: (data dtype, out_dtype or None) every row runs with
DTYPES = [("float32", None), ("int8", "int32")]
