"""ParquetDataset.optimize (paimon_fast/tables/optimize.py; docs/datasets.md, "Optimize"): the rows
clustered across each partition's files, written with a page index, row-capped pages and
sorting_columns, the indexes rebuilt in the same commit, plain readers reading the same rows,
plans answering from the catalog's statistics, incremental runs; and the commit's guarantees:
SIGKILL at each step, forced interleavings, readers during an optimize and on an older snapshot,
gc, on local disk and on S3 (moto).

Every answer is compared with the oracle of optimize_support.py (pyarrow reads of the files as a
plain reader lists them), never with the product."""

import os
import signal
import subprocess
import sys
import threading
import traceback

import pyarrow.parquet as pq
import pytest

from paimon_fast.errors import DamagedFileError, DataFileChangedError, OptionError
from paimon_fast.tables import ParquetDataset, steps
from paimon_fast.tables.gc import collect
from paimon_fast.tables.optimize import OptimizeConflictError
from tests.support.optimize_support import (
    OPTIONS,
    WRITE,
    Place,
    answers,
    content,
    expected,
    plain_ids,
    ready,
    rows_now,
)
from tests.support.paths import ROOT

OPT_STEPS = [
    "optimize.snapshot",
    "optimize.partition",
    "optimize.file.written",
    "optimize.intent",
    "catalog.commit",  # the intent's commit (the first one the run makes)
    "optimize.intended",
    "optimize.published",
    "optimize.global_index",
    "optimize.commit",
    "optimize.committed",
    "optimize.retired",
]


@pytest.fixture
def local(tmp_path):
    return Place(str(tmp_path / "ds"))


def _footer_pages(path):
    """Per row group and column: the rows of each data page (the page index's OffsetIndex)."""
    from paimon_fast.io.parquet.footer import chunk_pages, _read_footer
    from paimon_fast.io.source import FileSource

    src = FileSource(path)
    fo = _read_footer(src)
    return [[chunk_pages(src, fo, g, c).rows.tolist() for c in range(fo.leaf_count)] for g in range(len(fo.row_groups))]


# ---------------------------------------------------------------- what is written


@pytest.mark.parametrize("strategy,by", [("order", ["x"]), ("zorder", ["x", "y"]), ("hilbert", ["x", "s"])])
def test_optimize_clusters_and_keeps_every_row(local, strategy, by):
    deleted = ready(local)
    want = expected(local, deleted)
    before_plain = rows_now(local)
    old_schema = pq.read_schema(local.join(local.data_files()[0]))
    ds = ParquetDataset(local.uri)
    rep = ds.optimize(by, strategy, compression="zstd", **WRITE)
    assert (rep.files_before, rep.partitions, rep.rows_deleted_dropped) == (6, 2, len(deleted))
    assert rep.rows == len(before_plain) - len(deleted) and rep.files_after > 2 and rep.bytes_after > 0
    assert rep.global_indexes == ["c"] and rep.catalog_version is not None
    # plain readers: the rows ours read before (deleted rows are not rewritten), the same schema
    assert plain_ids(local) == sorted(r["id"] for r in before_plain if r["id"] not in deleted)
    assert pq.read_table(local.path).num_rows == rep.rows
    files = local.data_files()
    assert all("/part-" in f for f in files) and {f.split("/")[0] for f in files} == {"p=a", "p=b"}
    entries = ParquetDataset(local.uri).read_catalog()["files"]
    for rel in files:
        assert pq.read_schema(local.join(rel)).equals(old_schema, check_metadata=True)
        md = local.metadata(rel)
        assert entries[rel]["row_groups"] == md.num_row_groups and entries[rel]["rows"] == md.num_rows
        rg = md.row_group(0)
        assert rg.column(0).compression == "ZSTD"
        assert all(rg.column(i).has_offset_index and rg.column(i).has_column_index for i in range(md.num_columns))
        assert md.num_rows <= 1024 and all(md.row_group(g).num_rows <= 256 for g in range(md.num_row_groups))
        assert all(max(col) <= 64 for grp in _footer_pages(local.join(rel)) for col in grp)  # row-capped pages
        if strategy == "order":
            assert rg.sorting_columns[0].column_index == old_schema.get_field_index("x")
            assert rg.sorting_columns[0].nulls_first and not rg.sorting_columns[0].descending
        else:
            assert not rg.sorting_columns  # a z-order or Hilbert order sorts by no column
    if strategy == "order":  # across each partition's files: sorted, nulls first
        for p in ("a", "b"):
            xs = []
            for rel in [f for f in files if f.startswith(f"p={p}/")]:
                xs += local.read(rel).column("x").to_pylist()
            nulls = sum(v is None for v in xs)
            assert xs[:nulls] == [None] * nulls and xs[nulls:] == sorted(xs[nulls:])
    got = answers(local.uri)
    assert got == want
    rep2 = ParquetDataset(local.uri).read("c = 'c3'").report
    assert rep2.files_without_index == 0 and rep2.index_errors == 0 and rep2.global_index_used == ["c"]


