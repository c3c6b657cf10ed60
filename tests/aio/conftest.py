"""Fixtures of the AsyncScheduler tests: the event loops, a scheduler maker, asyncio's log."""

from __future__ import annotations

import logging

import pytest

from support.aio import loop_factory_fixture, make_scheduler_fixture  # noqa: F401  (fixtures)


@pytest.fixture
def asyncio_log(caplog):
    """What asyncio logs (a Task destroyed while pending, an exception never retrieved)."""
    caplog.set_level(logging.WARNING, logger="asyncio")
    return caplog
