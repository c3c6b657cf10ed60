"""Names a package loads on first use (PEP 562), so that importing it stays cheap.

A package's ``__init__`` imports its public names under ``if TYPE_CHECKING:``,
for type checkers and IDEs, and at run time installs the ``__getattr__`` and
``__dir__`` this module builds: a name is imported from its module the first
time it is read, then kept in the package's namespace, so the hook runs once
per name. A submodule is an attribute once imported, as it was when the
package imported everything up front.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, MutableMapping


def lazy_exports(
    namespace: MutableMapping[str, object], exports: Mapping[str, str],
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """Return ``(__getattr__, __dir__)`` for the package whose globals are ``namespace``.

    ``exports`` maps each public name to the module, relative to the package,
    that defines it (``{"Cron": ".cron"}``).
    """
    package = str(namespace["__name__"])

    def __getattr__(name: str) -> object:
        if name in exports:
            value = getattr(importlib.import_module(exports[name], package), name)
        elif name.startswith("__"):  # probes such as __path__ or __wrapped__ are no submodules
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        else:
            try:
                value = importlib.import_module(f"{package}.{name}")
            except ModuleNotFoundError as exc:
                if exc.name != f"{package}.{name}":
                    raise  # the submodule exists but something it imports is missing
                raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        namespace[name] = value  # later reads find it without calling this hook
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *exports})

    return __getattr__, __dir__
