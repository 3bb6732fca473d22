"""Every Python example of README.md runs as a reader runs it: alone, in a fresh interpreter, in an
empty directory, after the shell commands the README shows before it (the Quickstart's install
aside: this environment is it).  Nothing is shared between examples but what those commands
write, so an example that needs a name, an import or a table the README does not give fails here.

A comment right before a block steers it, as in ``tests/project/test_docs.py``: ``<!-- docs-test:
spark -->`` (the example starts Spark: the ``spark`` mark, skipped without pyspark or Java) and
``<!-- docs-test: needs=MODULE[,MODULE] -->`` (skipped, saying which, where one is not installed:
CI's oldest job has no pandas, pypaimon or hudi).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.docblocks import blocks, skip_unless_spark
from tests.support.paths import ROOT

README = ROOT / "README.md"


def examples():
    """``(number, code, directives, shell lines before it)`` of each Python block of the README."""
    out, shell = [], []
    for lang, code, directives in blocks(README):
        if lang == "bash" and "ci" not in directives:
            shell += [ln.strip() for ln in code.splitlines() if ln.strip() and not ln.strip().startswith("#")]
        elif lang == "python":
            out.append((len(out) + 1, code, directives, list(shell)))
    return out


def _params():
    return [
        pytest.param(n, code, d, sh, id=f"example-{n}", marks=[pytest.mark.spark] if "spark" in d else [])
        for n, code, d, sh in examples()
    ]


def _env() -> dict:
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env.pop("PYTHONPATH", None)  # the installed package, as a reader has it
    env.pop("SPARK_MASTER", None)
    return env


def test_the_readme_has_its_examples():
    found = examples()
    assert len(found) >= 6
    # every table the examples read is made by a command the README shows
    shell = " ; ".join(found[-1][3])
    for table in ("parquet events", "paimon warehouse", "hudi trips"):
        assert f"paimon-fast sample {table}" in shell


_MADE: dict = {}  # the shell lines run so far -> a directory holding what they wrote


def _run_shell(lines, env, cwd):
    for line in lines:
        if line.startswith("paimon-fast ") and shutil.which("paimon-fast", path=env["PATH"]) is None:
            line = f"{sys.executable} -m paimon_fast.cli " + line[len("paimon-fast ") :]
        r = subprocess.run(["bash", "-e", "-c", line], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
        if r.returncode == 2 and 'pip install "paimon-fast[' in r.stderr:
            # an extra this environment lacks (CI's oldest job): the command says which, in one line
            pytest.skip(f"README: `{line}` needs what is not installed here: {r.stderr.strip()}")
        assert r.returncode == 0, f"README: `{line}` exited {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}"


def _prepare(shell, env, tmp_path, factory):
    """``tmp_path`` as the shell lines leave an empty directory: each line runs once per test
    session (each example's lines extend the earlier ones'), and what they wrote is copied."""
    key = tuple(shell)
    if key not in _MADE:
        done = max((k for k in _MADE if key[: len(k)] == k), key=len, default=())
        made = factory.mktemp("readme-shell")
        if done:
            shutil.copytree(_MADE[done], made, dirs_exist_ok=True)
        _run_shell(key[len(done) :], env, made)
        _MADE[key] = made
    shutil.copytree(_MADE[key], tmp_path, dirs_exist_ok=True)


@pytest.mark.parametrize("n, code, directives, shell", _params())
def test_readme_example_runs_alone(n, code, directives, shell, tmp_path, tmp_path_factory):
    for module in filter(None, directives.get("needs", "").split(",")):
        pytest.importorskip(module, reason=f"README example {n} needs {module}, which is not installed")
    if "spark" in directives:
        skip_unless_spark(f"README example {n}")
    env = _env()
    _prepare(shell, env, tmp_path, tmp_path_factory)
    script = Path(tmp_path) / f"readme_example_{n}.py"
    script.write_text(code)
    r = subprocess.run(
        [sys.executable, script.name], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert r.returncode == 0, f"README example {n} failed alone:\n{code}\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
