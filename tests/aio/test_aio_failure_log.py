"""AsyncScheduler logs each failed version once, on "pysched.aio", with its traceback."""

from __future__ import annotations

import asyncio
import logging

import pytest

from pysched import Every

from support.aio import VirtualTimeLoop, run


async def boom() -> None:
    raise ZeroDivisionError("no")


def on_virtual(main):
    return run(main, VirtualTimeLoop)


def test_a_failed_version_is_logged_once_with_its_traceback(make_scheduler, caplog):
    async def main() -> None:
        s = make_scheduler()
        fut = s.schedule_in("b", 0, 0, boom)
        with pytest.raises(ZeroDivisionError):
            await fut
        assert isinstance(fut.exception(), ZeroDivisionError)
        plain = s.schedule_in("p", 0, 0, int, ("x",))
        with pytest.raises(ValueError):
            await plain
        await s.aclose()

    with caplog.at_level(logging.DEBUG):
        on_virtual(main)
    records = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert [(r.name, r.getMessage(), r.exc_info[0] if r.exc_info else None)
            for r in records] == [("pysched.aio", "task 'b' version 1 failed", ZeroDivisionError),
                                  ("pysched.aio", "task 'p' version 1 failed", ValueError)]


def test_a_failed_series_run_is_logged_once(make_scheduler, caplog):
    async def main() -> None:
        s = make_scheduler()
        s.schedule_recurring("tick", Every(10), 0, boom)
        await asyncio.sleep(15)
        await s.aclose()

    with caplog.at_level(logging.DEBUG):
        on_virtual(main)
    records = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert [(r.name, r.exc_info[0] if r.exc_info else None) for r in records] == \
        [("pysched.aio", ZeroDivisionError)]
