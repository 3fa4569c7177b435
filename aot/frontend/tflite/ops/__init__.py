"""Converter families, one module per TFLite operator family; importing
this package registers them all."""

from . import activation
from . import control
from . import compare
from . import conv
from . import math
from . import pool
from . import products
from . import quant
from . import shape
from . import softmax
