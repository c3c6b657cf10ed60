"""pysched: a fast, cancellable priority task scheduler with a Cython core.

``IMPLEMENTATION`` says which core is in use: ``"cython"``, or ``"python"``
where the extension is absent or PYSCHED_NO_EXTENSIONS is set.
"""

from ._errors import InvalidTransition, SchedulerClosed
from ._impl import IMPLEMENTATION, Scheduler, Task
from ._version import __version__

__all__ = [
    "IMPLEMENTATION",
    "InvalidTransition",
    "Scheduler",
    "SchedulerClosed",
    "Task",
    "__version__",
]
