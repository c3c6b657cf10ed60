"""Every option of ``python -m pysched.bench`` that the docs use is listed by its --help."""

from __future__ import annotations

import re
from pathlib import Path

from pysched.bench.__main__ import parser

ROOT = Path(__file__).resolve().parents[2]


def documented_options() -> set[str]:
    """The ``--options`` given to ``python -m pysched.bench`` in the README and docs/."""
    found = set()
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for command in re.findall(r"python -m pysched\.bench\b[^`\n]*", doc.read_text()):
            found.update(re.findall(r"(?<![\w-])--[a-z][a-z-]*", command))
    return found


def test_the_docs_use_options():
    assert {"--full", "--only", "--sections"} <= documented_options()


def test_every_documented_option_is_in_the_help():
    shown = parser().format_help()
    for option in sorted(documented_options()):
        assert re.search(rf"^\s+{re.escape(option)}\b", shown, re.MULTILINE), option
