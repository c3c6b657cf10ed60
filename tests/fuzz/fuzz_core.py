"""Coverage-guided differential fuzzing of the core Scheduler with atheris.

Each input decodes (tests/fuzz/decode.py) to a sequence of operations, run on
the compiled core and the pure twin side by side (tests/fuzz/differential.py),
and then again to one rich in bursts of adversarial run times (spreads.py):
no crash, no hang, ``_check()`` after every step, identical outcomes. The pure
twin, the validators and the harness are instrumented, so the twin's branches
(which mirror the core's) guide the search.

    pip install atheris
    scripts/fuzz.sh 600          # ten minutes on the debug build (bounds checks on)

or by hand on the in-place build: ``cd tests && python -m fuzz.fuzz_core
NEW_CORPUS fuzz/corpus -max_total_time=600 -timeout=10`` (extra arguments go
to libFuzzer). A failing input is written as ``crash-*``: replay it with
``python -m fuzz.fuzz_core crash-...`` and, once fixed, move it into
fuzz/corpus/ so that tests/core/test_fuzz_core.py replays it in every run.
"""

from __future__ import annotations

import sys

import atheris

with atheris.instrument_imports(include=["pysched", "fuzz"]):
    import pysched._scheduler_py as pure

    from .decode import operations, spread_operations
    from .differential import run_differential

import pysched._core as compiled  # noqa: E402  # compiled: nothing to instrument


def test_one_input(data: bytes) -> None:
    run_differential(compiled, pure, list(operations(data)))
    # The same bytes again, as bursts of adversarial run times among the operations.
    run_differential(compiled, pure, list(spread_operations(data)))


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
