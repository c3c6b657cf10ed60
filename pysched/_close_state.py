"""The life cycle of a ThreadPoolScheduler: open, draining, closing, closed.

Legal transitions (every other request is a no-op, which makes close() and
shutdown() idempotent)::

    open     -> draining   shutdown(cancel_futures=False): take no new work,
                           stop recurring series, run what is already pending
    open     -> closing    close() or shutdown(cancel_futures=True): take no
                           new work, cancel every pending version
    draining -> closing    the last pending and running task finished, or
                           close() was called while draining
    closing  -> closed     every worker and the dispatcher have exited

Work is accepted only while open; workers claim only while open or draining.
"""

from __future__ import annotations

from ._errors import InvalidTransition

OPEN = "open"
DRAINING = "draining"
CLOSING = "closing"
CLOSED = "closed"

TRANSITIONS: dict[str, frozenset[str]] = {
    OPEN: frozenset({DRAINING, CLOSING}),
    DRAINING: frozenset({CLOSING}),
    CLOSING: frozenset({CLOSED}),
    CLOSED: frozenset(),
}

__all__ = ["CLOSED", "CLOSING", "DRAINING", "OPEN", "TRANSITIONS", "check_transition"]


def check_transition(old: str, new: str) -> str:
    """Return ``new`` if ``old -> new`` is legal, else raise InvalidTransition."""
    if new not in TRANSITIONS[old]:
        raise InvalidTransition(f"scheduler cannot go from {old} to {new}")
    return new
