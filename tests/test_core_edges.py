"""Edge cases of the core's batch calls, heap keys and bounded queue, on core and twin."""

from __future__ import annotations

import pytest


class _LooseId:
    """An id equal to ``hub`` and to itself only: equality that is not transitive.

    Every one hashes alike, so each comparison is really made.
    """

    def __init__(self, name: str) -> None:
        self.name = name

    def __hash__(self) -> int:
        return 7

    def __eq__(self, other: object) -> bool:
        return self is other or (isinstance(other, _LooseId) and "hub" in (self.name, other.name))

    def __repr__(self) -> str:
        return self.name


@pytest.mark.parametrize("hub_running", [False, True], ids=["hub-pending", "hub-running"])
@pytest.mark.parametrize("names", [("x", "y"), ("x", "y", "x"), ("x", "y", "y", "x")])
def test_schedule_many_numbers_versions_by_the_known_id_two_unequal_ids_share(
        impl, hub_running, names):
    # x != y, but both equal the known id hub: as schedule() would one by one,
    # each item is the next version of hub's one slot, and what is returned is
    # what was committed.
    s = impl.Scheduler(clock=lambda: 0.0)
    hub = _LooseId("hub")
    s.schedule(hub, 0.0, 0, print)
    if hub_running:
        running = s.next(now=0.0)
    ids = {name: _LooseId(name) for name in set(names)}
    versions = s.schedule_many([(ids[name], 1.0, 0, print) for name in names])
    assert versions == list(range(2, 2 + len(names)))
    s._check()
    stats = s.stats()
    assert stats["pending"] == 1
    assert stats["replaced"] == len(names) - (1 if hub_running else 0)
    if hub_running:
        s.complete(running)
    (task,) = s.pop_due(now=1.0)
    assert task.version == versions[-1]
    assert task.task_id is ids[names[-1]] or task.task_id is hub
