"""BTree global indexes inside Paimon tables: built by create_global_index(..., "btree") in
this process, on Spark and by the CLI, read by read_with_index / plan_with_index / the fast
path / top-N, with pypaimon 2.1 on the other side both ways.

Tables are written with pypaimon 2.1 in temporary warehouses; expected rows come from a
plain-Python evaluation of the table's rows (to_pylist), never from our filters.
"""

import os
import random
import struct

import numpy as np
import pyarrow as pa
import pytest

pytest.importorskip("pypaimon")

import paimon_fast as pf  # noqa: E402
from paimon_fast.globalindex import BTreeIndexFile, KeyCodec, writer  # noqa: E402
from paimon_fast.globalindex.btree import files_from_groups  # noqa: E402
from paimon_fast.globalindex.format import group_column  # noqa: E402
from paimon_fast.paimon import globalindex as pgi  # noqa: E402
from paimon_fast.paimon import read_with_index, top_n  # noqa: E402
from paimon_fast.paimon.globalindex import create_global_index  # noqa: E402
from paimon_fast.read.topn import TopNReport  # noqa: E402

from tests.support.paimon_globalindex_support import (  # noqa: E402
    CASES,
    DATA_EVOLUTION,
    KEY_TYPES,
    ROW_TRACKING,
    append_batch,
    color_batch,
    color_index_answers,
    color_table,
    expected_ids,
    index_entries,
    new_table,
    range_files,
    sorted_ids,
    table_rows,
    with_options,
)

RPR = {"sorted-index.records-per-range": "60"}


def _btree_entries(cat, name):
    return [e for e in index_entries(cat, name) if e.index_file.index_type == "btree"]


def test_rotated_btree_files_equal_one_writer_per_chunk():
    """Files cut every N sorted records (nulls first, then key, then row id) are each
    byte-identical to the Java-exact writer fed that chunk alone."""
    rnd = random.Random(11)
    vals = [rnd.choice([None, "a", "bb", "c", "é", ""]) for _ in range(500)]
    rids = np.array(rnd.sample(range(4000), 500), dtype=np.uint64)
    w = writer("STRING", {"btree-index.block-size": "64 b"}, index_type="btree")
    files = files_from_groups(group_column(KeyCodec("STRING"), pa.array(vals), rids), w.block_size, w.encoder, 53)
    order = sorted(zip(vals, rids.tolist()), key=lambda t: (t[0] is not None, (t[0] or "").encode(), t[1]))
    assert [n for _, _, n in files] == [53] * 9 + [23]
    for i, (data, meta, n) in enumerate(files):
        chunk = order[53 * i : 53 * i + n]
        one = writer("STRING", {"btree-index.block-size": "64 b"}, index_type="btree")
        one.write_batch(pa.array([v for v, _ in chunk], pa.string()), np.array([r for _, r in chunk], np.uint64))
        assert (data, meta) == one.finish()


@pytest.mark.parametrize("options", [DATA_EVOLUTION, ROW_TRACKING], ids=["data-evolution", "row-tracking"])
def test_build_then_read_matches_oracle(tmp_path, options):
    cat, name = color_table(tmp_path, options)
    snap = cat.get_table(f"db.{name}").snapshot_manager().get_latest_snapshot().id
    added = create_global_index(cat.get_table(f"db.{name}"), "color", "btree", options=RPR)
    entries = _btree_entries(cat, name)
    assert added == len(entries) > 0
    assert all(e.index_file.row_count <= 72 for e in entries)  # cut at 1.2 x records per range
    covered = set()
    for e in entries:
        m = e.index_file.global_index_meta
        covered |= set(range(m.row_range_start, m.row_range_end + 1))
        # Java's DataEvolutionIndexSourceMeta of the scanned snapshot
        assert m.source_meta == struct.pack(">iiq", 0x44454958, 1, snap)
    assert covered == set(range(600))
    rows = table_rows(cat, name)
    t = cat.get_table(f"db.{name}")
    for fast in (True, False):  # the fast path and pypaimon's planner + reader
        for make, fn in CASES:
            got, rep = read_with_index(t, make(), fast=fast)
            assert rep.fast_path == fast, rep.fallback_reason
            assert sorted_ids(got) == expected_ids(rows, fn), make()
    got, report = read_with_index(t, pf.field("color") == "red")
    want = len(expected_ids(rows, lambda r: r["color"] == "red"))
    assert report.global_indexes == [
        f"color (btree, {added} files over {len({e.index_file.global_index_meta.row_range_start for e in entries})} "
        f"row ranges, {want} rows selected)"
    ]  # noqa: E501
    assert "global index used: color (btree" in str(report)


