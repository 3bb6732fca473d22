"""The linters CI's first job runs (tools/lint.sh: ruff check, ruff format --check, cython-lint)
pass on the tree and catch a planted mistake: an unused import in a module, in a kernel."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from tests.support.paths import ROOT

LINT = ROOT / "tools" / "lint.sh"


def lint(where: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(LINT), str(where)], capture_output=True, text=True, timeout=300)


def test_the_tree_is_clean():
    r = lint(ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "lint: clean" in r.stdout


def _small_tree(tmp_path: Path) -> Path:
    """pyproject.toml (the tools' configuration), one module and one kernel of the package."""
    kernels = ROOT / "paimon_fast" / "_kernels"
    if not kernels.is_dir():
        pytest.skip("the kernel sources are not here (the tests run from a copy beside an installed sdist)")
    (tmp_path / "paimon_fast" / "_kernels").mkdir(parents=True)
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    shutil.copy(ROOT / "paimon_fast" / "errors.py", tmp_path / "paimon_fast")
    shutil.copy(kernels / "bloom.pyx", tmp_path / "paimon_fast" / "_kernels")
    return tmp_path


def test_an_unused_import_fails(tmp_path):
    tree = _small_tree(tmp_path)
    assert lint(tree).returncode == 0  # the copy as it is: clean
    module = tree / "paimon_fast" / "errors.py"
    module.write_text("import os\n" + module.read_text())
    r = lint(tree)
    assert r.returncode != 0
    assert "F401" in r.stdout and "errors.py" in r.stdout


def test_an_unused_cimport_in_a_kernel_fails(tmp_path):
    tree = _small_tree(tmp_path)
    kernel = tree / "paimon_fast" / "_kernels" / "bloom.pyx"
    text = kernel.read_text()
    lines = text.splitlines(keepends=True)
    # after the module docstring and the directives: the first import line
    at = next(i for i, line in enumerate(lines) if line.startswith(("cimport ", "from ", "import ")))
    lines.insert(at, "from libc.string cimport strlen\n")
    kernel.write_text("".join(lines))
    r = lint(tree)
    assert r.returncode != 0
    assert "strlen" in r.stdout + r.stderr and "bloom.pyx" in r.stdout + r.stderr


def test_unformatted_code_fails(tmp_path):
    tree = _small_tree(tmp_path)
    module = tree / "paimon_fast" / "errors.py"
    module.write_text(module.read_text() + "\nx = {  'a':1 }\n")
    r = lint(tree)
    assert r.returncode != 0
    assert "would be reformatted" in r.stdout + r.stderr and "errors.py" in r.stdout
