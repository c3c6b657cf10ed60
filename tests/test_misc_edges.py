"""Edges of pysched.sched, ThreadSafeBoundedPriorityQueue and the ``pysched`` command.

Each test pins a contract the other suites leave open: a rejected call
leaves the structure as it was, a finite timeout is a timeout, and a bad
command-line argument is a usage error (status 2) naming the option, never a
traceback or a store failure.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

import pysched.sched
from pysched.bounded import ThreadSafeBoundedPriorityQueue
from pysched.cli import main, worker

JOIN = 30.0  # seconds: only a deadlock or a lost wakeup gets near it


@pytest.fixture
def sched_cls(impl: Any) -> type[pysched.sched.scheduler]:
    """pysched.sched.scheduler on the core that ``impl`` names."""
    return type("scheduler", (pysched.sched.scheduler,), {"_core_factory": impl.Scheduler})


# -- pysched.sched ------------------------------------------------------------------------

@pytest.mark.parametrize("bad", [
    pytest.param(("late", 0), id="time"),
    pytest.param((1, "low"), id="priority"),
])
@pytest.mark.parametrize("queued", [1, 7], ids=["one-queued", "several-queued"])
def test_an_incomparable_event_is_refused_and_leaves_the_queue_usable(
        sched_cls: type[pysched.sched.scheduler], bad: tuple[Any, Any], queued: int) -> None:
    ran: list[Any] = []
    s = sched_cls(timefunc=lambda: 10, delayfunc=lambda seconds: None)
    for n in range(queued):
        s.enterabs(1, n, ran.append, (n,))
    before = s.queue
    with pytest.raises(TypeError):
        s.enterabs(*bad, ran.append, ("bad",))
    assert s.queue == before
    # Only comparable events are queued, so later ones enter and run in order.
    s.enterabs(2, 0, ran.append, ("later",))
    s.enterabs(0, 0, ran.append, ("first",))
    assert s.run(blocking=False) is None
    assert ran == ["first", *range(queued), "later"] and s.empty()


# -- ThreadSafeBoundedPriorityQueue ---------------------------------------------------------

@pytest.mark.parametrize("timeout", [threading.TIMEOUT_MAX * 2, 1e300])
def test_get_with_a_timeout_beyond_the_platform_limit_waits_for_a_push(
        impl: Any, timeout: float) -> None:
    q = ThreadSafeBoundedPriorityQueue(2, queue_type=impl.StableBoundedPriorityQueue)
    got: list[Any] = []
    errors: list[BaseException] = []

    def consume() -> None:
        try:
            got.append(q.get(timeout=timeout))
        except BaseException as exc:  # reported by the test
            errors.append(exc)

    consumer = threading.Thread(target=consume, daemon=True)
    consumer.start()
    deadline = time.monotonic() + JOIN
    while q.stats()["waiting"] < 1 and consumer.is_alive():
        assert time.monotonic() < deadline, "the consumer never started waiting"
        time.sleep(0.001)
    q.push(1, "x")
    consumer.join(JOIN)
    assert not consumer.is_alive()
    assert errors == [] and got == ["x"]
    assert q.stats()["waiting"] == 0


# -- the pysched command --------------------------------------------------------------------

TOO_BIG = str(2**64)


@pytest.mark.parametrize(("args", "complaint"), [
    (["worker", "--store", "x.db", "--import", "json", "--max-workers", TOO_BIG],
     "argument --max-workers"),
    (["worker", "--store", "x.db", "--import", "json", "--prefetch", TOO_BIG],
     "argument --prefetch"),
    (["status", "--store", "x.db", "--limit", TOO_BIG], "argument --limit"),
    (["worker", "--store", "", "--import", "json"], "argument --store"),
    (["worker", "--store", ":memory:", "--import", "json"], "argument --store"),
    (["worker", "--store", "x.db", "--import", "json", "--owner", ""], "argument --owner"),
    (["worker", "--store", "x.db", "--import", "json", "--owner", "a\x00b"],
     "argument --owner"),
    (["worker", "--store", "x.db", "--import", "json", "--owner", "o" * 5000],
     "argument --owner"),
    (["status", "--store", ""], "argument --store"),
    (["status", "--store", ":memory:"], "argument --store"),
])
def test_a_bad_argument_exits_2_naming_the_option_before_opening_anything(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        args: list[str], complaint: str) -> None:
    monkeypatch.chdir(tmp_path)
    # A bad argument must stop the command before it opens a store (and a
    # worker that got one would serve until signalled).
    def refuse_to_open(*args: object, **kwargs: object) -> None:
        raise AssertionError("a store was opened despite a bad argument")

    monkeypatch.setattr(worker, "open_store", refuse_to_open)
    with pytest.raises(SystemExit) as exit_:
        main(args)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert complaint in err and "usage: pysched" in err
    assert "Traceback" not in err
    assert not (tmp_path / "x.db").exists()