def test_duckdb_reads_the_same_rows(local):
    duckdb = pytest.importorskip("duckdb", reason="DuckDB is a plain reader of this test (frames extra)")
    from tests.support.optimize_support import make

    make(local)
    ParquetDataset(local.uri).build(OPTIONS)
    q = f"SELECT count(*), sum(id), sum(x), sum(y), count(DISTINCT s) FROM read_parquet('{local.path}/**/*.parquet')"
    before = duckdb.connect().sql(q).fetchall()
    ParquetDataset(local.uri).optimize(["x", "c"], "zorder", **WRITE)
    after = duckdb.connect().sql(q).fetchall()
    assert after[0][:3] == before[0][:3] and after[0][4] == before[0][4]
    assert after[0][3] == pytest.approx(before[0][3], rel=1e-12)  # (a float sum in another order)


def test_a_dataset_without_deletes_reads_the_same_multiset_everywhere(local):
    from tests.support.optimize_support import make

    make(local)
    ParquetDataset(local.uri).build(OPTIONS)
    before = plain_ids(local)
    ParquetDataset(local.uri).optimize(["x", "y"], "zorder", **WRITE)
    assert plain_ids(local) == before
    assert sorted(pq.read_table(local.path).column("id").to_pylist()) == before


def test_int96_and_decimal_types_are_kept(local):
    import decimal

    import pyarrow as pa

    t = pa.table(
        {
            "id": pa.array(range(300), pa.int64()),
            "ts": pa.array([1_700_000_000_000_000 + i * 1000 for i in range(300)], pa.timestamp("us")),
            "d": pa.array([decimal.Decimal(i) / 100 for i in range(300)], pa.decimal128(9, 2)),
        }
    )
    os.makedirs(local.path)
    pq.write_table(t, local.join("a.parquet"), use_deprecated_int96_timestamps=True, store_decimal_as_integer=True)
    before = pq.ParquetFile(local.join("a.parquet")).schema
    ParquetDataset(local.uri).optimize("id")
    (rel,) = local.data_files()
    after = pq.ParquetFile(local.join(rel)).schema
    assert [after.column(i).physical_type for i in range(3)] == [before.column(i).physical_type for i in range(3)]
    assert after.column(1).physical_type == "INT96" and after.column(2).physical_type == "INT32"
    assert local.read(rel).equals(pq.read_table(local.join(rel)))


def test_options_are_checked(local):
    ready(local, global_index=False)
    ds = ParquetDataset(local.uri)
    with pytest.raises(OptionError, match="compression"):
        ds.optimize("x", compression="lz4")
    with pytest.raises(OptionError, match="page_rows"):
        ds.optimize("x", page_rows=0)
    with pytest.raises(OptionError, match="two columns"):
        ds.optimize("x", "hilbert")
    from paimon_fast.errors import ColumnNotFoundError

    with pytest.raises(ColumnNotFoundError):
        ds.optimize("p")  # a partition column: constant in each partition
    with pytest.raises(OptionError, match="target_file_size"):
        ds.optimize("x", target_file_size=-1)
    # the defaults: files of the size of those rewritten, at least 8 MiB: each partition's three
    # small files become one, of one row group
    rep = ds.optimize("x")
    assert (rep.files_before, rep.files_after) == (6, 2)
    entries = ParquetDataset(local.uri).read_catalog()["files"]
    for rel in local.data_files():
        md = local.metadata(rel)
        assert md.num_row_groups == 1 and entries[rel]["row_groups"] == 1 and entries[rel]["rows"] == md.num_rows


def test_write_options_defaults():
    import io

    import numpy as np
    import pyarrow as pa

    from paimon_fast.tables.writer import WriteOptions, write_file

    mib = 1 << 20
    o = WriteOptions()
    assert o.target_for([1 * mib] * 3) == 8 * mib  # small files are merged
    assert o.target_for([20 * mib, 40 * mib]) == 30 * mib  # the mean of the files rewritten
    assert o.target_for([300 * mib]) == 128 * mib  # large ones split
    assert WriteOptions(target_file_size=5000).target_for([300 * mib]) == 5000
    # files rewritten at the default target come out as many as they went in, whatever the
    # mean's fraction (50 files of 435,081,397 bytes were cut into 51 when it was rounded down)
    from paimon_fast.tables.optimize_rewrite import file_cuts

    for sizes in ([8_701_627, 8_701_628, 8_701_628] * 5, [20 * mib, 40 * mib + 1], [9 * mib + 1] * 50):
        opts = WriteOptions()
        opts.target_file_size = opts.target_for(sizes)
        assert len(file_cuts(10_000_000, sum(sizes), opts)) == len(sizes), sizes
    # a dictionary page holds at most dictionary_bytes: past it the column falls back to plain pages
    rng = np.random.default_rng(5)
    t = pa.table(
        {"s": [f"{v:016x}" for v in rng.integers(0, 1 << 62, 30_000)], "c": [f"c{i % 5}" for i in range(30_000)]}
    )

    from paimon_fast.io.parquet.footer import _page_header

    def dictionary_pages(opts):  # each column's dictionary page, uncompressed bytes (the limit's unit)
        buf = io.BytesIO()
        write_file(buf, t, opts)
        data = buf.getvalue()
        rg = pq.ParquetFile(io.BytesIO(data)).metadata.row_group(0)
        return [
            _page_header(data, rg.column(i).dictionary_page_offset, len(data), 0)[3]
            if rg.column(i).has_dictionary_page
            else 0
            for i in range(2)
        ]

    s_small, c_small = dictionary_pages(WriteOptions())
    s_mid, _ = dictionary_pages(WriteOptions(dictionary_bytes=400_000))
    s_big, _ = dictionary_pages(WriteOptions(dictionary_bytes=1 << 20))
    assert s_small == 0  # its first 16,384 rows hold 320 KB of distinct values: no dictionary at all
    assert 0 < s_mid < 500_000 < s_big  # they fit: a dictionary up to the limit (checked after each write batch)
    assert 0 < c_small < 1000  # a column of few values keeps its dictionary


