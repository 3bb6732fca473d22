"""The Spark-free dataset layer: catalog, staleness, inline indexes, plans, exact scans."""

import base64
import json
import os
import re

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import paimon_fast as pf
import tests.support.toy_index  # noqa: F401  (registers the test-only "test-positions" index type)
from paimon_fast.core.sqlpredicate import parse_predicate
from paimon_fast.tables import ParquetDataset
from paimon_fast.read.arrow_filter import to_arrow_expression
from paimon_fast.tables.parquet import write_atomic
from tests.support.dataset_support import BLOOM, make_dataset


def index_file(root, rel):
    """Where a dataset keeps the file index container of its data file ``rel`` (the current
    catalog names it: ``_file_index/<rel>.<content hash>.index``)."""
    return root / ParquetDataset(str(root)).read_catalog()["files"][rel]["file_index"]["path"]


def full_table(ds):
    return pa.concat_tables(ds.read_file(f) for f in ds.files())


def test_listing_order_partitions_and_row_ids(tmp_path):
    ds = make_dataset(tmp_path)
    (tmp_path / "_ignored").mkdir()
    pq.write_table(pa.table({"id": [1]}), tmp_path / "_ignored" / "x.parquet")
    (tmp_path / "p=a" / ".hidden.parquet").write_bytes(b"")
    paths = [f.path for f in ds.files(refresh=True)]
    assert paths == sorted(paths) and len(paths) == 6
    assert paths[0] == "p=a/f0.parquet"
    assert dict(ds.files()[3].partition) == {"p": "b"}
    assert ds.schema().names == ["id", "name", "score", "status", "p"]
    offs = ds.row_offsets()
    assert list(offs.values()) == [0, 400, 800, 1200, 1600, 2000]


def test_a_schema_is_read_once_per_file_version(tmp_path, monkeypatch):
    """Every dataset object of the process takes the schema of a file version it knows without
    opening the file; a rewritten first file (another version) is read again."""
    make_dataset(tmp_path)
    assert ParquetDataset(str(tmp_path)).schema().names == ["id", "name", "score", "status", "p"]
    opened = []
    real = pq.read_schema
    monkeypatch.setattr(pq, "read_schema", lambda src, *a, **k: opened.append(src) or real(src, *a, **k))
    assert ParquetDataset(str(tmp_path)).schema().names == ["id", "name", "score", "status", "p"]
    assert not opened
    first = tmp_path / "p=a" / "f0.parquet"
    t = pq.read_table(first)
    sink = pa.BufferOutputStream()
    pq.write_table(t.append_column("extra", pa.array([1] * len(t))), sink)
    write_atomic(str(first), sink.getvalue().to_pybytes())
    assert "extra" in ParquetDataset(str(tmp_path)).schema().names
    assert len(opened) == 1


