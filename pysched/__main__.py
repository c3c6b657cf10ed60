"""``python -m pysched``: the ``pysched`` command (``worker``, ``status``, ``web``, ...)."""

import sys

from .cli import main

sys.exit(main())
