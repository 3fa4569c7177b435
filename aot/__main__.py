"""``python -m aot``: the ``aot`` command line (:mod:`aot.cli`)."""

import sys

from .cli import main

sys.exit(main())