def test_build_catalog_and_idempotence(tmp_path):
    ds = make_dataset(tmp_path)
    rep = ds.build(BLOOM)
    assert rep.files_built == 6 and rep.files_current == 0
    cat = ds.read_catalog()
    assert cat["format"] == "paimon-fast-dataset" and cat["version"] == 2 and cat.commit_version == 1
    e = cat["files"]["p=a/f1.parquet"]
    assert e["rows"] == 400 and re.fullmatch(
        r"_file_index/p=a/f1\.parquet\.[0-9a-f]{16}\.index", e["file_index"]["path"]
    )
    st = os.stat(tmp_path / "p=a" / "f1.parquet")  # the data file's identity, as the build read it
    assert (e["size"], e["mtime_ns"], e["ctime_ns"], e["ino"]) == (
        st.st_size,
        st.st_mtime_ns,
        st.st_ctime_ns,
        st.st_ino,
    )
    assert e["file_index"]["checksum"]["block"] == 16384
    idx = pf.FileIndexFormat.open(str(index_file(tmp_path, "p=a/f1.parquet")), ds.row_type())
    assert set(idx.columns()) == {"id", "name"}
    assert e["file_index"]["size"] == os.path.getsize(index_file(tmp_path, "p=a/f1.parquet"))
    assert not [n for d in ("p=a", "p=b") for n in os.listdir(tmp_path / d) if not n.endswith(".parquet")]
    mtimes = {p: os.stat(index_file(tmp_path, p)).st_mtime_ns for p in cat["files"]}
    assert ds.build(BLOOM).files_built == 0
    assert mtimes == {p: os.stat(index_file(tmp_path, p)).st_mtime_ns for p in cat["files"]}
    # other features' keys survive a rebuild
    cat = ds.read_catalog()
    changed = dict(cat, global_index={"kept": True})
    changed["files"] = dict(cat["files"])
    changed["files"]["p=a/f0.parquet"] = dict(cat["files"]["p=a/f0.parquet"], deletion_vector={"kept": 1})
    ds.write_catalog(type(cat)(changed, cat.commit_version))
    # a rewritten data file is stale: only it is rebuilt
    pq.write_table(
        pa.table(
            {"id": np.arange(10, dtype=np.int64), "name": ["z"] * 10, "score": np.zeros(10), "status": ["new"] * 10}
        ),
        tmp_path / "p=b" / "f2.parquet",
    )
    rep = ds.build(BLOOM)
    assert rep.built == ["p=b/f2.parquet"]
    cat = ds.read_catalog()
    assert cat["global_index"] == {"kept": True}
    assert cat["files"]["p=a/f0.parquet"]["deletion_vector"] == {"kept": 1}
    assert cat["files"]["p=b/f2.parquet"]["rows"] == 10
    # new options: everything is stale
    assert ds.build(dict(BLOOM, **{"file-index.bloom-filter.id.fpp": "0.05"})).files_built == 6
    # a deleted index file is rebuilt
    os.unlink(index_file(tmp_path, "p=a/f0.parquet"))
    assert ds.build(dict(BLOOM, **{"file-index.bloom-filter.id.fpp": "0.05"})).built == ["p=a/f0.parquet"]


def test_small_indexes_are_inline(tmp_path):
    ds = make_dataset(tmp_path)
    opts = {
        "file-index.bloom-filter.columns": "name",
        "file-index.bloom-filter.name.items": "10",
        "file-index.in-manifest-threshold": "1kb",
    }
    rep = ds.build(opts)
    assert rep.inline == 6
    assert not os.path.exists(tmp_path / "_file_index")
    e = ds.read_catalog()["files"]["p=a/f0.parquet"]["file_index"]
    blob = base64.b64decode(e["inline"])
    assert len(blob) == e["size"] <= 1024
    assert pf.FileIndexFormat.open(blob, {"name": "STRING"}).columns() == ["name"]
    plan = ds.plan("name = 'n0'")
    assert plan.report.files_without_index == 0
    assert plan.report.files_skipped >= 4
    # raising the threshold's opposite: a file index replaces the inline one
    ds.build(dict(opts, **{"file-index.in-manifest-threshold": "10b"}))
    assert "path" in ds.read_catalog()["files"]["p=a/f0.parquet"]["file_index"]


def test_unknown_columns_and_types_are_rejected(tmp_path):
    ds = make_dataset(tmp_path, files_per_part=1)
    with pytest.raises(ValueError, match="not data columns"):
        ds.build({"file-index.bloom-filter.columns": "nope"})
    with pytest.raises(pf.UnknownIndexTypeError):
        ds.build({"file-index.no-such-index.columns": "id"})


PREDICATES = [
    "id = 5",
    "id = 2399",
    "id = -1",
    "id IN (3, 1200, 5000)",
    "id NOT IN (1, 2, 3)",
    "id BETWEEN 390 AND 410",
    "id NOT BETWEEN 10 AND 2390",
    "name = 'n3'",
    "name = 'zzz'",
    "name IN ('n0', 'n40')",
    "name IS NULL",
    "name IS NOT NULL AND id < 50",
    "name != 'n1'",
    "name LIKE 'n1%'",
    "name LIKE '%4'",
    "name LIKE 'n_2'",
    "p = 'b' AND name = 'n30'",
    "p = 'a' OR id = 2000",
    "score > 90 OR name = 'n8'",
    "NOT (name = 'n3' OR id < 1000)",
    "status = 'paid' AND id IN (1, 4, 7, 10)",
    "status IN ('new', 'sent')",
]