@pytest.mark.parametrize("mode", ["fast", "full", "detail"])
def test_search_modes_after_append(tmp_path, mode):
    cat, name = color_table(tmp_path, DATA_EVOLUTION, commits=2)
    create_global_index(cat.get_table(f"db.{name}"), "color", "btree")
    indexed = {r["id"] for r in table_rows(cat, name)}
    append_batch(cat, name, color_batch(2))
    rows = table_rows(cat, name)
    t = with_options(cat, name, {"scalar-index.search-mode": mode})
    for fast in (True, False):
        for make, fn in CASES:
            got, rep = read_with_index(t, make(), fast=fast)
            pred = make()
            only = indexed if mode == "fast" and color_index_answers(pred) else None
            assert sorted_ids(got) == expected_ids(rows, fn, only), (mode, pred)


def test_bitmap_and_btree_on_one_column_and_on_two_columns(tmp_path):
    """A field's bitmap and btree indexes (over different row ranges) are united, as Java's
    UnionGlobalIndexReader does; indexes of two columns meet under AND / OR."""
    cat, name = color_table(tmp_path, DATA_EVOLUTION, commits=2)
    assert create_global_index(cat.get_table(f"db.{name}"), "color", "bitmap") > 0
    append_batch(cat, name, color_batch(2))
    assert create_global_index(cat.get_table(f"db.{name}"), "color", "btree") > 0  # the appended range only
    assert create_global_index(cat.get_table(f"db.{name}"), "n", "btree", options=RPR) > 0
    kinds = {
        (e.index_file.index_type, e.index_file.global_index_meta.row_range_start)
        for e in index_entries(cat, name)
        if e.index_file.global_index_meta.index_field_id == 1
    }
    assert {k for k, _ in kinds} == {"bitmap", "btree"}
    rows = table_rows(cat, name)
    t = cat.get_table(f"db.{name}")
    checks = [
        (pf.field("color") == "red", lambda r: r["color"] == "red"),
        (pf.field("color") >= "m", lambda r: r["color"] is not None and r["color"] >= "m"),
        (
            (pf.field("color") == "red") & (pf.field("n") > 4),
            lambda r: r["color"] == "red" and r["n"] is not None and r["n"] > 4,
        ),
        (
            (pf.field("color") == "blue") | (pf.field("n").between(1, 2)),
            lambda r: r["color"] == "blue" or (r["n"] is not None and 1 <= r["n"] <= 2),
        ),
        (pf.field("color").like("%e%"), lambda r: r["color"] is not None and "e" in r["color"]),
    ]
    for fast in (True, False):
        for pred, fn in checks:
            got, rep = read_with_index(t, pred, fast=fast)
            assert sorted_ids(got) == expected_ids(rows, fn), pred
    _, rep = read_with_index(t, pf.field("color") == "red")
    assert {u.split(",")[0] for u in rep.global_indexes} == {"color (bitmap", "color (btree"}
    # both cover the whole table: the answer selects only red rows
    assert rep.rows_selected == len(expected_ids(rows, lambda r: r["color"] == "red"))


