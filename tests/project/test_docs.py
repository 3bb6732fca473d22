"""Every code block of docs/*.md runs here, so the documentation cannot rot (README.md's run in
``tests/project/test_readme.py``: each alone, in a fresh interpreter, as a reader runs them).

A page's blocks run in order, in one fresh working directory per page: ``python`` blocks in one
namespace (a block may use what an earlier block of its page defined), ``bash`` blocks line by
line in a shell (each line must exit 0).  An HTML comment right before a block steers it:

* ``<!-- docs-test: setup=NAME -->`` runs the fixture ``NAME`` below first (it writes the table
  the example talks about into the working directory: what a user already has);
* ``<!-- docs-test: spark -->`` marks the page as needing Spark (its test carries the ``spark``
  mark); the blocks before a page's first Spark block also run in a test of their own without the
  mark, so they run in CI's job without Spark too;
* ``<!-- docs-test: needs=MODULE[,MODULE] -->``: the block hands its rows to an optional package
  (pandas); where it is not installed (CI's oldest job) the page's test skips from that block
  on, saying which, after the blocks before it have run;
* ``<!-- docs-test: output -->`` before a ``text`` block: the block is what the last command of
  the ``bash`` block before it prints (stdout), line by line (trailing spaces aside; a line
  ``...`` stands for any number of lines; help is formatted 100 columns wide);
* ``<!-- docs-test: ci -->`` is for the README's Quickstart block only: ``.ci/run`` runs those two
  commands itself (jobs quickstart-1 and quickstart-2, each in a fresh virtualenv); here the
  block is checked to be the one ``.ci/run`` extracts.

``docs/benchmarks.md`` is the generated benchmark report (``paimon-fast bench``) and holds no
examples.
"""

from __future__ import annotations

import contextlib
import io
import linecache
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests.support.paths import ROOT
from tests.support.docblocks import blocks, skip_unless_spark

PAGES = sorted(p for p in (ROOT / "docs").glob("*.md") if p.name != "benchmarks.md")


def _first_spark_block(page: Path):
    return next((i for i, (_, _, d) in enumerate(blocks(page)) if "spark" in d), None)


def _params():
    """(page, how many of its blocks to run or None for all): every page whole (Spark pages with the
    ``spark`` mark), and the part of a Spark page before its first Spark block without it."""
    out = []
    for page in PAGES:
        name = str(page.relative_to(ROOT))
        first = _first_spark_block(page)
        if first is None:
            out.append(pytest.param(page, None, id=name))
            continue
        out.append(pytest.param(page, None, id=name, marks=[pytest.mark.spark]))
        if first > 0 and any(lang != "text" for lang, _, _ in blocks(page)[:first]):
            out.append(pytest.param(page, first, id=f"{name}:before-spark"))
    return out


# ---------------------------------------------------------------- fixtures a block can ask for


def setup_events(cwd: Path, request=None):
    """``events/``: a small partitioned Parquet dataset (``paimon-fast sample parquet events``)."""
    from paimon_fast.samples import generate_sample

    generate_sample(str(cwd / "events"), 20_000, 4)


def setup_warehouse(cwd: Path, request=None):
    """``warehouse/`` with ``db.orders`` and ``db.items`` (``paimon-fast sample paimon warehouse``)."""
    pytest.importorskip("pypaimon")
    from paimon_fast.samples import sample_paimon

    sample_paimon(str(cwd / "warehouse"))


def setup_trips(cwd: Path, request=None):
    """``trips/``: a copy-on-write Hudi table (``paimon-fast sample hudi trips``)."""
    pytest.importorskip("hudi")
    from paimon_fast.samples import sample_hudi

    sample_hudi(str(cwd / "trips"))


def setup_s3(cwd: Path, request):
    """A local S3 server (moto, on 127.0.0.1) as the environment's S3 endpoint, with a bucket
    ``bucket`` holding the ``events/`` dataset: what a user's own store and credentials give."""
    from tests.support.s3_support import KEY, REGION, SECRET, S3Server

    srv = S3Server()
    request.addfinalizer(srv.stop)
    mp = request.getfixturevalue("monkeypatch")
    for k, v in {
        "AWS_ENDPOINT_URL": srv.endpoint_url,
        "AWS_ACCESS_KEY_ID": KEY,
        "AWS_SECRET_ACCESS_KEY": SECRET,
        "AWS_REGION": REGION,
    }.items():
        mp.setenv(k, v)
    srv.client.create_bucket(Bucket="bucket")
    setup_events(cwd / "s3")
    srv.upload_dir(str(cwd / "s3" / "events"), "bucket", "events")


def setup_indexed(cwd: Path, request=None):
    """``events/`` with file indexes, built in-process (``paimon-fast sample parquet events
    --indexed``: the bytes ``paimon-fast build`` writes on Spark)."""
    from paimon_fast.samples import SAMPLE_INDEXES
    from paimon_fast.tables import ParquetDataset

    setup_events(cwd)
    ParquetDataset(str(cwd / "events")).build(SAMPLE_INDEXES)


SETUPS = {
    "events": setup_events,
    "indexed": setup_indexed,
    "warehouse": setup_warehouse,
    "trips": setup_trips,
    "s3": setup_s3,
}


