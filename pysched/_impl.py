"""Pick the Cython core or the pure-Python twin.

The core is used unless PYSCHED_NO_EXTENSIONS is set to a non-empty value,
the interpreter is not CPython, or the compiled module cannot be imported.
Type checkers always read the pure twin, which is the typed spec.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # as in pysched._validate: true for type checkers, typing unloaded
NO_EXTENSIONS = (bool(os.environ.get("PYSCHED_NO_EXTENSIONS"))
                 or sys.implementation.name != "cpython")

if TYPE_CHECKING or NO_EXTENSIONS:
    from ._bounded_queue_py import QueueEntry, StableBoundedPriorityQueue
    from ._scheduler_py import Scheduler, Task

    IMPLEMENTATION = "python"
else:
    try:
        from ._core import QueueEntry, Scheduler, StableBoundedPriorityQueue, Task
    except ImportError:  # no compiled core for this platform: the twin is exact
        from ._bounded_queue_py import QueueEntry, StableBoundedPriorityQueue
        from ._scheduler_py import Scheduler, Task

        IMPLEMENTATION = "python"
    else:
        IMPLEMENTATION = "cython"

__all__ = ["IMPLEMENTATION", "QueueEntry", "Scheduler", "StableBoundedPriorityQueue", "Task"]