def test_nearly_unique_files_are_grouped_together_with_the_same_bytes(tmp_path, monkeypatch):
    """Files of nearly unique BIGINT keys are grouped in one go instead of file by file and
    merged: the same index files either way, bitmap and btree."""
    import paimon_fast.globalindex.format as gformat
    import paimon_fast.globalindex.groups as ggroups
    from paimon_fast.paimon import globalindex_build as pgb

    calls = []
    real = gformat.nearly_unique

    def spy(arr, *a):
        calls.append(len(arr))
        return real(arr, *a)

    monkeypatch.setattr(pgb, "UNIQUE_CHECK_ROWS", 50)
    for itype in ("btree", "bitmap"):
        out = []
        for name, fn in (("a", spy), ("b", lambda *a: False)):
            monkeypatch.setattr(gformat, "nearly_unique", fn)
            monkeypatch.setattr(ggroups, "nearly_unique", fn)  # read there by group_column_parallel
            cat, t = color_table(tmp_path / f"{itype}{name}", DATA_EVOLUTION, commits=3, partitioned=False)
            assert create_global_index(cat.get_table(f"db.{t}"), "id", itype, options=RPR) > 0
            out.append(range_files(cat, t, str(tmp_path / f"{itype}{name}" / "wh")))
        assert out[0] == out[1] and calls
        rows = table_rows(cat, t)
        got, _ = read_with_index(cat.get_table(f"db.{t}"), pf.field("id").isin([3, 250, 599]))
        assert sorted_ids(got) == [3, 250, 599] == expected_ids(rows, lambda r: r["id"] in (3, 250, 599))


def test_scan_limit_refuses_ranges_and_rows_stay_exact(tmp_path):
    """btree-index.fallback-scan-max-size = 0 b: ranges are not answered by the index (Java
    refuses them), equality still is; the rows are the oracle's either way."""
    cat, name = color_table(tmp_path, DATA_EVOLUTION, commits=2)
    create_global_index(cat.get_table(f"db.{name}"), "n", "btree")
    rows = table_rows(cat, name)
    t = with_options(cat, name, {"btree-index.fallback-scan-max-size": "0 b"})
    got, rep = read_with_index(t, pf.field("n") < 3)
    assert sorted_ids(got) == expected_ids(rows, lambda r: r["n"] is not None and r["n"] < 3) and not rep.global_indexes
    got, rep = read_with_index(t, pf.field("n") == 3)
    assert sorted_ids(got) == expected_ids(rows, lambda r: r["n"] == 3) and rep.global_indexes


def test_every_key_type(tmp_path):
    import random as _r

    schema = pa.schema([("id", pa.int64())] + [(n, t) for n, t, _, _ in KEY_TYPES])
    cat = new_table(str(tmp_path / "wh"), "k", schema, DATA_EVOLUTION)
    rnd = _r.Random(4)
    for k in range(2):
        cols = {"id": pa.array(range(k * 120, (k + 1) * 120), pa.int64())}
        for n, t, gen, _ in KEY_TYPES:
            cols[n] = pa.array([None if rnd.random() < 0.1 else gen(rnd) for _ in range(120)], t)
        append_batch(cat, "k", pa.table(cols, schema=schema))
    for n, _, _, _ in KEY_TYPES:
        assert create_global_index(cat.get_table("db.k"), n, "btree") > 0, n
    rows = table_rows(cat, "k")
    t = cat.get_table("db.k")
    for n, _, _, probe in KEY_TYPES:
        for pred, fn in [
            (pf.field(n) == probe, lambda r, n=n, v=probe: r[n] is not None and r[n] == v),
            (pf.field(n) < probe, lambda r, n=n, v=probe: r[n] is not None and r[n] < v),
            (pf.field(n).not_between(probe, probe), lambda r, n=n, v=probe: r[n] is not None and r[n] != v),
        ]:
            got, report = read_with_index(t, pred)
            assert sorted_ids(got) == expected_ids(rows, fn), (n, pred)
            assert any(u.startswith(n + " (btree") for u in report.global_indexes), (n, report.global_indexes)


