"""The two implementations every ``impl`` test runs on: the compiled core and the pure twin.

``compiled_module()`` imports the core directly, so a broken build fails loudly
instead of testing Python twice. With PYSCHED_NO_EXTENSIONS set, as for a pure
install, there is no core to test.
"""

from __future__ import annotations

import importlib
import os
import types

# Each pure twin module lists its public names in __all__; the compiled core
# exports the same names.
PURE_MODULES = ["pysched._scheduler_py", "pysched._bounded_queue_py"]

NO_EXTENSIONS = bool(os.environ.get("PYSCHED_NO_EXTENSIONS"))


def pure_namespace() -> types.SimpleNamespace:
    names: dict[str, object] = {}
    for module_name in PURE_MODULES:
        module = importlib.import_module(module_name)
        names.update({name: getattr(module, name) for name in module.__all__})
    return types.SimpleNamespace(**names)


def compiled_module() -> types.ModuleType:
    return importlib.import_module("pysched._core")
