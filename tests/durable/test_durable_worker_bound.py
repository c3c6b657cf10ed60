"""DurableScheduler refuses more workers than a thread pool may have, before it opens anything."""

from __future__ import annotations

import threading

import pytest

from pysched.durable import DurableScheduler
from pysched.pool.scheduler import MAX_WORKERS


@pytest.mark.parametrize("too_many", [MAX_WORKERS + 1, 10**9])
def test_max_workers_above_the_pool_bound_is_refused_before_the_store_opens(
        tmp_path, monkeypatch, too_many):
    real_start = threading.Thread.start
    started = []

    def start(thread: threading.Thread) -> None:
        # a build without the bound starts a thread per worker: stop it early
        started.append(thread.name)
        if len(started) > 50:
            raise RuntimeError("can't start new thread")
        real_start(thread)

    monkeypatch.setattr(threading.Thread, "start", start)
    path = tmp_path / "schedule.db"
    with pytest.raises(ValueError, match=f"max_workers must be at most {MAX_WORKERS}"):
        DurableScheduler(str(path), max_workers=too_many)
    assert not path.exists() and started == []