@pytest.mark.parametrize("limit", [64 << 10, 1 << 20])
def test_dictionaries_only_where_the_first_rows_fit_one(limit):
    """A column gets no dictionary when its first rows already hold more distinct values than a
    dictionary page takes; every other column (and every column of a nested schema) keeps
    pyarrow's; the rows read back the same."""
    import io

    import numpy as np
    import pyarrow as pa

    from paimon_fast.tables.writer import DICTIONARY_PROBE_ROWS, WriteOptions, dictionary_columns, write_file

    n = 3 * DICTIONARY_PROBE_ROWS
    rng = np.random.default_rng(11)
    late = np.zeros(n, np.int64)
    late[DICTIONARY_PROBE_ROWS:] = rng.integers(0, 1 << 40, n - DICTIONARY_PROBE_ROWS)  # distinct only later
    t = pa.table(
        {
            "id": np.arange(n),
            "x": rng.random(n),
            "s": [f"{v:016x}" for v in rng.integers(0, 1 << 62, n)],
            "c": [f"c{i % 5}" for i in range(n)],
            "q": rng.integers(0, 100, n).astype(np.int32),
            "late": late,
            "b": rng.random(n) > 0.5,
            "d": pa.array([f"d{i % 3}" for i in range(n)]).dictionary_encode(),
            "ts": pa.array(rng.integers(0, 1 << 50, n), pa.timestamp("us")),
            "dec": pa.array([i % 7 for i in range(n)], pa.decimal128(10, 2)),
        }
    )
    opts = WriteOptions(dictionary_bytes=limit)
    many = {"id", "x", "s", "ts"} if limit < (1 << 20) else set()  # (1 MiB: 16,384 of each fit)
    assert dictionary_columns(t, opts) == ([c for c in t.column_names if c not in many] if many else True)
    buf = io.BytesIO()
    write_file(buf, t, opts)
    buf.seek(0)
    f = pq.ParquetFile(buf)
    rg = f.metadata.row_group(0)
    has = {rg.column(i).path_in_schema: rg.column(i).has_dictionary_page for i in range(rg.num_columns)}
    assert {c for c, d in has.items() if not d} == many | {"b"}  # (booleans never have one)
    assert f.read().equals(t)
    nested = t.append_column("l", pa.array([[i] for i in range(n)]))
    assert dictionary_columns(nested, opts) is True
    assert dictionary_columns(t.rename_columns([*t.column_names[:-1], "a.b"]), opts) is True
    small = t.slice(0, 100)
    assert dictionary_columns(small, opts) is True


# ---------------------------------------------------------------- plans and incremental runs


def test_plan_skips_files_by_the_catalogs_statistics(local, monkeypatch):
    ready(local, global_index=False)
    ParquetDataset(local.uri).optimize("x", **WRITE)
    ds = ParquetDataset(local.uri)
    entries = ds.read_catalog()["files"]
    assert all({"x", "id", "c", "y"} <= set(e["stats"]) for e in entries.values())
    opened = []
    real_stats, real_index = ParquetDataset._file_stats, ParquetDataset.open_index
    monkeypatch.setattr(
        ParquetDataset, "_file_stats", lambda self, f, c: opened.append(f.path) or real_stats(self, f, c)
    )
    monkeypatch.setattr(
        ParquetDataset,
        "open_index",
        lambda self, f, e=None, **kw: opened.append(f.path) or real_index(self, f, e, **kw),
    )
    plan = ds.plan("x < 40")
    overlap = {p for p, e in entries.items() if e["stats"]["x"].get("min", 10**9) < 40}
    assert 0 < len(overlap) < len(entries)
    assert set(opened) <= overlap  # no footer, no index of a file the statistics exclude
    assert {p.file.path for p in plan.kept} <= overlap
    assert plan.report.files_skipped >= len(entries) - len(overlap)


def test_a_file_rewritten_after_the_optimize_loses_its_statistics_when_indexed_again(local):
    # the catalog's statistics of a file describe the version it recorded: a build that records
    # a new version of the file (rewritten in place) must not keep them, else a plan would skip
    # the new rows by the old bounds
    import pyarrow as pa

    ready(local, global_index=False)
    ParquetDataset(local.uri).optimize("x", **WRITE)
    ds = ParquetDataset(local.uri)
    rel, e = sorted(ds.read_catalog()["files"].items())[0]
    assert e["stats"]["x"]["max"] < 10**6 and e["clustered"]["by"] == ["x"]
    schema = pq.read_schema(local.join(rel))
    row = {n: [None] for n in schema.names}
    row.update(id=[10**7], x=[10**6])
    local.write(rel, pa.table(row, schema=schema))  # the same name, other rows
    ds.build(OPTIONS)
    assert ds.read(f"x = {10**6}").to_arrow().column("id").to_pylist() == [10**7]
    assert ds.read(f"x = {10**6}").count() == 1
    e = ds.read_catalog()["files"][rel]
    assert "clustered" not in e and e["rows"] == 1
    assert "x" not in e.get("stats", {}) or e["stats"]["x"]["max"] == 10**6


