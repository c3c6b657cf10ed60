"""Every Python example in the README runs as written, in a fresh namespace."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
EXAMPLES = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def test_the_readme_has_examples() -> None:
    assert len(EXAMPLES) >= 5


@pytest.mark.parametrize("source", EXAMPLES, ids=[f"example{i}" for i in range(len(EXAMPLES))])
def test_a_readme_example_runs(source: str, capsys: pytest.CaptureFixture[str]) -> None:
    exec(compile(source, str(README), "exec"), {"__name__": "readme_example"})