def test_scan_equals_full_filter(tmp_path):
    ds = make_dataset(tmp_path)
    ds.build(dict(BLOOM, **{"file-index.test-positions.columns": "status"}))
    full = full_table(ds)
    skipped_any = bitmap_rows = 0
    for text in PREDICATES:
        pred = parse_predicate(text)
        got, rep = ds.scan(text)
        want = full.filter(to_arrow_expression(pred, full.schema))
        assert sorted(got.column("id").to_pylist()) == sorted(want.column("id").to_pylist()), text
        assert rep.rows_total == 2400
        skipped_any += rep.files_skipped
        bitmap_rows += rep.rows_skipped_by_bitmap
    assert skipped_any > 0 and bitmap_rows > 0


def test_bitmap_results_drop_rows(tmp_path):
    ds = make_dataset(tmp_path, files_per_part=1)
    ds.build({"file-index.test-positions.columns": "status"})
    plan = ds.plan("status = 'paid'")
    assert all(p.bitmap is not None for p in plan.files)
    assert plan.report.rows_skipped_by_bitmap == 2 * (400 - len(range(1, 400, 3)))
    assert plan.report.rows_read == 2 * len(range(1, 400, 3))
    t, _ = ds.scan("status = 'paid' AND id < 20")
    assert sorted(t.column("id").to_pylist()) == [1, 4, 7, 10, 13, 16, 19]
    assert ds.read_catalog()["file_index"]["types"]["test-positions"] == "tests.support.toy_index"


def test_corrupt_or_stale_index_is_never_trusted(tmp_path):
    ds = make_dataset(tmp_path, files_per_part=1)
    ds.build(BLOOM)
    # corrupt the bytes but keep the size: the file is read, the error counted
    p = index_file(tmp_path, "p=a/f0.parquet")
    raw = bytearray(p.read_bytes())
    raw[:8] = b"\0" * 8
    p.write_bytes(bytes(raw))
    plan = ds.plan("id = 5")
    assert plan.report.index_errors == 1
    assert not plan.files[0].skipped
    # a data file changed after the build: its index is not used for pruning
    pq.write_table(
        pa.table({"id": np.array([999999], dtype=np.int64), "name": ["q"], "score": [1.0], "status": ["new"]}),
        tmp_path / "p=b" / "f0.parquet",
    )
    ds = ParquetDataset(str(tmp_path))
    plan = ds.plan("id = 999999")
    assert plan.report.files_without_index == 1
    t, _ = ds.scan("id = 999999")
    assert t.column("id").to_pylist() == [999999]


def test_atomic_write_leaves_no_partial_file(tmp_path):
    target = tmp_path / "x.parquet.index"
    with pytest.raises(RuntimeError, match="injected"):
        write_atomic(str(target), b"0123456789", _fault="raise")
    assert os.listdir(tmp_path) == []
    write_atomic(str(target), b"abc")
    assert target.read_bytes() == b"abc" and os.listdir(tmp_path) == ["x.parquet.index"]


