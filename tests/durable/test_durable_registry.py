"""Task references: what can be stored, and what a stored name may resolve to."""

from __future__ import annotations

import pytest

from pysched.durable import NotDurable, TaskRegistry, UnknownTask
from pysched.durable.store import decode_args, encode_args

import support.durable as h


def plain(x: int) -> int:
    return x + 1


def test_registered_names_round_trip() -> None:
    registry = TaskRegistry()
    registry.register(plain, "plus-one")
    assert registry.reference(plain) == "plus-one"
    assert registry.resolve("plus-one") is plain
    registry.register(plain, "plus-one")  # the same pair again is a no-op
    with pytest.raises(ValueError, match="already registered"):
        registry.register(h.module_level_function, "plus-one")


def test_the_decorator_defaults_to_the_import_name() -> None:
    registry = TaskRegistry()
    decorated = registry.task(plain)
    assert decorated is plain
    assert registry.reference(plain) == "test_durable_registry:plain"


def test_unregistered_functions_need_an_allowed_module() -> None:
    closed = TaskRegistry()
    with pytest.raises(NotDurable, match="not in allowed_modules"):
        closed.reference(h.module_level_function)
    with pytest.raises(UnknownTask, match="not in allowed_modules"):
        closed.resolve("support.durable:module_level_function")
    opened = TaskRegistry(allowed_modules=["support.durable"])
    ref = opened.reference(h.module_level_function)
    assert ref == "support.durable:module_level_function"
    assert opened.resolve(ref)(4) == 8
    assert not opened._module_allowed("support.durable_evil")  # a prefix is not a package


@pytest.mark.parametrize("ref, message", [
    ("os:system", "not in allowed_modules"),  # a hostile row: importable, never allowed
    ("nothing-here", "not registered"),
    ("support.durable:missing", "has no attribute"),
    ("support.durable:CALLS", "names a list"),
    ("no_such_module_zz:f", "No module named"),
])
def test_resolve_refuses_with_the_reason(ref: str, message: str) -> None:
    registry = TaskRegistry(allowed_modules=["support.durable", "no_such_module_zz"])
    with pytest.raises(UnknownTask, match=message):
        registry.resolve(ref)
    with pytest.raises(UnknownTask, match="must be a str"):
        registry.resolve(7)  # type: ignore[arg-type]


def test_what_cannot_be_found_after_a_restart_is_refused() -> None:
    registry = TaskRegistry(allowed_modules=["support.durable", "builtins"])

    def nested() -> None:
        pass

    for fn, message in [(lambda: None, "lambda"), (nested, "inside a function"),
                        (h.wait_for.__call__, "cannot be found again")]:
        with pytest.raises(NotDurable, match=message):
            registry.reference(fn)
    with pytest.raises(NotDurable, match="lambda"):
        registry.register(lambda: None)  # no name to give it
    assert registry.register(lambda: 3, "three") is not None  # an explicit name is fine
    with pytest.raises(TypeError, match="callable"):
        registry.reference(3)
    assert isinstance(NotDurable("x"), TypeError)


def test_args_are_json_and_come_back_as_lists() -> None:
    text = encode_args((1, "a", [2.5, None]), {"k": {"n": True}})
    assert decode_args(text) == ([1, "a", [2.5, None]], {"k": {"n": True}})
    with pytest.raises(NotDurable, match="JSON"):
        encode_args([float("inf")], None)
    with pytest.raises(NotDurable, match="JSON"):
        encode_args([{1, 2}], None)
    with pytest.raises(TypeError, match="args must be a list or tuple"):
        encode_args("abc", None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="kwargs must be a dict"):
        encode_args([], [])  # type: ignore[arg-type]


@pytest.mark.parametrize("ref", [
    "support.durable:os.system",  # a builtin of another module, through an import
    "support.durable:subprocess.os.system",  # the same, two modules deep
    "support.durable:subprocess.run",  # a Python function of another module
    "support.durable:pytest.fail",
    "support.durable:alias_of_module_level_function",  # defined here, but under another name
    "support.durable:lambda_here",
    "support.durable:Holder",  # a class
    "support.durable:EVENTS.clear",  # a bound builtin method
    "support.durable:threading.Event",
    "support.durable:print",  # not an attribute, but guard the builtins too
])
def test_only_functions_defined_as_the_reference_resolve(ref: str) -> None:
    """A row writer must not reach beyond what the allowed module itself defines."""
    registry = TaskRegistry(allowed_modules=["support.durable"])
    with pytest.raises(UnknownTask, match="refused|has no attribute"):
        registry.resolve(ref)
    assert registry.resolve("support.durable:module_level_function") is h.module_level_function
    assert registry.resolve("support.durable:Holder.method") is h.Holder.method


def test_an_alias_is_not_a_reference() -> None:
    registry = TaskRegistry(allowed_modules=["support.durable"])
    assert registry.reference(h.alias_of_module_level_function) == (
        "support.durable:module_level_function")  # its own name, never the alias
    with pytest.raises(NotDurable):
        registry.reference(h.lambda_here)
