"""The core mirrors the twin, which is the spec: the same names, constants and docstrings."""

from __future__ import annotations

import inspect

import pytest

import pysched._bounded_queue_py as queue_spec
import pysched._scheduler_py as scheduler_spec

from support.impl import NO_EXTENSIONS, compiled_module, pure_namespace

pytestmark = pytest.mark.skipif(NO_EXTENSIONS, reason="compares the compiled core")

CLASSES = ["Scheduler", "Task", "StableBoundedPriorityQueue", "QueueEntry"]


def public_names(cls):
    return sorted(n for n in dir(cls) if not n.startswith("_") or n in ("__len__", "_check"))


def looks_like_signature(line):
    name = line.split("(")[0].replace(".", "")
    return "(" in line and name.isidentifier()


def doc_of(obj):
    """The docstring without the signature lines Cython puts first."""
    doc = inspect.getdoc(obj) or ""
    while True:
        first, _, rest = doc.partition("\n\n")
        if not first or not all(looks_like_signature(line) for line in first.splitlines()):
            return doc
        doc = rest


def test_the_constants_are_the_twins():
    core = compiled_module()
    assert core.REBUILD_FLOOR == scheduler_spec.REBUILD_FLOOR
    assert core.COMPACT_FLOOR == queue_spec.COMPACT_FLOOR


@pytest.mark.parametrize("name", CLASSES)
def test_the_same_public_names(name):
    core, pure = compiled_module(), pure_namespace()
    assert public_names(getattr(core, name)) == public_names(getattr(pure, name))


@pytest.mark.parametrize("name", CLASSES)
def test_the_same_docstrings(name):
    core_cls, pure_cls = getattr(compiled_module(), name), getattr(pure_namespace(), name)
    # The class docstrings agree but for the twin's doctest.
    assert doc_of(pure_cls).startswith(doc_of(core_cls))
    for attr in public_names(pure_cls):
        pure_doc, core_doc = doc_of(getattr(pure_cls, attr)), doc_of(getattr(core_cls, attr))
        # Cython's read-only attributes are descriptors without a docstring.
        core_attr = getattr(core_cls, attr)
        if attr == "_check" or (inspect.isdatadescriptor(core_attr) and not core_doc
                                and not isinstance(core_attr, property)):
            continue
        assert core_doc == pure_doc, f"{name}.{attr}"


def test_state_and_reason_strings_are_the_twins():
    core = compiled_module()
    s = core.Scheduler()
    s.schedule("a", 0.0, 0, print)
    assert s.state("a") == scheduler_spec.PENDING
    task = s.next(now=0.0)
    assert task.state == scheduler_spec.RUNNING and s.state("a") == scheduler_spec.RUNNING
    s.release(task)
    assert task.state == scheduler_spec.CANCELLED
    q = core.StableBoundedPriorityQueue(1)
    assert q.push_or_evict(0, "x") is None
    assert q.push_or_evict(0, "y").reason == queue_spec.CAPACITY