def test_killed_build_commits_nothing_and_a_second_build_adds_nothing(tmp_path, monkeypatch):
    cat, name = color_table(tmp_path, DATA_EVOLUTION, commits=2)
    snap = cat.get_table(f"db.{name}").snapshot_manager().get_latest_snapshot().id
    calls = []
    real = pgi._write_index_file

    def dies_on_the_third(table, file_name, data):
        calls.append(file_name)
        if len(calls) == 3:
            raise KeyboardInterrupt("killed while writing")
        return real(table, file_name, data)

    monkeypatch.setattr(pgi, "_write_index_file", dies_on_the_third)
    with pytest.raises(KeyboardInterrupt):
        create_global_index(
            cat.get_table(f"db.{name}"), "color", "btree", options={"sorted-index.records-per-range": "30"}
        )
    assert cat.get_table(f"db.{name}").snapshot_manager().get_latest_snapshot().id == snap
    assert index_entries(cat, name) == []
    index_dir = os.path.join(str(tmp_path / "wh"), "db.db", name, "index")
    assert not os.path.isdir(index_dir) or os.listdir(index_dir) == []
    monkeypatch.undo()
    first = create_global_index(cat.get_table(f"db.{name}"), "color", "btree")
    assert first > 0 and create_global_index(cat.get_table(f"db.{name}"), "color", "btree") == 0
    assert len(_btree_entries(cat, name)) == first
    append_batch(cat, name, color_batch(2))
    before = {e.index_file.file_name for e in _btree_entries(cat, name)}
    assert create_global_index(cat.get_table(f"db.{name}"), "color", "btree") > 0  # the appended rows only
    new = [e.index_file.global_index_meta for e in _btree_entries(cat, name) if e.index_file.file_name not in before]
    assert min(m.row_range_start for m in new) == 400 and max(m.row_range_end for m in new) == 599


def test_cli_create_global_index_btree(tmp_path, capsys):
    from paimon_fast.cli import main

    cat, name = color_table(tmp_path, DATA_EVOLUTION, commits=2)
    rc = main(
        [
            "paimon",
            "create-global-index",
            str(tmp_path / "wh"),
            f"db.{name}",
            "n",
            "--type",
            "btree",
            "--option",
            "btree-index.block-size=32b",
        ]
    )
    assert rc in (0, None) and "index files added" in capsys.readouterr().out
    entries = _btree_entries(cat, name)
    assert entries
    root = os.path.join(str(tmp_path / "wh"), "db.db", name, "index")
    f = BTreeIndexFile(KeyCodec("INT"), os.path.join(root, entries[0].index_file.file_name))
    # the option reached the writer: a file this small is one block at the default 64 kb
    assert f.block_count() > 1 and f.size < 2048
    rows = table_rows(cat, name)
    got, _ = read_with_index(cat.get_table(f"db.{name}"), pf.field("n") >= 7)
    assert sorted_ids(got) == expected_ids(rows, lambda r: r["n"] is not None and r["n"] >= 7)


@pytest.mark.parametrize(
    "options",
    [DATA_EVOLUTION, {**DATA_EVOLUTION, "scalar-index.search-mode": "full"}, ROW_TRACKING],
    ids=["de-fast", "de-full", "row-tracking"],
)
def test_top_n_from_the_btree_index(tmp_path, options):
    cat, name = color_table(tmp_path, options, commits=2)
    create_global_index(cat.get_table(f"db.{name}"), "n", "btree", options=RPR)
    indexed = {r["id"] for r in table_rows(cat, name)}
    append_batch(cat, name, color_batch(2))
    rows = table_rows(cat, name)
    fast_mode = options.get("data-evolution.enabled") and options.get("scalar-index.search-mode", "fast") == "fast"
    pool = [r for r in rows if r["id"] in indexed] if fast_mode else rows
    for desc in (True, False):
        for nulls_first in (True, False):
            rep = TopNReport()
            got = top_n(
                cat.get_table(f"db.{name}"), "n", 9, desc=desc, nulls_first=nulls_first, columns=["id", "n"], report=rep
            )
            order = sorted(
                pool,
                key=lambda r: (
                    (0 if nulls_first else 2) if r["n"] is None else 1,
                    0 if r["n"] is None else (-r["n"] if desc else r["n"]),
                ),
            )
            assert got.column("n").to_pylist() == [r["n"] for r in order[:9]], (desc, nulls_first)
            assert all(r["n"] == v for r, v in zip(rows_by_id(rows, got), got.column("n").to_pylist()))
            assert rep.global_indexes and rep.global_indexes[0].startswith("n (btree")
            # the index keeps the reads small: 9 candidates (+ the unindexed rows outside fast mode)
            assert rep.rows_read <= 2 * (9 + (0 if fast_mode else len(rows) - len(indexed)))


