"""docs/calendar.md says which expressions are fixed-interval: the code must agree."""

from __future__ import annotations

import re
from pathlib import Path

from pysched.calendar import Cron

DOC = Path(__file__).resolve().parents[2] / "docs" / "calendar.md"


def _section(text: str, start: str, end: str) -> str:
    return text[text.index(start):text.index(end, text.index(start))]


def test_the_fixed_interval_lists_in_the_docs_match_the_code() -> None:
    text = DOC.read_text(encoding="utf-8")
    section = _section(text, "### Fixed-interval expressions", "At a clock change whose size")
    fixed_part, not_part = section.split("Not fixed-interval:")
    fixed = re.findall(r"`([^`]+)` \((\d+) (s|min|h)\)", fixed_part)
    assert len(fixed) >= 6
    for expr, amount, unit in fixed:
        assert Cron(expr).period == int(amount) * {"s": 1, "min": 60, "h": 3600}[unit], expr
    others = [e for e in re.findall(r"`([^`]+)`", not_part.split("`Cron(...).period`")[0])]
    assert len(others) >= 6
    for expr in others:
        assert Cron(expr).period is None, expr
