"""The test suite's own layout (docs/testing.md, "Where the tests live"): test files sit in packages
that mirror the product's, import what they share from ``tests.support`` and never from one another,
and no helper is defined twice."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

from tests.support.paths import TESTS

#: directories under tests/ that hold no Python modules of the suite
NOT_CODE = {"data", "java"}


def _modules() -> list[Path]:
    return sorted(p for p in TESTS.rglob("*.py") if not NOT_CODE & set(p.relative_to(TESTS).parts))


@functools.lru_cache(maxsize=None)
def _tree(p: Path) -> ast.Module:
    """A module of the suite, parsed once a session (two tests read all of them)."""
    return ast.parse(p.read_text(), str(p))


def _is_test_module(p: Path) -> bool:
    return p.name.startswith("test_")


def test_test_files_sit_in_packages_below_tests():
    """Every test file is in a subdirectory of tests/ (the one that mirrors what it tests), and every
    directory of the suite is a package: its modules are ``tests.<dir>.<file>``, and no directory of
    tests/ becomes a top-level name (tests/hudi would otherwise pass for the hudi package where it
    is not installed)."""
    loose = [p.name for p in TESTS.glob("test_*.py")]
    assert loose == [], f"test files directly in tests/: {loose}"
    dirs = {p.parent for p in _modules()}
    assert {d for d in dirs if not (d / "__init__.py").exists()} == set()
    assert (TESTS / "support" / "__init__.py").exists()


def _imported_modules(tree: ast.AST) -> list[str]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out += [node.module] + [f"{node.module}.{a.name}" for a in node.names]
    return out


def test_test_files_import_no_other_test_file():
    """What two test files share lives in tests/support; a test file imported by another would tie
    the importer to the other's module path (and run its module-level code a second time)."""
    found = []
    for p in _modules():
        for name in _imported_modules(_tree(p)):
            if name.split(".")[-1].startswith("test_") and (name.startswith("tests.") or "." not in name):
                found.append((str(p.relative_to(TESTS)), name))
    assert found == []


def _helpers(p: Path):
    """``(name, body)`` of each module-level function of a module that is not a test, its body
    as an AST dump without the docstring; bodies of one statement are left out (too small to be
    a copy worth sharing)."""
    for node in _tree(p).body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.name.startswith("test_"):
            continue
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]
        statements = sum(isinstance(n, ast.stmt) for b in body for n in ast.walk(b))
        if statements >= 2:
            yield node.name, ast.dump(ast.Module(body=body, type_ignores=[]), annotate_fields=False)


def duplicate_helpers(paths) -> dict:
    """``{body: [file:function, ...]}`` for every function body defined in more than one file."""
    seen: dict = {}
    for p in paths:
        for name, body in _helpers(p):
            seen.setdefault(body, []).append(f"{p.relative_to(TESTS) if p.is_relative_to(TESTS) else p}:{name}")
    return {b: where for b, where in seen.items() if len({w.split(":")[0] for w in where}) > 1}


def test_no_helper_is_defined_twice():
    """A helper copied into a second file (under its name or another) is defined once, in
    tests/support, and imported; helpers that differ keep their difference in a parameter or a
    name of their own."""
    dups = duplicate_helpers(_modules())
    assert dups == {}, sorted(dups.values())


def test_a_copied_helper_is_found(tmp_path):
    body = "def {}(c):\n    r = c['row_ids']\n    return list(r)\n"
    (tmp_path / "a.py").write_text(body.format("_rows"))
    (tmp_path / "b.py").write_text('"""b"""\n\n\n' + body.format("_row_ids"))
    (tmp_path / "c.py").write_text(body.format("_rows").replace("list(r)", "tuple(r)"))
    assert list(duplicate_helpers([tmp_path / "a.py", tmp_path / "b.py", tmp_path / "c.py"]).values()) == [
        [f"{tmp_path / 'a.py'}:_rows", f"{tmp_path / 'b.py'}:_row_ids"]
    ]