def rows_by_id(rows, got):
    by = {r["id"]: r for r in rows}
    return [by[i] for i in got.column("id").to_pylist()]


# ------------------------------------------------------------------ interop with pypaimon 2.1
def test_our_reads_use_pypaimons_btree_index(tmp_path):
    """pypaimon 2.1 builds a btree index (its default type): our fast path and the pypaimon
    path both answer from it (no deferring to pypaimon any more) with the oracle's rows."""
    cat, name = color_table(tmp_path, DATA_EVOLUTION, commits=2)
    assert cat.get_table(f"db.{name}").create_global_index("color") > 0  # pypaimon's default: btree
    assert {e.index_file.index_type for e in index_entries(cat, name)} == {"btree"}
    rows = table_rows(cat, name)
    t = cat.get_table(f"db.{name}")
    for fast in (True, False):
        for make, fn in CASES:
            got, rep = read_with_index(t, make(), fast=fast)
            assert rep.fast_path == fast, rep.fallback_reason
            assert sorted_ids(got) == expected_ids(rows, fn), make()
    _, rep = read_with_index(t, pf.field("color") == "blue")
    assert rep.global_indexes and rep.global_indexes[0].startswith("color (btree")
    assert create_global_index(t, "color", "btree") == 0  # nothing left to index after pypaimon's build


@pytest.mark.parametrize(
    "column,values,compression",
    [("color", ["red", "cyan", "nope"], "none"), ("n", [0, 4, 8], "none"), ("id", [5, 300, 599], "zstd")],
)
def test_pypaimon_scan_uses_our_btree_index(tmp_path, column, values, compression):
    """Our files (Java's bytes, compressed blocks included) answer pypaimon 2.1's own scan."""
    from pypaimon.globalindex.indexed_split import IndexedSplit

    cat, name = color_table(tmp_path, DATA_EVOLUTION, commits=2)
    rows = table_rows(cat, name)
    opts = {**RPR, "btree-index.compression": compression, "btree-index.block-size": "1kb"}
    assert create_global_index(cat.get_table(f"db.{name}"), column, "btree", options=opts) > 0
    if compression != "none":  # the blocks that save an eighth are stored compressed
        root = os.path.join(str(tmp_path / "wh"), "db.db", name, "index")
        kinds = [
            BTreeIndexFile(KeyCodec("BIGINT"), os.path.join(root, e.index_file.file_name)).describe()[
                "block_compression"
            ]
            for e in _btree_entries(cat, name)
        ]
        assert any(k.get(compression) for k in kinds)
    t = cat.get_table(f"db.{name}")
    for v in values:
        for make, fn in [
            (lambda pb: pb.equal(column, v), lambda r: r[column] == v),
            (lambda pb: pb.less_than(column, v), lambda r: r[column] is not None and r[column] < v),
        ]:
            rb = t.new_read_builder()
            rb = rb.with_filter(make(rb.new_predicate_builder()))
            splits = rb.new_scan().plan().splits()
            assert all(isinstance(s, IndexedSplit) for s in splits)  # pypaimon planned from our index
            assert sorted_ids(rb.new_read().to_arrow(splits)) == expected_ids(rows, fn), v


def test_pypaimon_bloom_filter_files_are_read(tmp_path):
    """pypaimon can write a bloom filter into its btree files (Java's writer never does): our
    reader checks it and answers with the oracle's rows."""
    cat, name = color_table(tmp_path, DATA_EVOLUTION, commits=2)
    t = cat.get_table(f"db.{name}").copy({"btree-index.bloom-filter.enabled": "true"})
    assert t.create_global_index("color", index_type="btree") > 0
    root = os.path.join(str(tmp_path / "wh"), "db.db", name, "index")
    files = [
        BTreeIndexFile(KeyCodec("STRING"), os.path.join(root, e.index_file.file_name)) for e in index_entries(cat, name)
    ]
    assert all(f.footer.has_bloom for f in files)
    assert not any(f.may_contain(b"no such colour") for f in files)
    rows = table_rows(cat, name)
    for v in ["red", "nope"]:
        got, rep = read_with_index(cat.get_table(f"db.{name}"), pf.field("color") == v)
        assert sorted_ids(got) == expected_ids(rows, lambda r: r["color"] == v) and rep.global_indexes


