"""The store protocol, the same tests on the memory, SQLite and PostgreSQL stores.

Leases are made live (3600 s) or already expired (-1 s) instead of waiting
for time to pass, so no test sleeps.
"""

from __future__ import annotations

import itertools
import threading
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pysched.durable import NewTask, Outcome, Store, TaskRegistry

from support.durable import open_spec, put_raw

LIVE, EXPIRED = 3600.0, -1.0
ARGS = '{"args":[],"kwargs":{}}'


def new(task_id: str, run_at: float = 100.0, priority: int = 0) -> NewTask:
    return NewTask(task_id, run_at, priority, "note", ARGS)


@pytest.fixture
def store(store_spec: dict[str, Any]) -> Any:
    s = open_spec(store_spec)
    yield s
    s.close()


def done(claim: Any, state: str = "completed", error: str | None = None) -> Outcome:
    return Outcome(claim.token, claim.task_id, claim.version, state, error)


def test_versions_grow_through_replace_and_cancel(store: Store) -> None:
    assert store.schedule([new("a"), new("b")]) == [1, 1]
    assert store.schedule([new("a", 50.0)]) == [2]
    assert store.cancel("a") == 3
    assert store.cancel("a") is None  # nothing pending or running any more
    assert store.cancel("missing") is None
    assert store.schedule([new("a")]) == [4]  # a cancelled id comes back newer, never reused
    assert store.get("a")["state"] == "pending"
    assert {r.task_id: r.version for r in store.rows()} == {"a": 4, "b": 1}
    assert store.counts() == {"pending": 2}


def test_one_batch_may_name_an_id_twice(store: Store) -> None:
    assert store.schedule([new("a"), new("b"), new("a", 7.0)]) == [1, 1, 2]
    assert store.get("a")["run_at"] == 7.0


def test_cancel_of_a_version_only_while_it_is_pending(store: Store) -> None:
    store.schedule([new("a"), new("b")])
    assert store.cancel("a", version=2) is None  # not that version
    assert store.cancel("a", version=1) == 2
    (claim,) = store.claim(1e9, 10, "w", LIVE)
    assert claim.task_id == "b"
    assert store.cancel("b", version=1) is None  # running: a Future cannot cancel it


def test_claims_in_order_up_to_threshold_and_limit(store: Store) -> None:
    store.schedule([new("late", 30.0), new("low", 10.0, 0), new("high", 10.0, 5),
                    new("low2", 10.0, 0), new("early", 5.0, -9)])
    claims = store.claim(10.0, 3, "w", LIVE)
    assert [c.task_id for c in claims] == ["early", "high", "low"]  # time, priority, FIFO
    assert [c.attempts for c in claims] == [1, 1, 1]
    batch = claims[0].token.split(":")[1]  # one nonce per claim batch
    assert [c.token for c in claims] == [f"w:{batch}:1:1:{c.task_id}" for c in claims]
    (last,) = store.claim(10.0, 9, "w", LIVE)
    assert last.task_id == "low2" and last.token.split(":")[1] != batch
    assert store.claim(29.0, 9, "w", LIVE) == []
    assert store.counts() == {"running": 4, "pending": 1}


def test_a_replaced_or_cancelled_version_is_never_claimed(store: Store) -> None:
    store.schedule([new("a", 1.0), new("b", 1.0)])
    store.schedule([new("a", 500.0)])  # version 2 is not due
    store.cancel("b")
    assert store.claim(100.0, 10, "w", LIVE) == []
    (claim,) = store.claim(500.0, 10, "w", LIVE)
    assert (claim.task_id, claim.version) == ("a", 2)


def test_finish_records_only_for_the_claim_that_holds_the_version(store: Store) -> None:
    store.schedule([new("a"), new("b"), new("c")])
    a, b, c = store.claim(1e9, 10, "w", LIVE)
    store.cancel("b")  # b's running version is superseded
    outcomes = [done(a), done(b), done(c, "failed", "ValueError: x")]
    assert store.finish(outcomes) == [True, False, True]
    assert store.get("a")["state"] == "completed"
    assert store.get("b")["state"] == "cancelled" and store.get("b")["lease_token"] is None
    assert store.get("c")["state"] == "failed" and store.get("c")["error"] == "ValueError: x"
    assert store.finish([done(a)]) == [False]  # twice: the token no longer holds anything
    assert store.get("a")["state"] == "completed"


def test_a_newer_version_waits_for_the_older_ones_lease(store: Store) -> None:
    store.schedule([new("a")])
    (old,) = store.claim(1e9, 10, "w1", LIVE)
    assert store.schedule([new("a")]) == [2]
    (row,) = store.rows(["a"])
    assert row.state == "pending" and row.blocked
    assert store.claim(1e9, 10, "w2", LIVE) == []  # one version of an id runs at a time
    assert store.finish([done(old)]) == [False]  # superseded: not recorded, lease released
    (new_claim,) = store.claim(1e9, 10, "w2", LIVE)
    assert (new_claim.version, new_claim.attempts) == (2, 1)
    assert store.finish([done(new_claim)]) == [True]


