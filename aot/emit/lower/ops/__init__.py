"""The lowering column of every operator record, one file per family
(mirroring ``aot/ir/ops/``).  Importing this package registers them all;
:func:`aot.emit.lower.registry.lookup_lowering` does so on first use."""

from . import elemwise  # noqa: F401
from . import elemwise_bits  # noqa: F401
from . import nn  # noqa: F401
from . import reduce  # noqa: F401
from . import algorithm  # noqa: F401
from . import scan  # noqa: F401
from . import einsum  # noqa: F401
from . import transform  # noqa: F401  (and transform_index, transform_init, layout)
from . import transform_scatter  # noqa: F401
from . import nn_conv
from . import nn_conv_nd  # noqa: F401
from . import nn_pool
from . import nn_pool_adaptive  # noqa: F401
from . import fast_math  # noqa: F401
from . import nn_norm  # noqa: F401
from . import nn_mirror  # noqa: F401
from . import nn_pixel  # noqa: F401
from . import image  # noqa: F401
from . import qnn  # noqa: F401  (and qnn_linear)
from . import qnn_nonlinear  # noqa: F401
from . import qnn_reduce  # noqa: F401
from . import qnn_softmax  # noqa: F401