def _py_eval(pred, row):
    """Plain-Python SQL semantics (None = unknown) as the oracle for the Arrow filter."""
    from paimon_fast.core.predicate import And, Or

    if isinstance(pred, And):
        vals = [_py_eval(c, row) for c in pred.children]
        return False if False in vals else (None if None in vals else True)
    if isinstance(pred, Or):
        vals = [_py_eval(c, row) for c in pred.children]
        return True if True in vals else (None if None in vals else False)
    v = row[pred.name]
    op, lits = pred.op, pred.literals
    if op == "is_null":
        return v is None
    if op == "is_not_null":
        return v is not None
    if v is None:
        return None
    import re

    return {
        "equal": lambda: v == lits[0],
        "not_equal": lambda: v != lits[0],
        "less_than": lambda: v < lits[0],
        "less_or_equal": lambda: v <= lits[0],
        "greater_than": lambda: v > lits[0],
        "greater_or_equal": lambda: v >= lits[0],
        "in": lambda: v in lits,
        "not_in": lambda: v not in lits,
        "between": lambda: lits[0] <= v <= lits[1],
        "not_between": lambda: not lits[0] <= v <= lits[1],
        "starts_with": lambda: v.startswith(lits[0]),
        "ends_with": lambda: v.endswith(lits[0]),
        "contains": lambda: lits[0] in v,
        "like": lambda: re.fullmatch(lits[0].replace("%", ".*").replace("_", "."), v) is not None,
    }[op]()


def test_arrow_filter_matches_sql_semantics(tmp_path):
    t = pa.table(
        {"a": pa.array([1, None, 3, 4, None, 6], pa.int64()), "s": pa.array(["x1", "y2", None, "x22", "z", "x_2"])}
    )
    rows = t.to_pylist()
    for text in [
        "a = 3",
        "a != 3",
        "a NOT IN (1, 3)",
        "a IN (1, 6)",
        "a NOT BETWEEN 2 AND 4",
        "a IS NULL",
        "s LIKE 'x%'",
        "s LIKE 'x_2'",
        "s LIKE '%2'",
        "s LIKE '%_%'",
        "NOT (a > 3 OR s = 'z')",
        "a >= 3 OR s IS NULL",
        "a > 2.5",
        "s = 'x1' AND a IS NOT NULL",
    ]:
        pred = parse_predicate(text)
        got = t.filter(to_arrow_expression(pred, t.schema)).to_pylist()
        want = [r for r in rows if _py_eval(pred, r) is True]
        assert got == want, text