def test_an_expired_lease_is_claimable_again_and_the_old_owner_cannot_finish(store: Store) -> None:
    store.schedule([new("a"), new("b")])
    first = store.claim(1e9, 10, "dead", EXPIRED)
    assert sorted(store.requeue_expired()) == ["a", "b"]
    assert store.get("a")["state"] == "pending" and store.get("a")["version"] == 1
    second = store.claim(1e9, 10, "alive", LIVE)
    assert [c.attempts for c in second] == [2, 2]  # at-least-once: the re-runs are counted
    assert store.finish([done(c) for c in first]) == [False, False]
    assert store.get("a")["lease_owner"] == "alive"  # the stale finish released nothing
    assert store.finish([done(c) for c in second]) == [True, True]
    assert store.requeue_expired() == []


def test_heartbeat_keeps_a_lease_live(store: Store) -> None:
    store.schedule([new("a"), new("b")])
    (mine,) = store.claim(1e9, 1, "w", EXPIRED)
    store.claim(1e9, 1, "other", EXPIRED)
    assert store.heartbeat("w", LIVE) == [mine.token]
    assert store.requeue_expired() == ["b"]
    assert store.get("a")["state"] == "running"


def test_release_owner_hands_back_everything_it_held(store: Store) -> None:
    store.schedule([new("a"), new("b"), new("c")])
    store.claim(1e9, 2, "restarted", LIVE)
    store.schedule([new("a")])  # a newer version waits behind the held lease
    assert sorted(store.release_owner("restarted")) == ["a", "b"]
    assert {(r.task_id, r.version, r.blocked) for r in store.rows()} == {
        ("a", 2, False), ("b", 1, False), ("c", 1, False)}


def test_release_owner_within_a_horizon_keeps_leases_renewed_since(store: Store) -> None:
    store.schedule([new("stale"), new("fresh")])
    store.claim(1e9, 1, "shared", 60.0)  # "stale": last renewed long before the horizon
    store.claim(1e9, 1, "shared", LIVE)  # "fresh": renewed since
    assert store.release_owner("shared", expiring_within=600.0) == ["stale"]
    assert (store.get("fresh")["state"], store.get("fresh")["lease_owner"]) == (
        "running", "shared")
    assert store.get("stale")["state"] == "pending"


def test_a_pending_outcome_hands_a_claim_back_unrun_and_gives_its_attempt_back(
        store: Store) -> None:
    store.schedule([new("a")])
    (claim,) = store.claim(1e9, 1, "w", LIVE)
    assert store.finish([done(claim, "pending")]) == [True]
    assert (store.get("a")["state"], store.get("a")["attempts"]) == ("pending", 0)
    (again,) = store.claim(1e9, 1, "w", LIVE)
    assert again.attempts == 1
    # Same owner, version and attempt, yet its own token: the hand-back tried again
    # (a stored batch whose answer was lost) neither records nor releases anything.
    assert again.token != claim.token
    assert store.finish([done(claim, "pending")]) == [False]
    assert (store.get("a")["state"], store.get("a")["lease_token"]) == ("running", again.token)
    assert store.finish([done(again)]) == [True]
    assert store.get("a")["attempts"] == 1


def test_a_retry_outcome_keeps_its_attempt(store: Store) -> None:
    store.schedule([new("a")])
    (claim,) = store.claim(1e9, 1, "w", LIVE)
    retry = Outcome(claim.token, "a", claim.version, "pending", "ValueError: x", 50.0)
    assert store.finish([retry]) == [True]
    (again,) = store.claim(1e9, 1, "w", LIVE)
    assert again.attempts == 2


def test_mark_error_only_on_that_pending_version(store: Store) -> None:
    store.schedule([new("a")])
    assert not store.mark_error("a", 2, "nope")
    assert store.mark_error("a", 1, "bad row")
    assert store.get("a")["state"] == "error" and store.get("a")["error"] == "bad row"
    assert store.rows() == []


def test_wall_high_water_only_rises(store: Store) -> None:
    assert store.wall_high_water() is None
    assert store.wall_high_water(10.0) == 10.0
    assert store.wall_high_water(5.0) == 10.0
    assert store.wall_high_water(12.5) == 12.5