def test_pages_answer_a_clustered_column_before_its_index(local, monkeypatch):
    """After an optimize by ``x``, a narrow range of ``x`` is narrowed by the page index to a few
    pages of each file; where ``x`` has an index that answers exactly (a range bitmap), that file's
    index gives the exact rows of those boundary pages, else (a bloom filter) the pages are read
    and filtered.  A column the files are not clustered by is left to its index (its pages span
    every file's range)."""
    from tests.support.optimize_support import make

    make(local)
    ParquetDataset(local.uri).build({**OPTIONS, "file-index.range-bitmap.columns": "x,y"})
    # files of about 1,200 rows (one a partition), pages of 64 rows: the range keeps one or two pages
    ParquetDataset(local.uri).optimize("x", target_file_size=1 << 20, page_rows=64)
    ds = ParquetDataset(local.uri)
    opened, paged = [], []
    real_index, real_pages = ParquetDataset.open_index, ParquetDataset._page_answer
    monkeypatch.setattr(
        ParquetDataset,
        "open_index",
        lambda self, f, e=None, **kw: opened.append(f.path) or real_index(self, f, e, **kw),
    )

    def pages(self, f, leaf, t, sorted_only=False):
        got = real_pages(self, f, leaf, t, sorted_only)
        paged.append((leaf.name, got))
        return got

    monkeypatch.setattr(ParquetDataset, "_page_answer", pages)
    plan = ds.plan("x BETWEEN 500 AND 505")
    want = sorted(r["id"] for r in rows_now(local) if r["x"] is not None and 500 <= r["x"] <= 505)
    assert len(plan.kept) == 2 and len(paged) == 2
    assert all(n == "x" and p is not None for n, p in paged)
    # the boundary pages' files, and only they, had their index opened: exact rows, no filter
    assert sorted(opened) == sorted(p.file.path for p in plan.kept)
    assert all(p.exact for p in plan.kept) and sum(len(p.bitmap) for p in plan.kept) == len(want)
    assert sorted(ds.read("x BETWEEN 500 AND 505").to_arrow().column("id").to_pylist()) == want
    opened.clear(), paged.clear()
    ds.plan("y > 0.9")
    assert paged == [] and opened  # y: the index, no page index asked
    # x with a bloom filter only (no exact answer for a range): the pages, read and filtered
    ParquetDataset(local.uri).build({**OPTIONS, "file-index.bloom-filter.columns": "id,x"})
    ds = ParquetDataset(local.uri)
    opened.clear(), paged.clear()
    plan = ds.plan("x BETWEEN 500 AND 505")
    assert len(plan.kept) == 2 and len(paged) == 2 and not any(p.exact for p in plan.kept)
    assert all(0 < len(p.bitmap) <= 128 for p in plan.kept)  # one or two pages of each file
    assert sorted(ds.read("x BETWEEN 500 AND 505").to_arrow().column("id").to_pylist()) == want


def test_page_answer_sorted_only(tmp_path):
    import pyarrow as pa

    from paimon_fast.core.predicate import Leaf
    from paimon_fast.tables.pagestats import page_answer

    t = pa.table({"k": pa.array(range(4000), pa.int64())})
    leaf = Leaf("less_than", "k", (100,))
    plain, labelled = str(tmp_path / "plain.parquet"), str(tmp_path / "sorted.parquet")
    kw = dict(write_page_index=True, data_page_size=1, write_batch_size=500)
    pq.write_table(t, plain, **kw)
    pq.write_table(t, labelled, sorting_columns=[pq.SortingColumn(0)], **kw)
    assert page_answer(plain, "k", leaf, pa.int64()) == [(0, 500, False)]  # the first page
    assert page_answer(plain, "k", leaf, pa.int64(), sorted_only=True) is None  # the footer names no order
    assert page_answer(labelled, "k", leaf, pa.int64(), sorted_only=True) == [(0, 500, False)]


def test_incremental_runs_rewrite_only_new_files(local):
    deleted = ready(local)
    ParquetDataset(local.uri).optimize("x", **WRITE)
    after_first = set(local.data_files())
    assert ParquetDataset(local.uri).optimize("x", **WRITE).files_before == 0  # clustered already
    local.write("p=a/new.parquet", content(50))
    rep = ParquetDataset(local.uri).optimize("x", **WRITE)
    assert rep.files_before == 1 and rep.partitions == 1 and rep.files_kept == len(after_first)
    assert after_first <= set(local.data_files())
    assert answers(local.uri) == expected(local, deleted)
    rep = ParquetDataset(local.uri).optimize("x", full=True, partitions=lambda v: v["p"] == "b", **WRITE)
    assert rep.partitions == 1 and all(f.startswith("p=a/") for f in after_first & set(local.data_files()))
    rep = ParquetDataset(local.uri).optimize(["x", "y"], "zorder", **WRITE)  # another clustering: all again
    assert rep.files_kept == 0
    assert answers(local.uri) == expected(local, deleted)


