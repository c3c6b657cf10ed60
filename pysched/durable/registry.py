"""References that name work across restarts: registered names and ``module:function``.

A durable schedule cannot store a callable, only a name that the process
reading it back can turn into the same callable. Two kinds of names:

- a registered name: ``@registry.task`` (or ``register(fn, name=...)``) maps
  it to the function in this process; the module that registers it must be
  imported by every worker before it starts (as with Celery's ``include``).
  Without ``name=`` it is the function's ``module:qualname``, checked when it
  is first stored (``reference``): a decorator runs before its module binds
  the name, so importing it cannot give the function back until then;
- ``module:qualname`` of a function, resolved by importing the module, but
  only when the module is in ``allowed_modules`` and the object found is a
  Python function whose own ``__module__`` and ``__qualname__`` are exactly
  the reference: a row in a shared database is data, and importing and calling
  whatever it names would hand that database's writers this process
  (``os:system`` is importable, and ``myapp:os.system`` reaches it through
  any allowed module that imports os).

A registered name also carries the task's queue and retry policy
(``options``); ``serves`` says which rows a worker with this registry claims.

Invariant: ``reference(fn)`` returns a name only if ``resolve(name)`` in this
process returns ``fn`` itself, so every stored reference can be run back at
the time it was stored. Lookups are O(1) dict reads; an import happens once
per module (``sys.modules`` caches it).
"""

from __future__ import annotations

import importlib
import re
import threading
import types
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple, TypeVar

from .errors import NotDurable, UnknownTask
from .retry import Retry
from .store import DEFAULT_QUEUE, Serves, check_key

F = TypeVar("F", bound=Callable[..., Any])

# A module path and a dotted qualified name, with no "<lambda>" or "<locals>".
_IMPORT_REF = re.compile(r"^([A-Za-z_][\w.]*):([A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*)$")

__all__ = ["REGISTRY", "TaskOptions", "TaskRegistry", "task"]


class TaskOptions(NamedTuple):
    """How a registered task is scheduled and run."""

    queue: str
    retry: Retry | None


_DEFAULTS = TaskOptions(DEFAULT_QUEUE, None)


class TaskRegistry:
    """Maps stored references to callables and callables to references.

    >>> registry = TaskRegistry()
    >>> @registry.task(name="greet")
    ... def greet(who):
    ...     return f"hello {who}"
    >>> registry.reference(greet)
    'greet'
    >>> registry.resolve("greet")("you")
    'hello you'
    >>> registry.reference(lambda: None)
    Traceback (most recent call last):
    ...
    pysched.durable.errors.NotDurable: fn is a lambda: ...

    Thread-safe: registration takes a lock; lookups read dicts, which is safe
    under the GIL and on free-threaded builds (dict reads are atomic there).
    """

    def __init__(self, *, allowed_modules: Iterable[str] = ()) -> None:
        self._lock = threading.Lock()
        self._by_name: dict[str, Callable[..., Any]] = {}
        self._name_of: dict[Callable[..., Any], str] = {}
        self._options: dict[str, TaskOptions] = {}
        # Names taken from module:qualname at registration, not yet shown to import back
        # to their function: ``reference`` checks each once, when it is first stored.
        self._unchecked: set[str] = set()
        self.allowed_modules: tuple[str, ...] = tuple(allowed_modules)

    def register(self, fn: F, name: str | None = None, *, queue: str | None = None,
                 retry: Retry | None = None) -> F:
        """Register ``fn`` under ``name`` (default ``module:qualname``) and return it.

        The default name is read from ``fn`` itself, so ``@task`` works on a
        function whose module is still being imported; a lambda, a nested
        function or one in ``__main__`` has none (NotDurable). That importing
        the name gives ``fn`` back is checked at its first ``reference``, once
        the module is imported.

        ``queue`` is where its versions go unless ``schedule(..., queue=)`` says
        otherwise (default ``"default"``); ``retry`` its policy for failures
        (default: none, a failure is final). Registering the same function under
        the same name again is a no-op (its options are replaced); a name
        already taken by another function raises ValueError.
        """
        if queue is not None:
            check_key(queue, "queue")
        if retry is not None and not isinstance(retry, Retry):
            raise TypeError(f"retry must be a Retry, not {type(retry).__name__}")
        if not callable(fn):
            raise TypeError(f"fn must be callable, not {type(fn).__name__}")
        default = name is None
        if name is None:
            name = _qualified_name(fn)
            if name is None:
                raise NotDurable(_why_not_durable(fn) + "; pass name= to register it")
        if check_key(name, "name") == "":
            raise ValueError("name must be a non-empty str")
        with self._lock:
            old = self._by_name.get(name)
            if old is not None and old is not fn:
                raise ValueError(f"task name {name!r} is already registered to {old!r}")
            self._by_name[name] = fn
            self._name_of.setdefault(fn, name)
            self._options[name] = TaskOptions(queue or DEFAULT_QUEUE, retry)
            if default and old is None:
                self._unchecked.add(name)
            elif not default:
                self._unchecked.discard(name)  # a name given is the caller's to keep
        return fn

    def task(self, fn: F | None = None, *, name: str | None = None, queue: str | None = None,
             retry: Retry | None = None) -> Any:
        """Decorator form of ``register``: ``@registry.task`` or
        ``@registry.task(name="x", queue="mail", retry=Retry(5))``."""
        if fn is None:
            return lambda f: self.register(f, name, queue=queue, retry=retry)
        return self.register(fn, name, queue=queue, retry=retry)

    def options(self, ref: str) -> TaskOptions:
        """The queue and retry policy of a stored reference (defaults if unregistered)."""
        return self._options.get(ref, _DEFAULTS)

    def serves(self, queues: Iterable[str] | None = None) -> Serves:
        """What a worker with this registry can run: its registered names, the
        ``module:function`` references of its allowed modules, in ``queues``
        (None: every queue). Claims take only such rows."""
        prefixes = tuple(p for m in self.allowed_modules for p in (m + ":", m + "."))
        return Serves(tuple(self._by_name), prefixes,
                      None if queues is None else tuple(queues))

    def reference(self, fn: Any) -> str:
        """The stored name of ``fn``, or NotDurable saying why it has none.

        A registered function gives its registered name; an unregistered
        module-level function gives ``module:qualname`` if its module is
        allowed. Lambdas, nested functions, bound methods and other objects
        are refused: they cannot be found again after a restart.
        """
        if not callable(fn):
            raise TypeError(f"fn must be callable, not {type(fn).__name__}")
        name = self._name_of.get(fn) if _hashable(fn) else None
        if name is not None:
            if name in self._unchecked:
                self._check_import_name(fn, name)
            return name
        name = _import_name(fn)
        if name is None:
            raise NotDurable(_why_not_durable(fn) + "; register it with "
                             "pysched.durable.task(name=...) or use a module-level function")
        if not self._module_allowed(name.partition(":")[0]):
            raise NotDurable(
                f"fn {name} is not registered and its module is not in allowed_modules "
                f"{self.allowed_modules!r}: decorate it with @pysched.durable.task or allow "
                "its module, so that a worker can run it after a restart")
        return name

    def _check_import_name(self, fn: Callable[..., Any], name: str) -> None:
        """Raise NotDurable unless importing ``name``, the default name ``fn`` was registered
        under, gives ``fn`` back (after that, never check it again)."""
        if _import_name(fn) != name:
            raise NotDurable(
                f"fn was registered as {name}, but importing that name does not give it back"
                " (the name is bound to something else, such as another decorator's wrapper,"
                " or the module cannot be imported by that name): pass name= to register it")
        with self._lock:
            self._unchecked.discard(name)

    def resolve(self, ref: str) -> Callable[..., Any]:
        """The callable named by ``ref``, or UnknownTask saying why there is none."""
        if not isinstance(ref, str):
            raise UnknownTask(f"task reference must be a str, got {type(ref).__name__}")
        fn = self._by_name.get(ref)
        if fn is not None:
            return fn
        match = _IMPORT_REF.match(ref)
        if match is None or not self._module_allowed(match.group(1)):
            raise UnknownTask(f"unknown task {ref!r}: not registered in this process"
                              + ("" if match is None else
                                 f" and module {match.group(1)!r} is not in allowed_modules"))
        module_name, qualname = match.groups()
        try:
            obj: Any = importlib.import_module(module_name)
            for part in qualname.split("."):
                obj = getattr(obj, part)
        except (ImportError, AttributeError) as exc:
            raise UnknownTask(f"unknown task {ref!r}: {exc}") from exc
        fn = self._by_name.get(ref)  # importing the module may have registered it
        if fn is not None:
            return fn
        why = _not_defined_as(obj, module_name, qualname)
        if why is not None:
            raise UnknownTask(f"task {ref!r} refused: {why}")
        return obj  # type: ignore[no-any-return]

    def _module_allowed(self, module: str) -> bool:
        return any(module == m or module.startswith(m + ".") for m in self.allowed_modules)


