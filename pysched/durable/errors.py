"""Exceptions of the durable layer.

Each one is a subclass of the built-in error a caller would expect
(``TypeError`` for work that cannot be stored, ``LookupError`` for a reference
that names nothing), so ``except TypeError`` still works.
"""

from __future__ import annotations

__all__ = ["BadRow", "DurableError", "NotDurable", "UnknownTask"]


class DurableError(Exception):
    """Base class of the durable layer's own errors."""


class NotDurable(DurableError, TypeError):
    """Work that cannot survive a restart: a lambda, a nested function, args that are not JSON."""


class UnknownTask(DurableError, LookupError):
    """A stored reference names no registered task and no allowed importable function."""


class BadRow(DurableError, ValueError):
    """A stored row that this version of pysched cannot run (bad JSON, bad field, newer format)."""
