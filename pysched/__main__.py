"""``python -m pysched``: the ``pysched`` command (``worker``, ``status``)."""

import sys

from .cli import main

sys.exit(main())