# ---------------------------------------------------------------- the commit's guarantees

KILL = r"""
import os, signal, sys
sys.path.insert(0, sys.argv[4])
from paimon_fast.tables import ParquetDataset, steps
from tests.support.optimize_support import WRITE
uri, at, nth = sys.argv[1], sys.argv[2], int(sys.argv[3])
seen = []

def hook(name, ctx):
    if name == at:
        seen.append(name)
        if len(seen) == nth:
            os.kill(os.getpid(), signal.SIGKILL)

with steps.hook(hook):
    ParquetDataset(uri).optimize("x", **WRITE)
sys.exit(3)
"""


def _run_killed(place, at, nth=1):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    root = str(ROOT)
    r = subprocess.run(
        [sys.executable, "-c", KILL, place.uri, at, str(nth), root], env=env, capture_output=True, timeout=300
    )
    assert r.returncode == -signal.SIGKILL, r.stderr.decode()[-2000:]


def _killed(place, at):
    deleted = ready(place)
    want = expected(place, deleted)
    kept = sorted(ParquetDataset(place.uri).read(None).to_arrow().column("id").to_pylist())
    _run_killed(place, at)
    # our readers: the old state or the new one (the same rows), never both, nothing lost
    assert answers(place.uri) == want
    committed = at in ("optimize.committed", "optimize.retired")
    ds = ParquetDataset(place.uri)
    rep = ds.optimize("x", **WRITE)  # undoes (or finishes) the killed run, then does its work
    assert (rep.files_before == 0) == committed
    undone = at in ("optimize.intended", "optimize.published", "optimize.global_index", "optimize.commit")
    said = " ".join(rep.recovered)
    assert ("undid the optimize" in said) == undone
    assert ("moved away 6 file(s)" in said) == (at == "optimize.committed")
    assert answers(place.uri) == want
    assert plain_ids(place) == kept  # plain readers: every row once, the deleted ones gone
    collect(place.uri, delete=True, min_age=0)
    assert answers(place.uri) == want and plain_ids(place) == kept
    assert not collect(place.uri, min_age=0).orphans
    r = ParquetDataset(place.uri).read("c = 'c3'").report
    assert r.files_without_index == 0 and r.global_index_used == ["c"]


# a kill at these leaves the same files and catalog as one at the step after it (nothing is
# written between them): they run with the slow tests, their twins with every run
SAME_STATE_AS_NEXT = {"optimize.snapshot", "optimize.intent", "optimize.global_index"}


@pytest.mark.parametrize(
    "at", [pytest.param(a, marks=pytest.mark.slow) if a in SAME_STATE_AS_NEXT else a for a in OPT_STEPS]
)
def test_optimize_killed(local, at):
    _killed(local, at)


@pytest.mark.slow  # test_on_s3 kills a run on S3 too (at optimize.published); the local kills cover every step
@pytest.mark.parametrize("at", ["optimize.file.written", "optimize.committed"])
def test_optimize_killed_on_s3(s3_server, at):
    b = s3_server.new_bucket()
    _killed(Place(s3_server.uri(b, "ds"), s3_server.filesystem(), f"{b}/ds"), at)


def _interleave(place, at, what):
    """Run an optimize and, when it reaches ``at``, ``what`` to completion."""
    deleted = ready(place)
    before = expected(place, deleted)
    state = {}
    fired = []

    def hook(name, ctx):
        if name != at or fired:
            return
        fired.append(name)
        if what == "read":  # a reader of ours in the middle: the old rows or the new, the same answers
            state["read"] = answers(place.uri)
            if place.fs is None:
                state["plain"] = plain_ids(place)
        elif what == "delete":
            state["deleted"] = {r["id"] for r in rows_now(place) if r["id"] not in deleted and r["c"] == "c2"}
            ParquetDataset(place.uri).delete("c = 'c2'")
        elif what == "optimize":
            with pytest.raises(OptimizeConflictError):
                ParquetDataset(place.uri).optimize("x", **WRITE)
        elif what == "gc":
            collect(place.uri, delete=True)

    with steps.hook(hook):
        try:
            ParquetDataset(place.uri).optimize("x", **WRITE)
            state["ok"] = True
        except OptimizeConflictError as e:
            state["conflict"] = str(e)
    assert fired, f"step {at} was not reached"
    return deleted, before, state


READ_AT = ["optimize.partition", "optimize.intended", "optimize.published", "optimize.commit", "optimize.committed"]


@pytest.mark.parametrize("at", READ_AT)
def test_reads_during_an_optimize(local, at):
    deleted, before, state = _interleave(local, at, "read")
    assert state["read"] == before and state["ok"]
    assert answers(local.uri) == before
    if at in ("optimize.published", "optimize.commit", "optimize.committed"):
        # the window the docs name: plain readers listing the directory see the old and the new files
        assert len(state["plain"]) > len(plain_ids(local))


