"""Helpers for tests of task events (``pysched.events``)."""

from __future__ import annotations

from typing import Any

from pysched.events import TaskEvent


class CountedEvents:
    """A stand-in for ``pysched.events.new_event`` that counts the events it builds
    (``monkeypatch.setattr(pysched.events, "new_event", counted)``)."""

    def __init__(self) -> None:
        self.made = 0

    def __call__(self, cls: type, fields: tuple[Any, ...]) -> TaskEvent:
        self.made += 1
        assert cls is TaskEvent and len(fields) == len(TaskEvent._fields)
        return tuple.__new__(cls, fields)  # type: ignore[no-any-return]
