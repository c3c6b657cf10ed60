"""Coverage-guided differential fuzzing of the core StableBoundedPriorityQueue with atheris.

Each input decodes (tests/fuzz/decode.py, ``queue_operations``) to a capacity,
a tenant limit and operations, run on the compiled core and the pure twin side
by side (tests/fuzz/differential_queue.py). Run it as fuzz_core.py, or with
``FUZZ_TARGET=queue scripts/fuzz.sh 600``.
"""

from __future__ import annotations

import sys

import atheris

with atheris.instrument_imports(include=["pysched", "fuzz"]):
    import pysched._bounded_queue_py as pure

    from .decode import queue_operations
    from .differential_queue import run_queue_differential

import pysched._core as compiled  # noqa: E402  # compiled: nothing to instrument


def test_one_input(data: bytes) -> None:
    capacity, tenant_limit, ops = queue_operations(data)
    run_queue_differential(compiled, pure, capacity, tenant_limit, ops)


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
