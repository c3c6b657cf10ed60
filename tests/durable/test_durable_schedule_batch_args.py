"""schedule_many's items: no arguments stores what encode_args gives; a batch naming
several functions keeps each item's own name and queue; bad arguments still raise,
naming them, and store nothing."""

from __future__ import annotations

from typing import Any

import pytest

from pysched import durable
from pysched.durable import DurableScheduler, MemoryStore
from pysched.durable.store import encode_args

import support.durable as h


@durable.task(name="batch-args-mail", queue="mail")
def mail() -> None:
    pass


@pytest.fixture
def producer() -> Any:
    with DurableScheduler(MemoryStore(), max_workers=0) as s:
        yield s


@pytest.mark.parametrize("rest", [(), ((),), ([],), ((), None), ([], {}), ((), {})])
def test_no_arguments_are_stored_as_encode_args_gives_them(producer: Any, rest: tuple) -> None:
    producer.schedule_many([("t", producer.clock() + 60, 0, h.note, *rest)])
    assert producer.row("t")["args"] == encode_args((), None)


def test_each_item_keeps_its_own_function_arguments_and_queue(producer: Any) -> None:
    due = producer.clock() + 60
    producer.schedule_many([("a", due, 0, h.note, [1]), ("b", due, 0, mail),
                            ("c", due, 0, mail, (), {"x": 2}), ("d", due, 0, h.note)])
    rows = {i: producer.row(i) for i in "abcd"}
    assert [(rows[i]["ref"], rows[i]["queue"]) for i in "abcd"] == [
        ("note", "default"), ("batch-args-mail", "mail"), ("batch-args-mail", "mail"),
        ("note", "default")]
    assert rows["a"]["args"] == encode_args([1], None)
    assert rows["c"]["args"] == encode_args((), {"x": 2})


@pytest.mark.parametrize("rest, error", [(("",), "args must be a list or tuple"),
                                         (((), []), "kwargs must be a dict"),
                                         (("ab", None), "args must be a list or tuple")])
def test_bad_arguments_raise_and_store_nothing(producer: Any, rest: tuple, error: str) -> None:
    due = producer.clock() + 60
    with pytest.raises(TypeError, match=error):
        producer.schedule_many([("ok", due, 0, h.note), ("bad", due, 0, h.note, *rest)])
    assert producer.row("ok") is None and producer.row("bad") is None
