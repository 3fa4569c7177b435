"""Converter families, one module per ONNX operator family; importing this
package registers them all."""

from . import activation
from . import attention
from . import bits
from . import control
from . import conv
from . import index
from . import init
from . import linear
from . import loss
from . import math
from . import norm
from . import pad
from . import pool
from . import quant
from . import recurrent
from . import reduce
from . import resize
from . import scan
from . import scatter
from . import shape