@pytest.mark.parametrize("at", ["optimize.partition", "optimize.intended", "optimize.published"])
def test_a_delete_during_an_optimize_is_never_lost(local, at):
    deleted, before, state = _interleave(local, at, "delete")
    assert "deleted" in state["conflict"] and "ok" not in state
    assert answers(local.uri) == expected(local, deleted | state["deleted"])
    rep = ParquetDataset(local.uri).optimize("x", **WRITE)  # run again: it completes
    assert rep.rows_deleted_dropped == len(deleted | state["deleted"])
    assert answers(local.uri) == expected(local, deleted | state["deleted"])


@pytest.mark.parametrize("at", ["optimize.intended", "optimize.published"])
def test_two_optimizes_of_the_same_files(local, at):
    deleted, before, state = _interleave(local, at, "optimize")
    assert state["ok"] and answers(local.uri) == before


def test_gc_during_an_optimize_removes_nothing_it_needs(local):
    deleted, before, state = _interleave(local, "optimize.published", "gc")
    assert state["ok"] and answers(local.uri) == before


def test_the_catalog_is_refused_by_earlier_versions_while_a_run_is_pending(local):
    import json

    ready(local, global_index=False)
    seen = {}

    def hook(name, ctx):
        if name == "optimize.published":
            cf = ParquetDataset(local.uri).catalog
            v, data = cf.read()
            seen["version"] = json.loads(data)["version"]

    with steps.hook(hook):
        ParquetDataset(local.uri).optimize("x", **WRITE)
    assert seen["version"] == 3  # earlier paimon-fast versions would read the pending files as data
    v, data = ParquetDataset(local.uri).catalog.read()
    cat = json.loads(data)
    assert cat["version"] == 2 and "optimize" not in cat  # done: plain again


def test_a_replaced_file_whose_change_time_moved_is_still_left_out(local):
    """The move away is a rename, which sets a file's change time before its name leaves the
    directory: a listing during the move sees the replaced file at its place with a new change
    time (paimon_fast/tables/replaced.py).  Here chmod sets it, after the commit and before the
    move: a reader of ours still leaves the replaced files out (before the fix it read them beside
    their replacements, every row twice, or failed to find them once moved)."""
    deleted = ready(local)
    before = expected(local, deleted)
    old = list(local.data_files())
    seen = {}

    def hook(name, ctx):
        if name == "optimize.committed" and not seen:
            for rel in old:
                p = local.join(rel)
                ctime = os.stat(p).st_ctime_ns
                os.chmod(p, os.stat(p).st_mode)  # the change time only
                seen.setdefault("moved", []).append(os.stat(p).st_ctime_ns != ctime)
            seen["read"] = answers(local.uri)

    with steps.hook(hook):
        ParquetDataset(local.uri).optimize("x", **WRITE)
    assert all(seen["moved"]) and seen["read"] == before
    assert answers(local.uri) == before
    assert plain_ids(local) == before[None]  # and moved away: plain readers list the new files only


def test_the_replaced_files_left_out_by_identity():
    """A replaced record leaves out a listed file at its path with its identity, or with only its
    change time moved; another inode, size or modification time is another file."""
    from types import SimpleNamespace

    from paimon_fast.tables.identity import Identity
    from paimon_fast.tables.replaced import hidden_filter

    rec = {"size": 10, "mtime_ns": 5, "ctime_ns": 7, "ino": 3}
    hide = hidden_filter({"optimize": {"replaced": {"p=a/f.parquet": rec}}})

    def listed(path="p=a/f.parquet", **kw):
        return SimpleNamespace(path=path, identity=Identity(**{**rec, **kw}))

    assert hide(listed()) and hide(listed(ctime_ns=8))
    assert not any(hide(f) for f in (listed(ino=4, ctime_ns=8), listed(mtime_ns=6), listed(size=11)))
    assert not hide(listed(path="p=a/g.parquet"))
    assert not hide(listed(ctime_ns=8, etag="e"))  # an object store's version is its ETag


def _optimize_between_listing_and_catalog(place, ds, stop_at=None):
    """``ds`` reads every row; after its snapshot listed the files and before it reads the catalog,
    an optimize runs to completion (or until the step ``stop_at``, where it is stopped): the ids
    read, and what the reader listed first."""
    state = {}

    class Stop(Exception):
        pass

    def hook(name, ctx):
        if name == "snapshot.listed" and "listings" in state:
            state["listings"] += 1
        if name == "snapshot.listed" and "fired" not in state:
            state["fired"] = True
            state["listed"] = place.data_files()
            try:
                ParquetDataset(place.uri).optimize("x", **WRITE)
            except Stop:
                pass
            state["listings"] = 0
        elif name == stop_at and state.get("fired"):
            raise Stop

    with steps.hook(hook):
        ids = sorted(ds.read(None).to_arrow().column("id").to_pylist())
    assert state.get("fired")
    return ids, state


