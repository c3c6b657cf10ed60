"""What an installed pysched must carry: the expected core and its type information.

Run against a wheel (scripts/check_wheels.sh, cibuildwheel's test command),
these fail when the wheel lost its extension or its typing files. Set
PYSCHED_EXPECT_IMPLEMENTATION to ``cython`` or ``python`` to say which core the
install under test must select.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import pysched


def test_ships_type_information():
    package = Path(pysched.__file__).parent
    # py.typed lets type checkers read the installed package; the stub types the core.
    assert (package / "py.typed").is_file()
    assert (package / "_core.pyi").is_file()


@pytest.mark.skipif(not os.environ.get("PYSCHED_EXPECT_IMPLEMENTATION"),
                    reason="PYSCHED_EXPECT_IMPLEMENTATION not set")
def test_selects_the_expected_core():
    assert os.environ["PYSCHED_EXPECT_IMPLEMENTATION"] == pysched.IMPLEMENTATION, (
        f"pysched at {pysched.__file__} runs the {pysched.IMPLEMENTATION} core")
