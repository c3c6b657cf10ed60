"""No module of pysched reaches into another module's private attributes.

The rule, checked on the source of every module of the package:

- ``expr._name`` (one leading underscore, not a dunder) is allowed when
  ``expr`` is ``self``, ``cls`` or ``super()``, or when a class of this same
  module owns ``_name``: it binds it in its body (a method, a class
  attribute with a value, an entry of ``__slots__``), or one of the
  module's functions sets it on ``self``/``cls``. Setting ``other._name``
  does not make a module the owner: that is the very access the rule is
  about. A bare annotation (a Protocol's field) declares a name without
  owning it, and a module-level name is the module's own, not an attribute
  of anything else.
- ``from module import _name`` is allowed only for a module of the package
  (``from .. import _impl``), never for another module's private name.

Standard-library names that are private by spelling but are the only way to
do something are listed in ``ALLOWED`` with the reason; a named tuple's
methods (``_replace``, ``_asdict``...) are its documented API.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "pysched"

# (module path under pysched/, expression, attribute): why it is allowed.
ALLOWED = {
    ("pool/threads.py", "threading", "_register_atexit"):
        "joins pool threads before the interpreter finalizes, as ThreadPoolExecutor does;"
        " atexit runs too late for that and there is no public hook",
    ("cli/worker.py", "os", "_exit"): "documented: exit without running cleanup handlers",
}
# A named tuple's documented API, spelled with an underscore so as not to clash with fields.
NAMEDTUPLE_API = {"_asdict", "_field_defaults", "_fields", "_make", "_replace"}

# Parts checked one by one, so that a failure names the part.
PARTS = sorted({p.relative_to(PACKAGE).parts[0] for p in PACKAGE.glob("*/__init__.py")}
               | {"(top level)"})


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _owned(tree: ast.Module) -> set[str]:
    """The private names this module owns (see the module docstring)."""
    owned: set[str] = set()

    def bind(target: ast.expr, class_body: bool) -> None:
        if isinstance(target, ast.Name) and class_body:
            owned.add(target.id)
        elif (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
              and target.value.id in ("self", "cls")):
            owned.add(target.attr)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                bind(element, class_body)

    def visit(node: ast.AST, class_body: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                if class_body:  # a method or a nested class: an attribute of the class
                    owned.add(child.name)
                visit(child, isinstance(child, ast.ClassDef))
                continue
            if isinstance(child, ast.Assign):
                for target in child.targets:
                    bind(target, class_body)
                    if (class_body and isinstance(target, ast.Name)
                            and target.id == "__slots__"):
                        owned.update(_strings(child.value))
            elif isinstance(child, ast.AugAssign) or (
                    isinstance(child, ast.AnnAssign) and child.value is not None):
                bind(child.target, class_body)
            visit(child, False)

    visit(tree, False)
    return owned


def _strings(node: ast.expr) -> set[str]:
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return {e.value for e in node.elts
                if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    return set()


def _is_own(expr: ast.expr) -> bool:
    if isinstance(expr, ast.Name):
        return expr.id in ("self", "cls")
    return (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name)
            and expr.func.id == "super")


def _is_package_module(module: Path, level: int, source: str | None, name: str) -> bool:
    """Whether ``from <source> import <name>`` (``level`` dots) names a module of pysched."""
    if level:
        base = module.parent
        for _ in range(level - 1):
            base = base.parent
    elif source is not None and (source == "pysched" or source.startswith("pysched.")):
        base = PACKAGE.parent
    else:
        return False
    for part in (source or "").split(".") if source else ():
        base = base / part
    # a source module, a package, or the compiled core (its stub: _core.pyi)
    return any((base / f"{name}{suffix}").exists() for suffix in (".py", ".pyi", "/__init__.py"))


def violations(path: Path, source: str | None = None) -> Iterator[str]:
    """Each access of ``path`` (a module of pysched, or ``source`` as if it were that
    module) that breaks the rule, as ``file:line: text``."""
    tree = ast.parse(path.read_text() if source is None else source, str(path))
    owned = _owned(tree)
    rel = path.relative_to(PACKAGE).as_posix()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            if _is_own(node.value) or node.attr in owned or node.attr in NAMEDTUPLE_API:
                continue
            if (rel, ast.unparse(node.value), node.attr) in ALLOWED:
                continue
            yield f"{rel}:{node.lineno}: {ast.unparse(node)}"
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if _private(alias.name) and not _is_package_module(
                        path, node.level, node.module, alias.name):
                    source = "." * node.level + (node.module or "")
                    yield f"{rel}:{node.lineno}: from {source} import {alias.name}"


def part_of(path: Path) -> str:
    parts = path.relative_to(PACKAGE).parts
    return parts[0] if len(parts) > 1 else "(top level)"


def modules(part: str) -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if part_of(p) == part)


def test_every_module_is_in_a_part() -> None:
    assert {part_of(p) for p in PACKAGE.rglob("*.py")} <= set(PARTS)


@pytest.mark.parametrize("part", PARTS)
def test_no_private_access_across_modules(part: str) -> None:
    found = [v for path in modules(part) for v in violations(path)]
    assert not found, f"{len(found)} accesses to another module's private names:\n" + \
        "\n".join(found)


def test_the_rule_catches_what_it_is_about() -> None:
    """The checker flags a foreign private read, write and import, and allows the owner's."""
    module = PACKAGE / "pool" / "_rule_probe_never_written.py"
    source = (
        "from .future import _NO_KWARGS\n"
        "from .. import _impl\n"
        "class Owner:\n"
        "    __slots__ = ('_slot',)\n"
        "    _default = 1\n"
        "    def __init__(self):\n"
        "        self._mine = 1\n"
        "    def _helper(self, other):\n"
        "        return other._mine + other._slot + other._default + super()._x\n"
        "def f(fut, owner):\n"
        "    fut._state = 1\n"
        "    return fut._result, owner._helper(fut), _impl.Scheduler\n"
        "def _version(fut):\n"
        "    return fut._version\n"
    )
    found = sorted(violations(module, source), key=lambda v: int(v.split(":")[1]))
    assert found == [
        "pool/_rule_probe_never_written.py:1: from .future import _NO_KWARGS",
        "pool/_rule_probe_never_written.py:11: fut._state",
        "pool/_rule_probe_never_written.py:12: fut._result",
        "pool/_rule_probe_never_written.py:14: fut._version",
    ]