@pytest.mark.parametrize("memo", ["fresh", "long-lived"])
def test_a_snapshot_listed_before_an_optimize_and_its_catalog_read_after(local, memo):
    """The reader lists the old files, the optimize moves the new ones in and the old ones away and
    stops recording them, then the reader reads the catalog.  Paired as they were, the reader kept
    the old files (unrecorded, found where they were moved) without their deletion vectors: rows
    deleted before came back.  The snapshot lists again when a commit landed meanwhile."""
    deleted = ready(local)
    before = expected(local, deleted)
    ds = ParquetDataset(local.uri)
    if memo == "long-lived":
        assert sorted(ds.read(None).to_arrow().column("id").to_pylist()) == before[None]
    ids, state = _optimize_between_listing_and_catalog(local, ds)
    assert ids == before[None]
    assert state["listings"] == 1  # listed once more, after the optimize
    assert not set(state["listed"]) & set(local.data_files())  # the optimize replaced every file listed
    assert answers(local.uri) == before


def test_a_snapshot_listed_before_an_optimize_put_its_files_in_place(local):
    """The reader lists the old files, the optimize moves the new ones in and commits (and stops
    there), then the reader reads the catalog: paired as they were, the old files were left out
    as replaced and the new ones were not listed.  Here every file was replaced and the read
    raised FileNotFoundError (no data files); had only some been, the others' rows would have
    been read alone, without an error."""
    deleted = ready(local)
    before = expected(local, deleted)
    ids, state = _optimize_between_listing_and_catalog(local, ParquetDataset(local.uri), stop_at="optimize.committed")
    assert ids == before[None] and state["listings"] == 1
    assert answers(local.uri) == before


def test_a_snapshot_gives_up_when_every_listing_meets_a_commit(local, monkeypatch):
    from paimon_fast.tables import catalog

    ready(local, global_index=False)
    ds = ParquetDataset(local.uri)
    n = []

    def hook(name, ctx):  # a commit during every listing
        if name == "snapshot.listed":
            n.append(1)
            base = catalog.read(ds.catalog)
            catalog.commit(ds.catalog, base, lambda c, attempt: dict(c, note=len(n)))

    monkeypatch.setattr(catalog, "SNAPSHOT_ROUNDS", 3)
    with steps.hook(hook), pytest.raises(DataFileChangedError, match="changed during each of 3 listings"):
        ds.snapshot()
    assert len(n) == 3


def test_a_reader_on_an_older_snapshot_reads_the_files_it_listed(local):
    deleted = ready(local)
    before = expected(local, deleted)
    snap = ParquetDataset(local.uri).snapshot()
    r = snap.read("x < 40")
    plan_first = snap.read("c = 'c3'")
    plan_first.report  # planned now, read after the optimize
    ParquetDataset(local.uri).optimize("x", **WRITE)
    assert sorted(r.to_arrow().column("id").to_pylist()) == before["x < 40"]
    assert sorted(plan_first.to_arrow().column("id").to_pylist()) == before["c = 'c3'"]
    # gc keeps the old files while the version that named them is live, then removes them
    assert not [o for o in collect(local.uri, delete=True).orphans if "retired" in o.path]
    assert os.listdir(os.path.join(local.path, "_optimize", "retired"))
    removed = collect(local.uri, delete=True, min_age=0)
    assert sum("retired" in o.path for o in removed.orphans) == 6
    with pytest.raises((DataFileChangedError, DamagedFileError)):
        snap.read("x < 40").to_arrow()  # its files are gone now: it says so, never a wrong answer
    assert answers(local.uri) == before


def test_explain_names_what_the_page_indexes_removed(local):
    """After an optimize by x, explain has a row for the pages that narrowed x: the rows of the
    pages (and row groups) whose min / max miss the range, in the files whose row groups alone
    could not decide; counted here from the rows pyarrow reads, pages of WRITE's page_rows."""
    ready(local)
    q, lo, hi = "x BETWEEN 500 AND 520", 500, 520

    def page_rows(ex):
        return [u for u in ex.indexes if u.index == "parquet page index" and u.column == "x"]

    assert not page_rows(ParquetDataset(local.uri).read(q).explain())  # not clustered: not asked
    ParquetDataset(local.uri).optimize("x", **WRITE)
    ds = ParquetDataset(local.uri)
    files = removed = gone = 0
    for f in ds.files():
        pf = pq.ParquetFile(f.abs_path)
        xs = pf.read(columns=["x"]).column("x").to_pylist()
        at, out, paged = 0, 0, False
        for g in range(pf.metadata.num_row_groups):
            n = pf.metadata.row_group(g).num_rows
            vals = [v for v in xs[at : at + n] if v is not None]
            if not vals or max(vals) < lo or min(vals) > hi:
                out += n  # the row group's statistics skip it
            elif not (lo <= min(vals) and max(vals) <= hi):  # undecided: its pages decide
                paged = True
                for p in range(at, at + n, WRITE["page_rows"]):
                    page = [v for v in xs[p : min(p + WRITE["page_rows"], at + n)] if v is not None]
                    if not page or max(page) < lo or min(page) > hi:
                        out += min(WRITE["page_rows"], at + n - p)
            at += n
        if paged:
            files, removed, gone = files + 1, removed + out, gone + (out == len(xs))
    (u,) = page_rows(ds.read(q).explain())
    assert files > 0 and removed > 0
    assert (u.used, u.files, u.files_removed, u.rows_removed) == (True, files, gone, removed)
    assert "parquet page index" in str(ds.read(q).explain())
    off = ParquetDataset(local.uri, statistics=False)
    assert not page_rows(off.read(q).explain())


