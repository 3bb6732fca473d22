"""``paimon-fast demo``: what its help promises, and a small run on local Spark end to end."""

import os
import re

import pytest

import paimon_fast as pf
from paimon_fast import cli

pyspark = pytest.importorskip("pyspark")


def test_demo_help_says_what_it_does_and_how_long(capsys):
    with pytest.raises(SystemExit) as ei:
        cli.main(["demo", "--help"])
    assert ei.value.code == 0
    out = capsys.readouterr().out
    for kind in ("bloom filters", "a bitmap", "range bitmap", "bit-slice", "bitmap global"):
        assert kind in out
    assert re.search(r"about 1 minute", out) and "Java 17" in out


@pytest.mark.spark
def test_demo_small_run(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")  # the terminal's width: the demo's lines fit it
    out_dir = tmp_path / "demo"
    assert cli.main(["demo", "--rows", "20000", "--files", "4", "--dir", str(out_dir), "--master", "local[2]"]) == 0
    out, err = capsys.readouterr()
    assert max(len(ln) for ln in out.splitlines()) <= 100
    assert "WARN" not in out + err and "Warning" not in out + err  # Spark's start-up lines went to its log
    assert "starting local Spark (local[2], 2 cores)" in out
    # the predicates numbered, then their results by number
    listing = [ln for ln in out.splitlines() if re.match(r"^ [1-8]  \S", ln)]
    assert len(listing) == 8
    table = out[out.index("\n#  ") + 1 : out.index("where the files went")]
    lines = [ln for ln in table.splitlines()[2:] if ln.strip()]
    assert len(lines) == 8
    assert all(ln.rstrip().endswith("yes") for ln in lines)  # every indexed answer equals the plain scan
    # 'XX' is never generated: every file is skipped
    n = next(ln.split()[0] for ln in listing if "'XX'" in ln)
    xx = next(ln for ln in lines if ln.split()[0] == n)
    assert xx.split()[1] == "4/4"
    # every file index kind was written, in a file index container of each of the 4 data files,
    # all under _file_index/ (where no Parquet reader looks)
    kinds, n = {}, 0
    for dp, _, fs in os.walk(out_dir):
        for f in fs:
            if f.endswith(".index") and ".parquet." in f:  # <data file>.<hash of its bytes>.index
                assert os.path.relpath(dp, out_dir).split(os.sep)[0] == "_file_index"
                n += 1
                with pf.FileIndexFormat.open(os.path.join(dp, f), {}) as fi:
                    for col, metas in fi.index_metas().items():
                        for t in metas:
                            kinds.setdefault(t, set()).add(col)
    assert n == 4
    assert kinds == {
        "bloom-filter": {"id", "user_id", "country"},
        "bitmap": {"status"},
        "range-bitmap": {"amount"},
        "bsi": {"qty"},
    }
    assert os.path.isdir(out_dir / "_global_index" / "country")
    where = out[out.index("where the files went") :]
    for what in ("data", "file indexes", "bitmap global index", "dataset catalog"):
        assert what in where