# ---------------------------------------------------------------- the test


@pytest.mark.parametrize("page, upto", _params())
def test_page_examples_run(page, upto, tmp_path, monkeypatch, request):
    found = blocks(page)
    for lang, _, _ in found:
        assert lang in ("python", "bash", "text"), f"{page.name}: a ```{lang} block (use python, bash or text)"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "100")  # the width help is shown at
    namespace = {"__name__": "__docs__"}
    last_output = None
    for i, (lang, code, directives) in enumerate(found[:upto]):
        where = f"{page.relative_to(ROOT)} block {i + 1}"
        if "output" in directives:
            assert lang == "text" and last_output is not None, f"{where}: an output block follows a bash block"
            _check_output(code, last_output, where)
            continue
        if "ci" in directives or lang == "text":
            continue
        for module in filter(None, directives.get("needs", "").split(",")):
            # an optional package the block hands its rows to (CI's oldest job has no pandas);
            # the blocks before it have run, the rest of the page runs where it is installed
            pytest.importorskip(module, reason=f"{where} needs {module}, which is not installed")
        if "spark" in directives:
            # a Spark block: without pyspark or Java (`pip install ".[test]"` alone) the page's test
            # skips from the first one on, saying why, after the blocks before it have run
            skip_unless_spark(where)
        if "setup" in directives:
            SETUPS[directives["setup"]](tmp_path, request)
        if lang == "python":
            linecache.cache[where] = (len(code), None, code.splitlines(True), where)  # tracebacks show the doc's lines
            exec(compile(code, where, "exec"), namespace)
        else:
            last_output = _run_bash(code, tmp_path, where)


def _check_output(expected: str, got: str, where: str):
    """``got`` line by line against ``expected``, where a line ``...`` matches any lines and ``...``
    within a line any text (a figure that depends on the pyarrow release writing the sample, say)."""

    def norm(text):
        return [ln.rstrip().replace("optional arguments:", "options:") for ln in text.rstrip("\n").splitlines()]

    want, have = norm(expected), norm(got)

    def match(i, j):
        if i == len(want):
            return j == len(have)
        if want[i] == "...":
            return any(match(i + 1, k) for k in range(j, len(have) + 1))
        return j < len(have) and same(want[i], have[j]) and match(i + 1, j + 1)

    def same(w, h):
        if "..." not in w:
            return w == h
        return re.fullmatch(".*".join(re.escape(p) for p in w.split("...")), h) is not None

    assert match(0, 0), f"{where}: the output shown is not what the command prints:\n" + "\n".join(have)


_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")


def _cli_argv(line: str):
    """The arguments of a plain ``paimon-fast ...`` line (no pipes, redirections, globs or
    variables outside quotes), or None for a line only a shell can run."""
    bare = _QUOTED.sub("", line).split("#", 1)[0]
    if not line.startswith("paimon-fast ") or any(c in bare for c in "|&;<>()$`*?[]{}!~\\"):
        return None
    return shlex.split(line, comments=True)[1:]


def _run_cli(argv, where: str, line: str):
    """A ``paimon-fast`` line run through ``paimon_fast.cli.main`` in this process: the same parser
    and commands as the console script (which CI's first Quickstart line runs as a program), without
    a new Python and a new JVM per line; the Spark session of the tests is reused."""
    from paimon_fast import cli

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = cli.main(argv)
        except SystemExit as e:  # argparse errors, and --help (exit 0)
            rc = e.code
    assert rc in (0, None), f"{where}: `{line}` exited {rc}\n{out.getvalue()[-2000:]}\n{err.getvalue()[-2000:]}"
    return out.getvalue()


def _run_bash(code: str, cwd: Path, where: str) -> str:
    """Run a bash block line by line; returns what its last command printed on stdout."""
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    last = ""
    for line in code.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        argv = _cli_argv(line)
        if argv is not None:
            last = _run_cli(argv, where, line)
            continue
        if line.startswith("paimon-fast ") and shutil.which("paimon-fast", path=env["PATH"]) is None:
            line = f"{sys.executable} -m paimon_fast.cli " + line[len("paimon-fast ") :]
        r = subprocess.run(
            ["bash", "-e", "-o", "pipefail", "-c", line], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
        )
        assert r.returncode == 0, f"{where}: `{line}` exited {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}"
        last = r.stdout
    return last


def test_quickstart_block_is_what_ci_runs():
    """The README's Quickstart holds exactly two commands, and ``.ci/run`` runs them as written."""
    quick = [b for b in blocks(ROOT / "README.md") if "ci" in b[2]]
    assert len(quick) == 1, "README.md needs one Quickstart block marked <!-- docs-test: ci -->"
    lines = [ln for ln in quick[0][1].splitlines() if ln.strip()]
    assert len(lines) == 2
    ci = (ROOT / ".ci" / "run").read_text()
    assert "quickstart_line 1" in ci and "quickstart_line 2" in ci
    # .ci/run takes the Nth non-empty line of the first fenced block after "## Quickstart"
    text = (ROOT / "README.md").read_text()
    after = text[text.index("## Quickstart") :]
    first_block = after[after.index("```") :].split("\n", 1)[1].split("```", 1)[0]
    assert [ln for ln in first_block.splitlines() if ln.strip()] == lines