def test_cli_inspect_reads_types_from_the_data_file(tmp_path, capsys):
    from paimon_fast.cli import main

    ds = make_dataset(tmp_path, files_per_part=1)
    ds.build(BLOOM)
    assert main(["inspect", str(index_file(tmp_path, "p=a/f0.parquet")), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    bloom = out["columns"]["id"][0]
    assert bloom["index_type"] == "bloom-filter" and bloom["type"] == "BIGINT"
    assert bloom["num_bits"] > 0 and 0 < bloom["fill_ratio"] < 1
    assert out["data_file"] == str(tmp_path / "p=a" / "f0.parquet")


@pytest.mark.parametrize("one_pass", [True, False], ids=["one pass", "predicate columns first"])
def test_inexact_reads_in_one_pass_or_two(tmp_path, monkeypatch, one_pass):
    """Files whose plan is inexact (a bloom filter) give the same rows whether every asked column
    is read at the candidate rows and then filtered (few candidates) or the predicate's columns
    are read first and the others at the rows that hold it: subsets of columns, a partition
    column, positions, counts, deleted rows; checked against pyarrow's filter of the files."""
    import pyarrow.compute as pc

    from paimon_fast.tables import dataset_read

    ds = make_dataset(tmp_path)
    ds.build(BLOOM)
    ds.delete("status = 'sent'")
    monkeypatch.setattr(dataset_read, "ONE_PASS_ROWS", 1 << 40 if one_pass else -1)
    where = "name = 'n3' AND score > 45"
    parts = []
    for f in ds.files():
        t = pq.ParquetFile(tmp_path / f.path).read()  # (the file alone: no partition from its path)
        parts.append(t.append_column("p", pa.array([dict(f.partition)["p"]] * t.num_rows)))
    full = pa.concat_tables(parts)
    full = full.filter(pc.not_equal(full.column("status"), "sent"))
    # the oracle: the predicate written by hand in pyarrow (not the product's translation of it)
    want = full.filter((pc.field("name") == "n3") & (pc.field("score") > 45))
    assert 0 < want.num_rows < full.num_rows
    plan = ds.plan(where)
    assert any(not p.exact for p in plan.files if not p.skipped)  # the case under test
    for cols in (["id", "score"], ["status", "p"], ["name"], None):
        got = ds.read(where, columns=cols).to_arrow()
        names = cols or full.schema.names
        assert sorted(got.select(names).to_pylist(), key=str) == sorted(want.select(names).to_pylist(), key=str)
    assert ds.read(where).count() == want.num_rows
    # counts, part by part: with the mask of a comparison (no row kept) and with an OR, which the
    # expression answers (rows filtered)
    score = pc.field("score")
    for text, expr in [
        (where, (pc.field("name") == "n3") & (score > 45)),
        ("name >= 'n12' AND score > 45", (pc.field("name") >= "n12") & (score > 45)),  # every file
        ("name = 'n3' AND (score > 45 OR score < 30)", (pc.field("name") == "n3") & ((score > 45) | (score < 30))),
    ]:
        plan = ds.plan(text)
        kept = [p for p in plan.files if not p.skipped]
        assert any(not p.exact for p in kept)
        assert len(kept) > 1 or "n12" not in text  # (the case of several files)
        _, counts = ds.read_kept_many([(p, None) for p in kept], [], plan.predicate)
        by_file = pa.concat_tables(
            t.append_column("f", pa.array([f.path] * t.num_rows)) for f, t in zip(ds.files(), parts)
        )
        by_file = by_file.filter(pc.field("status") != "sent")
        expect = [by_file.filter((pc.field("f") == p.file.path) & expr).num_rows for p in kept]
        assert list(counts) == expect and sum(expect) > 0, text
    # positions: each row's place in its file, as the file's own row number says
    for p in plan.files:
        if p.skipped:
            continue
        t = ds.read_kept(p, ["id"], plan.predicate, positions=True)
        ids = pq.read_table(tmp_path / p.file.path, columns=["id"]).column("id").to_numpy()
        assert ids[t.column("__pf_pos").to_numpy()].tolist() == t.column("id").to_pylist()


def test_one_run_of_rows_is_read_as_a_range(tmp_path):
    """An index answer that is one run of rows (a clustered column's) goes to the reader as a
    range (pages and row groups read whole, no per-row positions), every row as None; scattered
    answers stay positions, a stream's window cuts the run, and deleted rows leave positions."""
    n = 1000
    t = pa.table({"x": np.arange(n), "s": [f"v{i % 37}" for i in range(n)]})
    pq.write_table(t, str(tmp_path / "a.parquet"), row_group_size=300, data_page_size=512, write_page_index=True)
    ds = ParquetDataset(str(tmp_path))
    ds.build({"file-index.range-bitmap.columns": "x"})
    s = ds.snapshot()

    def kept(snap, where, rows=None):
        (p,) = snap.plan(where).kept
        return snap._kept_positions(p, rows)

    assert kept(s, "x < 400") == range(0, 400)
    assert kept(s, "x >= 250 AND x < 700") == range(250, 700)
    assert kept(s, "x >= 0") is None
    assert kept(s, "x >= 250 AND x < 700", (300, 500)) == range(300, 500)
    assert len(kept(s, "x >= 250 AND x < 700", (0, 100))) == 0
    scattered = kept(s, "x < 10 OR x > 990")
    assert isinstance(scattered, np.ndarray) and scattered.tolist() == [*range(10), *range(991, n)]
    for where, want in (("x >= 250 AND x < 700", list(range(250, 700))), ("x < 10 OR x > 990", scattered.tolist())):
        assert ds.read(where).to_arrow().equals(t.take(pa.array(want))), where
    ds.delete("x = 300")
    s2 = ds.snapshot()
    pos = kept(s2, "x >= 250 AND x < 700")
    assert pos.tolist() == [i for i in range(250, 700) if i != 300]
    assert ds.read("x >= 250 AND x < 700").to_arrow().column("x").to_pylist() == pos.tolist()


def test_an_inexact_plan_tests_only_what_its_indexes_left(tmp_path, monkeypatch):
    """A file whose plan is inexact because one leaf of an AND has no index (``s``) while the
    range bitmap answered the other (``x``) exactly: its plan keeps the rest to test (the ``s``
    leaf), readers test only that and do not read ``x`` for it, and rows and counts are pyarrow's.
    An OR, or a leaf a bloom filter answered (a superset), keeps the whole predicate."""
    import pyarrow.compute as pc

    from paimon_fast.core.predicate import Leaf
    from paimon_fast.io.parquet import native
    from paimon_fast.tables import dataset_read

    n = 3000
    t = pa.table({"x": np.arange(n) % 997, "s": [f"v{i % 7}" for i in range(n)], "k": np.arange(n)})
    for i in range(2):
        pq.write_table(t, str(tmp_path / f"f{i}.parquet"), row_group_size=500, data_page_size=512)
    ds = ParquetDataset(str(tmp_path))
    ds.build({"file-index.range-bitmap.columns": "x", "file-index.bloom-filter.columns": "k"})
    asked = []
    real = native.read_files

    def spy(items, columns=None, **kw):
        asked.append(list(columns or []))
        return real(items, columns, **kw)

    monkeypatch.setattr(native, "read_files", spy)
    whole = pa.concat_tables([t, t])
    cases = [
        ("x < 400 AND s = 'v3'", (pc.field("x") < 400) & (pc.field("s") == "v3"), "s = 'v3'"),
        ("x < 400 AND s = 'v3' AND s <> 'v2'", (pc.field("x") < 400) & (pc.field("s") == "v3"), None),
        ("x < 400 OR s = 'v3'", (pc.field("x") < 400) | (pc.field("s") == "v3"), None),
        ("k = 17 AND x < 400", (pc.field("k") == 17) & (pc.field("x") < 400), "k = 17"),
    ]
    for one_pass in (True, False):
        monkeypatch.setattr(dataset_read, "ONE_PASS_ROWS", 1 << 40 if one_pass else -1)
        for text, expr, rest in cases:
            plan = ds.plan(text)
            kept = [p for p in plan.files if not p.skipped]
            assert kept and all(not p.exact for p in kept), text
            for p in kept:
                if rest is None:
                    assert p.residual is None or len(list(p.residual[1].leaves())) == 2, text
                else:
                    assert p.residual is not None and p.residual[0] == plan.predicate, text
                    left = p.residual[1]
                    assert isinstance(left, Leaf) and left.name == rest.split()[0], (text, left)
            want = whole.filter(expr)
            asked.clear()
            assert ds.read(text).count() == want.num_rows, text
            if rest == "s = 'v3'":
                assert asked and all("x" not in cols for cols in asked), (text, asked)
            got = ds.read(text, columns=["k", "s"]).to_arrow()
            assert sorted(got.to_pylist(), key=str) == sorted(want.select(["k", "s"]).to_pylist(), key=str), text


def test_a_files_schema_metadata_stays_out_of_the_kept_reads_and_in_the_reads_schema(tmp_path):
    """A dataset written from pandas (its files' schema carries pandas' metadata): the kept files'
    reads hand over tables without schema metadata, whether every column is read or some; the
    read object's table carries the dataset's schema, metadata included."""
    t = pa.table({"id": pa.array(range(10), pa.int64()), "s": [str(i) for i in range(10)]})
    t = t.replace_schema_metadata({b"pandas": b'{"index_columns": []}'})
    pq.write_table(t, str(tmp_path / "a.parquet"))
    ds = ParquetDataset(str(tmp_path))
    assert ds.data_schema().metadata
    snap = ds.snapshot()
    plan = snap.plan(snap._bound("id < 5"))
    for cols in (["id", "s"], ["s"]):
        got, _ = snap.read_kept_many([(p, None) for p in plan.kept], cols, plan.predicate)
        assert got.schema.metadata is None and got.column_names == cols and got.num_rows == 5
    out = ds.read("id < 5").to_arrow()
    assert out.schema.equals(ds.schema(), check_metadata=True) and out.column("id").to_pylist() == [0, 1, 2, 3, 4]