def test_a_file_moved_away_while_its_read_is_checked(local, monkeypatch):
    """The check after a read looks at the file's place once: an optimize moving the file away
    between two looks (as it did under load) is no error; a file gone for good still is."""
    from paimon_fast.tables import identity, replaced

    ready(local, global_index=False)
    snap = ParquetDataset(local.uri).snapshot()
    f = snap.files()[0]
    real = identity.current
    moved = []

    def move_first(store, path):  # the optimize's move lands just before the look
        if not moved and path == f.abs_path:
            dst = os.path.join(local.path, *replaced.retired_rel(f.path, f.identity).split("/"))
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            os.replace(f.abs_path, dst)
            moved.append(dst)
        return real(store, path)

    monkeypatch.setattr(identity, "current", move_first)
    snap._read_done(f)  # the listed version, moved away unchanged: no error
    assert moved and not os.path.exists(f.abs_path)
    os.unlink(moved[0])
    with pytest.raises(DataFileChangedError, match="was removed"):
        snap._read_done(f)


@pytest.mark.parametrize("how", ["bitmap", "whole", "positions"])
def test_a_file_moved_away_between_its_opens_is_located_again(local, monkeypatch, how):
    """A read that opens a data file by name more than once finds it again when an optimize moves
    it away in between (once: a file moves once); gone for good, DataFileChangedError."""
    from pyroaring import BitMap

    from paimon_fast.tables import replaced

    ready(local, global_index=False)
    snap = ParquetDataset(local.uri).snapshot()
    f = snap.files()[0]
    want = pq.read_table(f.abs_path).column("id").to_pylist()
    real = replaced.locate
    moved = []

    def stale_once(store, root, g):  # located, then moved away before it is opened
        if g.path == f.path and not moved:
            dst = os.path.join(local.path, *replaced.retired_rel(f.path, f.identity).split("/"))
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            os.replace(f.abs_path, dst)
            moved.append(dst)
            return f.abs_path
        return real(store, root, g)

    def read():
        if how == "bitmap":
            return snap.read_file(f, bitmap=BitMap([0, 3, 5])).column("id").to_pylist()
        if how == "whole":
            return snap.read_file(f).column("id").to_pylist()
        return snap.read_rows(f, [1, 2], ["id"]).column("id").to_pylist()

    monkeypatch.setattr(replaced, "locate", stale_once)
    got = read()
    assert moved
    assert got == {"bitmap": [want[0], want[3], want[5]], "whole": want, "positions": want[1:3]}[how]
    os.unlink(moved[0])  # gone for good
    with pytest.raises(DataFileChangedError):
        read()


def test_reads_in_another_thread_while_optimizing(local):
    deleted = ready(local)
    want = expected(local, deleted, ["x < 40", "c = 'c3'"])
    stop, errors, done = threading.Event(), [], []

    def reader():
        while not stop.is_set():
            try:
                got = answers(local.uri, ["x < 40", "c = 'c3'"])
                if got != want:
                    errors.append(got)
                done.append(1)
            except Exception:  # noqa: BLE001 - every failure is reported, with where it came from
                errors.append(traceback.format_exc())

    th = threading.Thread(target=reader)
    th.start()
    try:
        for by, strategy in ((["x"], "order"), (["x", "y"], "zorder"), (["x"], "order")):
            ParquetDataset(local.uri).optimize(by, strategy, **WRITE)
    finally:
        stop.set()
        th.join()
    assert not errors, "\n".join(map(str, errors))
    assert len(done) >= 2


def test_on_s3(s3_server):
    """Killed after publishing its copies, then run again: the old state, then the new one; the
    old files moved out of the listing, kept until gc; plans skip files by the statistics."""
    b = s3_server.new_bucket()
    place = Place(s3_server.uri(b, "ds"), s3_server.filesystem(), f"{b}/ds")
    deleted = ready(place)
    before = expected(place, deleted)
    kept = sorted(ParquetDataset(place.uri).read(None).to_arrow().column("id").to_pylist())
    _run_killed(place, "optimize.published")
    assert answers(place.uri) == before
    assert len(plain_ids(place)) > len(kept)  # the published copies: a plain reader sees both until undone
    rep = ParquetDataset(place.uri).optimize("x", **WRITE)
    assert "undid the optimize" in " ".join(rep.recovered)
    assert rep.files_before == 6 and rep.global_indexes == ["c"]
    assert plain_ids(place) == kept  # (our readers' answers: after gc, below)
    keys = s3_server.keys(b, "ds/_optimize/retired/")
    assert len([k for k in keys if not k.endswith("/")]) == 6  # out of the listing, kept for older readers
    collect(place.uri, delete=True, min_age=0)
    assert not [k for k in s3_server.keys(b, "ds/_optimize/") if not k.endswith("/")]  # (pyarrow's directory markers)
    assert answers(place.uri) == before
    plan = ParquetDataset(place.uri).plan("x < 40")
    assert plan.report.files_skipped > 0