@pytest.mark.spark
def test_spark_build_equals_in_process_build(tmp_path, spark):
    cat_a, name = color_table(tmp_path / "a", DATA_EVOLUTION, commits=3)
    cat_b, _ = color_table(tmp_path / "b", DATA_EVOLUTION, commits=3)
    opts = {"sorted-index.records-per-range": "70", "btree-index.compression": "zstd"}
    snap = cat_b.get_table(f"db.{name}").snapshot_manager().get_latest_snapshot().id
    na = create_global_index(cat_a.get_table(f"db.{name}"), "color", "btree", options=opts)
    nb = create_global_index(cat_b.get_table(f"db.{name}"), "color", "btree", options=opts, spark=spark)
    assert na == nb > 0
    assert cat_b.get_table(f"db.{name}").snapshot_manager().get_latest_snapshot().id == snap + 1  # one commit
    assert range_files(cat_a, name, str(tmp_path / "a" / "wh")) == range_files(cat_b, name, str(tmp_path / "b" / "wh"))
    rows = table_rows(cat_b, name)
    got, report = read_with_index(cat_b.get_table(f"db.{name}"), pf.field("color") > "m")
    assert (
        sorted_ids(got) == expected_ids(rows, lambda r: r["color"] is not None and r["color"] > "m")
        and report.global_indexes
    )
    assert create_global_index(cat_b.get_table(f"db.{name}"), "color", "btree", spark=spark) == 0


def test_pypaimon_btree_writer_differs_where_the_docs_say(tmp_path):
    """pypaimon 2.1's BTree writer, fed the rows in its sort order, against ours (Java's bytes):
    it merges -0.0 with 0.0 and skips the null bitmap's run optimisation; we read its file with
    its answers, and ours keep Java's two keys."""
    import struct

    from pypaimon.filesystem.local_file_io import LocalFileIO
    from pypaimon.globalindex.btree import BTreeIndexWriter
    from pypaimon.globalindex.key_serializer import create_serializer
    from pypaimon.schema.data_types import AtomicType

    from paimon_fast import globalindex as gi

    vals = [None] * 300 + [1.0, -0.0, 0.0, 2.0]
    order = sorted(zip(vals, range(len(vals))), key=lambda t: (t[0] is not None, t[0] or 0.0, t[1]))
    w = BTreeIndexWriter(LocalFileIO(), str(tmp_path), create_serializer(AtomicType("DOUBLE")))
    for v, r in order:
        w.write(v, r)
    theirs = (tmp_path / w.finish()[0].file_name).read_bytes()
    ow = gi.writer("DOUBLE", {}, index_type="btree")
    ow.write_batch(pa.array(vals, pa.float64()), np.arange(len(vals)))
    ours, _ = ow.finish()
    null_size = lambda b: struct.unpack_from("<i", b, len(b) - 52 + 40)[0]  # noqa: E731
    assert null_size(theirs) > 10 * null_size(ours)  # 300 consecutive nulls: one run in Java's bitmap
    f = pf.field("x")
    a = gi.reader("DOUBLE", theirs, {}, len(vals), index_type="btree")
    b = gi.reader("DOUBLE", ours, {}, len(vals), index_type="btree")
    assert a.evaluate(f.is_null()) == b.evaluate(f.is_null()) and len(a.evaluate(f.is_null())) == 300
    assert list(a.evaluate(f == 0.0)) == [301, 302] and list(b.evaluate(f == 0.0)) == [302]
    assert list(b.evaluate(f == -0.0)) == [301]
    assert list(a.evaluate(f >= 1.0)) == list(b.evaluate(f >= 1.0)) == [300, 303]
