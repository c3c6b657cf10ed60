"""Exceptions raised by pysched."""


class InvalidTransition(RuntimeError):
    """A task was asked to move to a state it cannot reach from where it is.

    Finishing a task twice, finishing a task that is not running, or finishing
    a task through a scheduler that does not own it all raise this, and change
    nothing.
    """


class SchedulerClosed(RuntimeError):
    """Work was submitted to a scheduler that is closing or closed."""
