"""Operator families.  Importing this package registers every operator;
each family lives in its own module and registers its records with
:func:`aot.ir.ops.common.defop`."""

from . import algorithm
from . import einsum
from . import elemwise
from . import elemwise_bits
from . import fast_math
from . import image
from . import layout
from . import nn
from . import nn_conv
from . import nn_conv_nd
from . import nn_norm
from . import nn_mirror
from . import nn_pixel
from . import nn_pool
from . import nn_pool_adaptive
from . import nn_pool_nd
from . import qnn
from . import qnn_common
from . import qnn_linear
from . import qnn_nonlinear
from . import qnn_reduce
from . import qnn_softmax
from . import reduce
from . import scan
from . import transform
from . import transform_broadcast
from . import transform_index
from . import transform_init
from . import transform_nd
from . import transform_scatter
