"""Edges of pysched.sched, ThreadSafeBoundedPriorityQueue and the ``pysched`` command.

Each test pins a contract the other suites leave open: a rejected call
leaves the structure as it was, a finite timeout is a timeout, and a bad
command-line argument is a usage error (status 2) naming the option, never a
traceback or a store failure.
"""

from __future__ import annotations

import collections
import contextlib
import random
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import pysched.sched
from pysched.bounded import Empty, QueueClosed, ThreadSafeBoundedPriorityQueue
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
    (["worker", "--store", "x.db", "--import", "json", "--lease", "3e10"], "argument --lease"),
    (["worker", "--store", "x.db", "--import", "json", "--lease", "1e300"], "argument --lease"),
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


def test_keyed_producers_timed_consumers_and_a_close_midway_account_for_every_value(
        impl: Any) -> None:
    # Producers push keyed values and take some back with remove(); consumers
    # poll with short timeouts; one producer closes the queue halfway.
    # Every value offered ends exactly one way: popped, dropped (as reported),
    # removed, or refused by QueueClosed.
    producers, consumers, per_producer = 3, 3, 800
    q = ThreadSafeBoundedPriorityQueue(8, tenant_limit=4,
                                       queue_type=impl.StableBoundedPriorityQueue)
    barrier = threading.Barrier(producers + consumers)
    ends: list[list[tuple[Any, str]]] = [[] for _ in range(producers + consumers)]

    def produce(n: int) -> None:
        rng = random.Random(n)
        barrier.wait()
        for i in range(per_producer):
            if n == 0 and i == per_producer // 2:
                q.close()  # the others may still push: they get QueueClosed
            value = (n, i)
            try:
                entry = q.push_or_evict(rng.randrange(50), value, key=value,
                                        tenant=rng.choice([None, n]))
            except QueueClosed:
                ends[n].append((value, "closed"))
                continue
            if entry is not None:
                ends[n].append((entry.value, entry.reason))
            if i and rng.random() < 0.2:
                earlier = (n, rng.randrange(i))
                with contextlib.suppress(KeyError):  # it ended some other way already
                    ends[n].append((q.remove(earlier), "removed"))
            if rng.random() < 0.1:
                with contextlib.suppress(KeyError):
                    q.reprioritize((n, rng.randrange(i + 1)), rng.randrange(50))

    def consume(n: int) -> None:
        barrier.wait()
        while True:
            try:
                ends[producers + n].append((q.get(timeout=0.001), "popped"))
            except Empty:
                continue
            except QueueClosed:
                return

    threads = [threading.Thread(target=produce, args=(n,), daemon=True)
               for n in range(producers)]
    threads += [threading.Thread(target=consume, args=(n,), daemon=True)
                for n in range(consumers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(JOIN)
        assert not thread.is_alive(), "a thread is stuck: deadlock or lost wakeup"

    outcomes = [end for per_thread in ends for end in per_thread]
    values = [value for value, _ in outcomes]
    assert len(values) == len(set(values)), "a value ended twice"
    assert sorted(values) == sorted((n, i) for n in range(producers)
                                    for i in range(per_producer)), "a value was lost"
    reasons = collections.Counter(reason for _, reason in outcomes)
    assert reasons["closed"] >= per_producer // 2  # at least the closer's second half
    stats = q.stats()
    assert stats["length"] == 0 and stats["waiting"] == 0
    assert stats["popped"] == reasons["popped"]
    assert stats["evicted"] == reasons["evicted"]
    assert stats["rejected_capacity"] == reasons["capacity"]
    assert stats["rejected_quota"] == reasons["quota"]
    q._check()