def test_concurrent_claimers_take_disjoint_rows(store_spec: dict[str, Any]) -> None:
    """Four owners, each on its own store object (own connections), claim 400 rows at once."""
    seed = open_spec(store_spec)
    seed.schedule([new(f"t{i}", float(i % 7)) for i in range(400)])
    got: dict[str, list[str]] = {}
    start = threading.Barrier(4)

    def claimer(owner: str) -> None:
        s = open_spec(store_spec)
        mine = got.setdefault(owner, [])
        start.wait()
        while batch := s.claim(1e9, 16, owner, LIVE):
            mine += [c.task_id for c in batch]
            assert s.finish([done(c) for c in batch]) == [True] * len(batch)
        if s is not seed:
            s.close()

    threads = [threading.Thread(target=claimer, args=(f"w{k}",)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    claimed = [i for ids in got.values() for i in ids]
    assert len(claimed) == len(set(claimed)) == 400  # each row exactly once, none left
    assert seed.counts() == {"completed": 400}
    seed.close()


def test_held_by_lists_the_leases_of_an_owner(store: Store) -> None:
    store.schedule([new("a"), new("b"), new("c")])
    store.claim(1e9, 2, "w1", LIVE)
    store.claim(1e9, 1, "w2", LIVE)
    assert sorted(store.held_by("w1")) == ["a", "b"] and store.held_by("w2") == ["c"]
    assert store.held_by("nobody") == []


BAD_IDS = [("nul\x00inside", "NUL"), ("x" * 1025, "bytes in UTF-8"),
           ("\u00e9" * 513, "bytes in UTF-8"), ("lone\ud800surrogate", "valid Unicode")]


@pytest.mark.parametrize("task_id, message", BAD_IDS)
def test_a_bad_task_id_is_a_value_error_naming_it_and_nothing_is_written(
        store: Store, task_id: str, message: str) -> None:
    store.schedule([new("fine")])
    for call in (lambda: store.schedule([new("other"), new(task_id)]),
                 lambda: store.cancel(task_id), lambda: store.get(task_id)):
        with pytest.raises(ValueError, match=f"task_id.*{message}|{message}.*task_id"):
            call()
    assert store.counts() == {"pending": 1} and store.get("other") is None
    assert store.schedule([new("y" * 1024)]) == [1]  # the limit itself is fine


def test_heartbeat_with_tokens_renews_only_those_claims(store: Store) -> None:
    """A lease the caller no longer knows of (its claim's answer was lost) must expire."""
    store.schedule([new("known"), new("orphan")])
    known, orphan = store.claim(1e9, 2, "w", EXPIRED)
    assert store.heartbeat("w", LIVE, [known.token, "w:9:9:nothing"]) == [known.token]
    assert store.heartbeat("other", LIVE, [orphan.token]) == []  # not its lease
    assert store.requeue_expired() == ["orphan"]
    assert store.get("known")["state"] == "running"


def test_a_claim_batch_survives_a_row_with_a_corrupt_seq(store_spec: dict[str, Any]) -> None:
    """The claim commits, then orders its batch: a text seq must not lose the leased batch."""
    if store_spec["kind"] == "postgres":
        pytest.skip("PostgreSQL's bigint column refuses a text seq at insert")
    store = open_spec(store_spec)
    store.schedule([new("a", 5.0), new("b", 5.0)])
    put_raw(store, store_spec, task_id="bad", run_at=5.0, seq="x")
    claims = store.claim(1e9, 10, "w", LIVE)
    expected = {"a", "b"} if store_spec["kind"] == "memory" else {"a", "b", "bad"}
    assert {c.task_id for c in claims} == expected
    store.close()


def test_repair_puts_rows_running_without_a_usable_lease_back(
        store: Store, store_spec: dict[str, Any]) -> None:
    store.schedule([new("fine")])
    store.claim(1e9, 1, "w", LIVE)
    now = store.now()
    put_raw(store, store_spec, task_id="nolease", state="running")
    put_raw(store, store_spec, task_id="forever", state="running", lease_owner="x",
            lease_token="x:1:1:forever", lease_expires=now + 10 * 365 * 86_400)
    put_raw(store, store_spec, task_id="done", state="completed")
    assert sorted(store.repair_leases(86_400.0)) == ["forever", "nolease"]
    assert store.get("nolease")["state"] == "pending"
    forever = store.get("forever")
    assert forever["state"] == "pending" and forever["lease_owner"] is None
    assert store.get("fine")["state"] == "running"  # a live lease within the horizon is kept
    assert store.repair_leases(86_400.0) == []


def test_rows_in_unknown_states_are_reported(store: Store, store_spec: dict[str, Any]) -> None:
    store.schedule([new("fine")])
    assert store.unknown_states() == []
    put_raw(store, store_spec, task_id="odd", state="zombie")
    assert store.unknown_states() == [("odd", "zombie")]


_examples = itertools.count()


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_claim_takes_exactly_the_rows_a_worker_serves(store: Store, data: Any) -> None:
    """The SQL filters and Serves.matcher() against a plain model of routing. Names,
    modules and queues are new in each example, so earlier examples' rows never match."""
    n = next(_examples)
    refs = [f"x{n}a", f"x{n}b", f"x{n}m:f", f"x{n}m.sub:g", f"x{n}mm:h", f"x{n}m", f"x{n}"]
    queues = [f"q{n}a", f"q{n}b", "default"]
    rows = data.draw(st.lists(st.tuples(st.sampled_from(refs), st.sampled_from(queues)),
                              max_size=10))
    names = tuple(data.draw(st.lists(st.sampled_from(refs[:2]), unique=True)))
    modules = data.draw(st.lists(st.sampled_from([f"x{n}m"]), max_size=1))
    served_queues = data.draw(st.none() | st.lists(st.sampled_from(queues), min_size=1,
                                                   unique=True).map(tuple))
    registry = TaskRegistry(allowed_modules=modules)
    for name in names:
        registry.register(lambda: None, name)
    serves = registry.serves(served_queues)

    def model(ref: str, queue: str) -> bool:
        by_name = ref in names or any(ref.startswith((m + ":", m + ".")) for m in modules)
        return by_name and (served_queues is None or queue in served_queues)

    ids = [f"e{n}r{i}" for i in range(len(rows))]
    store.schedule([NewTask(i, 1.0, 0, ref, ARGS, queue)
                    for i, (ref, queue) in zip(ids, rows, strict=True)])
    expected = {i for i, (ref, queue) in zip(ids, rows, strict=True) if model(ref, queue)}
    matches = serves.matcher()
    assert {i for i, (ref, q) in zip(ids, rows, strict=True) if matches(ref, q)} == expected
    assert {c.task_id for c in store.claim(1e9, 100, "w", LIVE, serves)} == expected


def test_a_row_of_invalid_utf8_is_claimed_and_refused_not_a_stall_of_every_claim(
        tmp_path: Any) -> None:
    """SQLite keeps whatever bytes a writer puts in a TEXT column: one row whose args,
    ref or queue are not UTF-8 made every claim and every re-read raise."""
    from pysched.durable import SQLiteStore
    from pysched.durable.errors import BadRow
    from pysched.durable.store import check_claim

    store = SQLiteStore(tmp_path / "s.db")
    try:
        store.schedule([new("good", 5.0)])
        store._conns.get().execute(  # type: ignore[attr-defined]
            "INSERT INTO pysched_tasks (task_id, version, state, run_at, priority, ref, args,"
            " seq, queue) VALUES ('bad', 1, 'pending', 1.0, 0, 'note', CAST(x'ff7b' AS TEXT),"
            " 0, CAST(x'64ff' AS TEXT))")
        assert sorted((r.task_id, r.queue) for r in store.rows()) == [
            ("bad", "d\ufffd"), ("good", "default")]
        bad, good = store.claim(1e9, 10, "w", LIVE)
        assert (bad.task_id, good.task_id) == ("bad", "good")
        with pytest.raises(BadRow, match="JSON"):
            check_claim(bad)
        assert check_claim(good) == ([], {})
        assert store.finish([done(bad, "error", "not JSON"), done(good)]) == [True, True]
        assert store.counts() == {"completed": 1, "error": 1}
    finally:
        store.close()


def test_a_row_whose_task_id_is_not_utf8_is_refused_in_the_claim_not_run(
        tmp_path: Any, caplog: Any) -> None:
    """A task_id of invalid UTF-8 made every claim and every re-read raise; read with
    its bytes replaced, it would run and never record its outcome (nothing can name
    it), then run again at every lease's end. The claim ends it in error and logs why."""
    from pysched.durable import SQLiteStore

    store = SQLiteStore(tmp_path / "s.db")
    try:
        store.schedule([new("good", 5.0)])
        store._conns.get().execute(  # type: ignore[attr-defined]
            "INSERT INTO pysched_tasks (task_id, version, state, run_at, priority, ref, args,"
            " seq, queue) VALUES (CAST(x'ff61' AS TEXT), 1, 'pending', 1.0, 0, 'note',"
            " '[[], {}]', 0, 'default')")
        assert sorted(r.task_id for r in store.rows()) == ["good", "\ufffda"]
        with caplog.at_level("WARNING", logger="pysched.durable"):
            assert [c.task_id for c in store.claim(1e9, 10, "w", LIVE)] == ["good"]
        assert "task_id is not UTF-8" in caplog.text and "ff" in caplog.text
        assert store.counts() == {"running": 1, "error": 1}
        assert store.claim(1e9, 10, "w", LIVE) == []  # refused once: never claimed again
        assert store.held_by("w") == ["good"]
        assert [r.task_id for r in store.rows()] == []
    finally:
        store.close()