def _hashable(fn: Any) -> bool:
    try:
        hash(fn)
    except TypeError:
        return False
    return True


def _qualified_name(fn: Any) -> str | None:
    """``module:qualname`` of a Python function, as the function itself says, or None
    where that cannot name it after a restart (a lambda, a nested function, ``__main__``)."""
    if not isinstance(fn, types.FunctionType):
        return None
    module, qualname = fn.__module__, fn.__qualname__
    if not isinstance(module, str) or module == "__main__":
        return None
    name = f"{module}:{qualname}"
    return name if _IMPORT_REF.match(name) is not None else None


def _import_name(fn: Any) -> str | None:
    """``module:qualname`` if importing it gives back ``fn`` itself, else None."""
    name = _qualified_name(fn)
    if name is None:
        return None
    module, _, qualname = name.partition(":")
    try:
        obj: Any = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError):
        return None
    return name if obj is fn else None


def _not_defined_as(obj: Any, module: str, qualname: str) -> str | None:
    """Why ``obj`` is not a plain function defined as ``module:qualname``, or None if it is.

    What a getattr chain reaches is not what the module defines: ``myapp:os.system``
    reaches the os module's function through an import in myapp, a class would be
    instantiated, a builtin or a bound method belongs to something else. Only a
    Python function whose own ``__module__`` and ``__qualname__`` are the reference
    may run.
    """
    if not isinstance(obj, types.FunctionType):
        return f"it names a {type(obj).__name__}, not a function defined in {module}"
    if obj.__module__ != module or obj.__qualname__ != qualname:
        return (f"it names {obj.__module__}:{obj.__qualname__}, a function defined elsewhere"
                f" than {module}:{qualname}")
    return None


def _why_not_durable(fn: Any) -> str:
    qualname = getattr(fn, "__qualname__", "")
    if getattr(fn, "__name__", None) == "<lambda>":
        return "fn is a lambda: a durable schedule stores work by name, and a lambda has none"
    if "<locals>" in qualname:
        return (f"fn {qualname} is defined inside a function: it cannot be found by name"
                " after a restart")
    if getattr(fn, "__module__", None) == "__main__":
        return f"fn {qualname} lives in __main__, which a worker process cannot import by name"
    return f"fn {fn!r} cannot be found again by an importable name"


# The default registry: pysched.durable.task registers here, and schedulers use
# it unless given their own.
REGISTRY = TaskRegistry()
task = REGISTRY.task
