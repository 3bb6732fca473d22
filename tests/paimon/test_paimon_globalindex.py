"""Global indexes inside Paimon tables (paimon_fast.paimon.create_global_index and the read path).

Tables are written with pypaimon 2.1 in temporary warehouses; expected rows come
from a plain-Python evaluation of the table's rows (to_pylist), never from our
filters.
"""

import datetime
import os
import random

import numpy as np
import pyarrow as pa
import pytest

pytest.importorskip("pypaimon")

import paimon_fast as pf  # noqa: E402
from paimon_fast.globalindex import writer  # noqa: E402
from paimon_fast.globalindex.format import build_files  # noqa: E402
from paimon_fast.globalindex.keys import KeyCodec  # noqa: E402
from paimon_fast.paimon import globalindex as pgi  # noqa: E402
from paimon_fast.paimon import globalindex_build as pgb  # noqa: E402
from paimon_fast.paimon import plan_with_index, read_with_index  # noqa: E402
from paimon_fast.paimon.globalindex import create_global_index  # noqa: E402

from tests.support.paimon_globalindex_support import (  # noqa: E402
    CASES,
    COLORS,
    DATA_EVOLUTION,
    KEY_TYPES,
    ROW_TRACKING,
    SCHEMA,
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


# ------------------------------------------------------------------ file layout
@pytest.mark.parametrize(
    "dtype,gen",
    [
        ("STRING", lambda rnd: rnd.choice([None, "a", "bb", "c", "dd", "é"])),
        ("INT", lambda rnd: rnd.choice([None, 1, -5, 7, 100, -(2**31)])),
        ("DOUBLE", lambda rnd: rnd.choice([None, 0.5, -0.0, 0.0, float("inf"), -3.25])),
    ],
)
def test_rotated_files_equal_one_writer_per_chunk(dtype, gen):
    """Files cut every N sorted records (nulls first, then key, then row id) are each
    byte-identical to the Java-exact writer fed that chunk alone."""
    rnd = random.Random(7)
    vals = [gen(rnd) for _ in range(700)]
    rids = np.array(rnd.sample(range(5000), 700), dtype=np.uint64)
    at = {"STRING": pa.string(), "INT": pa.int32(), "DOUBLE": pa.float64()}[dtype]
    arr = pa.array(vals, at)
    opts = {"bitmap-index.dictionary-block-size": "64 b"}
    w = writer(dtype, opts)
    files = build_files(KeyCodec(dtype), arr, rids, w.block_size, w.encoder, 61)

    import math

    def order(t):
        k, r = t
        if k is None:
            return (0, 0, 0, r)
        if dtype == "DOUBLE":  # Java's Double.compare: -0.0 before 0.0
            return (1, k, math.copysign(1.0, k), r)
        return (1, k, 0, r)

    recs = sorted(zip(vals, rids.tolist()), key=order)
    assert len(files) == -(-700 // 61)
    for i, (data, meta, n) in enumerate(files):
        chunk = recs[i * 61 : (i + 1) * 61]
        w2 = writer(dtype, opts)
        w2.write_batch(pa.array([k for k, _ in chunk], at), np.array([r for _, r in chunk], dtype=np.uint64))
        assert (data, meta, n) == (*w2.finish(), len(chunk)), i


def test_records_per_range_option():
    assert pgi.records_per_file({}) == 12_000_000
    assert pgi.records_per_file({"sorted-index.records-per-range": "10"}) == 12
    assert pgi.records_per_file({"btree-index.records-per-range": "5"}) == 6
    assert pgi.records_per_file({"btree-index.records-per-range": "5", "sorted-index.records-per-range": "10"}) == 12
    with pytest.raises(ValueError):
        pgi.records_per_file({"sorted-index.records-per-range": "0"})


@pytest.mark.parametrize(
    "options",
    [DATA_EVOLUTION, ROW_TRACKING, {**ROW_TRACKING, "deletion-vectors.enabled": "true"}],
    ids=["data-evolution", "row-tracking", "row-tracking+dv"],
)
def test_build_then_read_matches_oracle(tmp_path, options):
    cat, name = color_table(tmp_path, options)
    t = cat.get_table(f"db.{name}")
    added = create_global_index(t, "color", options={"sorted-index.records-per-range": "40"})
    entries = index_entries(cat, name)
    assert added == len(entries) > 0
    # one entry per file, all of the indexed field, row ranges within the table's rows
    ranges = {
        (e.index_file.global_index_meta.row_range_start, e.index_file.global_index_meta.row_range_end) for e in entries
    }
    covered = set()
    for a, b in ranges:
        covered |= set(range(a, b + 1))
    assert covered == set(range(600))
    assert all(e.index_file.row_count <= 48 for e in entries)
    rows = table_rows(cat, name)
    t = cat.get_table(f"db.{name}")
    for fast in (True, False):  # the fast path and pypaimon's planner + reader
        for make, fn in CASES:
            got, rep_ = read_with_index(t, make(), fast=fast)
            assert rep_.fast_path == fast, rep_.fallback_reason
            assert sorted_ids(got) == expected_ids(rows, fn), make()
            assert rep_.rows_returned == len(expected_ids(rows, fn))
    # an equality on the indexed column is answered by the global index, and says so
    got, report = read_with_index(t, pf.field("color") == "red")
    assert report.global_indexes and "color" in report.global_indexes[0]
    assert "global index used: color" in str(report)
    assert report.rows_selected < 600


def test_second_build_adds_nothing_and_appends_get_their_own_range(tmp_path):
    cat, name = color_table(tmp_path, DATA_EVOLUTION)
    t = cat.get_table(f"db.{name}")
    first = create_global_index(t, "color")
    before = index_entries(cat, name)
    assert create_global_index(cat.get_table(f"db.{name}"), "color") == 0
    assert len(index_entries(cat, name)) == len(before) == first
    append_batch(cat, name, color_batch(3))
    again = create_global_index(cat.get_table(f"db.{name}"), "color")
    after = index_entries(cat, name)
    assert again > 0 and len(after) == len(before) + again
    new = [e for e in after if e.index_file.file_name not in {b.index_file.file_name for b in before}]
    assert {e.index_file.global_index_meta.row_range_start for e in new} >= {600}
    assert all(e.index_file.global_index_meta.row_range_start >= 600 for e in new)
    rows = table_rows(cat, name)
    got, _ = read_with_index(cat.get_table(f"db.{name}"), pf.field("color") == "blue")
    assert sorted_ids(got) == expected_ids(rows, lambda r: r["color"] == "blue")


def test_killed_build_leaves_no_entries(tmp_path, monkeypatch):
    cat, name = color_table(tmp_path, DATA_EVOLUTION)
    t = cat.get_table(f"db.{name}")
    snap = t.snapshot_manager().get_latest_snapshot().id

    def boom(table, messages):
        assert messages
        raise KeyboardInterrupt("killed before commit")

    monkeypatch.setattr(pgi, "_commit", boom)
    with pytest.raises(KeyboardInterrupt):
        create_global_index(t, "color", options={"sorted-index.records-per-range": "50"})
    t = cat.get_table(f"db.{name}")
    assert t.snapshot_manager().get_latest_snapshot().id == snap
    assert index_entries(cat, name) == []
    index_dir = os.path.join(str(tmp_path / "wh"), "db.db", name, "index")
    assert not os.path.isdir(index_dir) or os.listdir(index_dir) == []
    monkeypatch.undo()
    assert create_global_index(t, "color") > 0  # a later build works and is complete
    rows = table_rows(cat, name)
    got, _ = read_with_index(cat.get_table(f"db.{name}"), pf.field("color") == "cyan")
    assert sorted_ids(got) == expected_ids(rows, lambda r: r["color"] == "cyan")


def test_partitions_argument_builds_only_those(tmp_path):
    cat, name = color_table(tmp_path, DATA_EVOLUTION)
    create_global_index(cat.get_table(f"db.{name}"), "color", partitions={"p": "y"})
    entries = index_entries(cat, name)
    assert entries and {e.partition.values[0] for e in entries} == {"y"}
    rows = table_rows(cat, name)
    # fast mode: only indexed rows (partition y) can be returned for the indexed column
    got, _ = read_with_index(cat.get_table(f"db.{name}"), pf.field("color") == "red")
    assert sorted_ids(got) == expected_ids(rows, lambda r: r["color"] == "red" and r["p"] == "y")


@pytest.mark.parametrize(
    "opts,mode",
    [
        ({}, "fast"),
        ({"scalar-index.search-mode": "fast"}, "fast"),
        ({"scalar-index.search-mode": "full"}, "full"),
        ({"scalar-index.search-mode": "detail"}, "detail"),
        ({"global-index.search-mode": "full"}, "full"),
        ({"global-index.search-mode": "full", "scalar-index.search-mode": "fast"}, "fast"),
    ],
)
def test_search_modes_after_append(tmp_path, opts, mode):
    """Rows appended after the build: ``fast`` answers from indexed rows only (as Java and
    pypaimon 2.1 do); ``full`` / ``detail`` also read and filter the new rows."""
    cat, name = color_table(tmp_path, DATA_EVOLUTION)
    create_global_index(cat.get_table(f"db.{name}"), "color")
    indexed = {r["id"] for r in table_rows(cat, name)}
    append_batch(cat, name, color_batch(3))
    append_batch(cat, name, color_batch(4))
    rows = table_rows(cat, name)
    t = with_options(cat, name, opts)
    assert pgi.search_mode(t) == mode
    for fast in (True, False):  # the fast path and pypaimon's planner + reader
        for make, fn in CASES:
            got, rep_ = read_with_index(t, make(), fast=fast)
            assert rep_.fast_path == fast, rep_.fallback_reason
            pred = make()
            if mode == "fast" and color_index_answers(pred):
                assert sorted_ids(got) == expected_ids(rows, fn, indexed), pred
            else:
                assert sorted_ids(got) == expected_ids(rows, fn), pred
    # pypaimon 2.1's own scan agrees
    rb = t.new_read_builder()
    rb = rb.with_filter(rb.new_predicate_builder().equal("color", "red"))
    theirs = sorted_ids(rb.new_read().to_arrow(rb.new_scan().plan().splits()))
    ours, _ = read_with_index(t, pf.field("color") == "red")
    assert sorted_ids(ours) == theirs


def test_row_tracking_without_data_evolution_reads_unindexed_rows(tmp_path):
    """Java reads no global index unless data evolution is on: new rows are always returned."""
    cat, name = color_table(tmp_path, ROW_TRACKING)
    create_global_index(cat.get_table(f"db.{name}"), "color")
    append_batch(cat, name, color_batch(3))
    rows = table_rows(cat, name)
    got, report = read_with_index(cat.get_table(f"db.{name}"), pf.field("color") == "red")
    assert sorted_ids(got) == expected_ids(rows, lambda r: r["color"] == "red")
    assert report.global_indexes
    _, _, rep = plan_with_index(cat.get_table(f"db.{name}"), pf.field("color") == "red")
    assert rep.rows_index_selected == sum(1 for r in rows if r["color"] == "red" and r["id"] < 600) + 200


def test_tables_without_row_tracking_keep_todays_path(tmp_path):
    cat, name = color_table(tmp_path, {})
    with pytest.raises(ValueError, match="row-tracking"):
        create_global_index(cat.get_table(f"db.{name}"), "color")
    got, report = read_with_index(cat.get_table(f"db.{name}"), pf.field("color") == "red")
    assert not report.global_indexes
    assert sorted_ids(got) == expected_ids(table_rows(cat, name), lambda r: r["color"] == "red")


def test_every_key_type(tmp_path):
    schema = pa.schema([("id", pa.int64())] + [(n, t) for n, t, _, _ in KEY_TYPES])
    wh = str(tmp_path / "wh")
    cat = new_table(wh, "k", schema, DATA_EVOLUTION)
    rnd = random.Random(3)
    for k in range(2):
        cols = {"id": pa.array(range(k * 150, (k + 1) * 150), pa.int64())}
        for n, t, gen, _ in KEY_TYPES:
            cols[n] = pa.array([None if rnd.random() < 0.1 else gen(rnd) for _ in range(150)], t)
        append_batch(cat, "k", pa.table(cols, schema=schema))
    for n, _, _, _ in KEY_TYPES:
        assert create_global_index(cat.get_table("db.k"), n) > 0, n
    rows = table_rows(cat, "k")
    t = cat.get_table("db.k")
    for n, _, _, probe in KEY_TYPES:
        for pred, fn in [
            (pf.field(n) == probe, lambda r, n=n, v=probe: r[n] is not None and r[n] == v),
            (pf.field(n).is_null(), lambda r, n=n: r[n] is None),
            (pf.field(n) >= probe, lambda r, n=n, v=probe: r[n] is not None and r[n] >= v),
        ]:
            got, report = read_with_index(t, pred)
            assert sorted_ids(got) == expected_ids(rows, fn), (n, pred)
            assert any(u.startswith(n + " ") for u in report.global_indexes), (n, pred, report.global_indexes)


# ------------------------------------------------------------------ interop with pypaimon 2.1
@pytest.mark.parametrize("column,values", [("color", COLORS + ["nope"]), ("n", list(range(0, 10)))])
def test_pypaimon_scan_uses_our_index(tmp_path, column, values):
    cat, name = color_table(tmp_path, DATA_EVOLUTION)
    rows = table_rows(cat, name)
    assert (
        create_global_index(cat.get_table(f"db.{name}"), column, options={"sorted-index.records-per-range": "60"}) > 0
    )
    t = cat.get_table(f"db.{name}")
    for v in values:
        rb = t.new_read_builder()
        rb = rb.with_filter(rb.new_predicate_builder().equal(column, v))
        splits = rb.new_scan().plan().splits()
        from pypaimon.globalindex.indexed_split import IndexedSplit

        assert all(isinstance(s, IndexedSplit) for s in splits)  # pypaimon planned from our index
        got = rb.new_read().to_arrow(splits)
        assert sorted_ids(got) == expected_ids(rows, lambda r, v=v: r[column] == v), v


def test_our_reads_use_pypaimons_index(tmp_path):
    cat, name = color_table(tmp_path, DATA_EVOLUTION)
    rows = table_rows(cat, name)
    assert cat.get_table(f"db.{name}").create_global_index("color", index_type="bitmap") > 0
    t = cat.get_table(f"db.{name}")
    for fast in (True, False):  # the fast path and pypaimon's planner + reader
        for make, fn in CASES:
            got, rep_ = read_with_index(t, make(), fast=fast)
            assert rep_.fast_path == fast, rep_.fallback_reason
            assert sorted_ids(got) == expected_ids(rows, fn), make()
    got, report = read_with_index(t, pf.field("color") == "red")
    assert report.global_indexes and report.rows_selected == len(expected_ids(rows, lambda r: r["color"] == "red"))
    # and pypaimon's own build then finds nothing left to index after ours, and vice versa
    assert create_global_index(t, "color") == 0


def test_cli_create_global_index(tmp_path, capsys):
    from paimon_fast.cli import main

    cat, name = color_table(tmp_path, DATA_EVOLUTION)
    wh = str(tmp_path / "wh")
    rc = main(
        ["paimon", "create-global-index", wh, f"db.{name}", "color", "--option", "sorted-index.records-per-range=100"]
    )
    out = capsys.readouterr()
    assert rc in (0, None)
    assert "index files added" in out.out
    assert len(index_entries(cat, name)) > 0
    rows = table_rows(cat, name)
    got, _ = read_with_index(cat.get_table(f"db.{name}"), pf.field("color") == "red")
    assert sorted_ids(got) == expected_ids(rows, lambda r: r["color"] == "red")


def test_direct_parquet_read_builds_what_pypaimons_reader_builds(tmp_path, monkeypatch):
    """The build reads local Parquet files directly; the bytes equal a build through pypaimon's reader."""

    def build(sub, direct):
        cat, name = color_table(tmp_path / sub, DATA_EVOLUTION)
        if not direct:
            monkeypatch.setattr(pgb, "direct_read_plan", lambda *a: None)
        create_global_index(cat.get_table(f"db.{name}"), "color", options={"sorted-index.records-per-range": "30"})
        monkeypatch.undo()
        out = {}
        root = os.path.join(str(tmp_path / sub / "wh"), "db.db", name, "index")
        for e in index_entries(cat, name):
            m = e.index_file.global_index_meta
            with open(os.path.join(root, e.index_file.file_name), "rb") as f:
                out.setdefault((m.row_range_start, m.row_range_end), []).append(
                    (f.read(), m.index_meta, e.index_file.row_count)
                )
        return {k: sorted(v) for k, v in out.items()}

    a, b = build("a", True), build("b", False)
    assert a == b and len(a) > 1


@pytest.mark.parametrize(
    "column,added_type,values", [("tag", pa.string(), ["u", None, "v"]), ("k", pa.int32(), [7, None, -2])]
)
def test_files_written_before_a_column_was_added(tmp_path, monkeypatch, column, added_type, values):
    """Files written before the column existed hold none of it: their rows are null rows of
    the index.  The direct build (each file grouped as it is read, then merged) writes the
    bytes of a build through pypaimon's reader, and reads answer as pypaimon's rows do."""
    from pypaimon.schema.data_types import AtomicType
    from pypaimon.schema.schema_change import SchemaChange

    def build(sub, direct):
        cat, name = color_table(tmp_path / sub, DATA_EVOLUTION, commits=2, partitioned=False)
        paimon_type = "STRING" if added_type == pa.string() else "INT"
        cat.alter_table(f"db.{name}", [SchemaChange.add_column(column, AtomicType(paimon_type))], False)
        t = cat.get_table(f"db.{name}")
        schema = pa.schema(list(SCHEMA) + [(column, added_type)])
        for k in (2, 3):
            b = color_batch(k)
            append_batch(
                cat,
                name,
                pa.table(b.columns + [pa.array([values[i % 3] for i in range(b.num_rows)], added_type)], schema=schema),
            )
        if not direct:
            monkeypatch.setattr(pgb, "direct_read_plan", lambda *a: None)
        t = cat.get_table(f"db.{name}")
        assert create_global_index(t, column) >= 1
        monkeypatch.undo()
        return cat, name, range_files(cat, name, str(tmp_path / sub / "wh"))

    cat, name, a = build("a", True)
    _, _, b = build("b", False)
    assert a == b and a
    rows = table_rows(cat, name)
    assert sum(r[column] is None for r in rows) > 400  # the first two commits' rows
    t = cat.get_table(f"db.{name}")
    for pred, want in (
        (pf.field(column) == values[0], lambda r: r[column] == values[0]),
        (pf.field(column).is_null(), lambda r: r[column] is None),
    ):
        got, rep = read_with_index(t, pred)
        assert sorted_ids(got) == sorted(r["id"] for r in rows if want(r))
        assert "global index used" in str(rep)


def test_direct_build_takes_a_splits_files_in_any_order(tmp_path, monkeypatch):
    """A split may list its files out of row-id order: the direct build groups each file and
    merges them in row-id order, writing the bytes of a build through pypaimon's reader."""
    real = pgb.direct_read_plan

    def reversed_plan(*a):
        got = real(*a)
        return None if got is None else list(reversed(got))

    def build(sub, plan):
        cat, name = color_table(tmp_path / sub, DATA_EVOLUTION, commits=4, partitioned=False)
        monkeypatch.setattr(pgb, "direct_read_plan", plan)
        create_global_index(cat.get_table(f"db.{name}"), "color")
        monkeypatch.undo()
        return range_files(cat, name, str(tmp_path / sub / "wh"))

    calls = []
    a = build("a", lambda *x: calls.append(1) or reversed_plan(*x))
    b = build("b", lambda *x: None)
    assert calls and a == b and a


def test_direct_range_read_equals_pypaimons_reader(tmp_path):
    """Row ranges read straight from the Parquet files: the rows pypaimon reads for the same splits."""
    from pypaimon.utils.range import Range

    cat, name = color_table(tmp_path, DATA_EVOLUTION)
    t = cat.get_table(f"db.{name}")
    ranges = [Range(0, 0), Range(3, 9), Range(150, 420), Range(599, 599)]
    splits = t.new_read_builder().new_scan().with_row_ranges(ranges).plan().splits()
    cols = ["n", "id", "color"]
    mine = pgi.read_ranges_direct(t, splits, cols)
    theirs = t.new_read_builder().with_projection(cols).new_read().to_arrow(splits)
    assert mine is not None and mine.schema == theirs.schema
    key = lambda r: r["id"]  # noqa: E731
    assert sorted(mine.to_pylist(), key=key) == sorted(theirs.to_pylist(), key=key)
    assert mine.num_rows == 1 + 7 + 271 + 1


@pytest.mark.spark
def test_spark_build_equals_in_process_build(tmp_path, spark):
    """Executors read, sort and write each row range; the driver commits once: the same
    files (bytes, metas, record counts, row ranges) as the in-process build."""
    cat_a, name = color_table(tmp_path / "a", DATA_EVOLUTION, commits=4)
    cat_b, _ = color_table(tmp_path / "b", DATA_EVOLUTION, commits=4)
    opts = {"sorted-index.records-per-range": "70"}
    snap = cat_b.get_table(f"db.{name}").snapshot_manager().get_latest_snapshot().id
    seen = []
    na = create_global_index(cat_a.get_table(f"db.{name}"), "color", options=opts)
    nb = create_global_index(
        cat_b.get_table(f"db.{name}"), "color", options=opts, spark=spark, progress=lambda *a: seen.append(a)
    )
    assert na == nb > 0 and seen
    assert cat_b.get_table(f"db.{name}").snapshot_manager().get_latest_snapshot().id == snap + 1  # one commit
    assert range_files(cat_a, name, str(tmp_path / "a" / "wh")) == range_files(cat_b, name, str(tmp_path / "b" / "wh"))
    rows = table_rows(cat_b, name)
    got, report = read_with_index(cat_b.get_table(f"db.{name}"), pf.field("color") == "red")
    assert sorted_ids(got) == expected_ids(rows, lambda r: r["color"] == "red") and report.global_indexes
    assert create_global_index(cat_b.get_table(f"db.{name}"), "color", spark=spark) == 0


_HEAP_SCRIPT = r"""
import ctypes, numpy as np
from paimon_fast.paimon.globalindex_spark import worker_heap

class MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]

mallinfo2 = ctypes.CDLL(None).mallinfo2
mallinfo2.restype = MallInfo2
def mapped():
    return mallinfo2().hblkhd

def grow(enabled):  # bytes mapped for, and heap bytes kept after, a 64 MB buffer
    before = mapped()
    with worker_heap(enabled):
        a = np.ones(8 << 20, dtype=np.int64)
        during = mapped() - before
        del a
    return during, mallinfo2().fordblks

off_during, _ = grow(False)
on_during, kept = grow(True)
after = mapped()
b = np.ones(8 << 20, dtype=np.int64)     # fits in the kept heap: reused
reused = mapped() - after
c = np.ones(16 << 20, dtype=np.int64)    # larger than the kept heap: mapped, as without worker_heap
print(off_during, on_during, kept, reused, mapped() - after)
"""


def test_worker_heap_keeps_build_buffers_in_the_heap(tmp_path):
    """Inside ``worker_heap`` a large buffer comes from the heap and stays there once freed
    (glibc), for the next buffer to reuse; a larger one outside (and any with the option off)
    is mapped as usual.  In a fresh interpreter, since the heap setting lasts for the process."""
    import ctypes
    import subprocess
    import sys

    try:
        ctypes.CDLL(None).mallinfo2
    except AttributeError:
        pytest.skip("glibc before 2.33 (no mallinfo2) or another C library: nothing to observe")
    root = os.path.dirname(os.path.dirname(os.path.abspath(pf.__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p))
    off_during, on_during, kept, reused, outside = map(
        int,
        subprocess.run(
            [sys.executable, "-c", _HEAP_SCRIPT], env=env, capture_output=True, text=True, check=True
        ).stdout.split(),
    )
    mb = 64 << 20
    assert off_during >= mb  # option off: mapped
    assert on_during < mb <= kept  # inside: from the heap, and the heap keeps it when freed
    assert reused == 0  # the kept heap serves the next buffer of that size
    assert outside >= 2 * mb  # a larger one is mapped: nothing else changed


def test_keep_worker_heap_option_is_checked():
    from paimon_fast.errors import OptionError
    from paimon_fast.paimon.globalindex_spark import _keep_heap_option

    assert _keep_heap_option({}) is True
    assert _keep_heap_option({"paimon-fast.global-index.keep-worker-heap": " False "}) is False
    with pytest.raises(OptionError, match="keep-worker-heap must be true or false"):
        _keep_heap_option({"paimon-fast.global-index.keep-worker-heap": "sometimes"})


# ------------------------------------------------------------------ multivalue (ARRAY columns)
ARRAY_SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("tags", pa.list_(pa.string())),
        ("nums", pa.list_(pa.int32())),
        ("days", pa.list_(pa.date32())),
        ("p", pa.string()),
    ]
)
TAGS = ["a", "b", "c", "dd", "é", ""]


def _array_batch(k, n=150):
    rnd = random.Random(100 + k)

    def arr(gen):
        r = rnd.random()
        if r < 0.05:
            return None
        if r < 0.1:
            return []
        return [None if rnd.random() < 0.05 else gen() for _ in range(rnd.randrange(1, 4))]

    ids = range(k * n, (k + 1) * n)
    return pa.table(
        {
            "id": pa.array(list(ids), pa.int64()),
            "tags": [arr(lambda: rnd.choice(TAGS)) for _ in ids],
            "nums": [arr(lambda: rnd.randrange(-3, 6)) for _ in ids],
            "days": [
                arr(lambda: datetime.date(2024, 1, 1) + datetime.timedelta(days=rnd.randrange(0, 5))) for _ in ids
            ],
            "p": ["x" if i % 4 else "y" for i in ids],
        },
        schema=ARRAY_SCHEMA,
    )


def _array_table(tmp_path, options=DATA_EVOLUTION, commits=3):
    wh = str(tmp_path / "wh")
    cat = new_table(wh, "a", ARRAY_SCHEMA, options, ["p"])
    for k in range(commits):
        append_batch(cat, "a", _array_batch(k))
    return cat


def _has(r, c, v):
    return r[c] is not None and v is not None and v in r[c]


ARRAY_CASES = [
    (lambda: pf.field("tags").array_contains("b"), lambda r: _has(r, "tags", "b")),
    (lambda: pf.field("tags").array_contains(""), lambda r: _has(r, "tags", "")),
    (lambda: pf.field("tags").array_contains("zz"), lambda r: False),
    (lambda: pf.field("tags").array_contains(None), lambda r: False),
    (lambda: pf.field("tags").arrays_overlap(["a", "é", None]), lambda r: _has(r, "tags", "a") or _has(r, "tags", "é")),
    (lambda: pf.field("tags").arrays_overlap([]), lambda r: False),
    (lambda: pf.field("tags").array_contains_all(["a", "b"]), lambda r: _has(r, "tags", "a") and _has(r, "tags", "b")),
    (lambda: pf.field("tags").array_contains_all(["a", None]), lambda r: False),
    (lambda: pf.field("nums").array_contains(-3), lambda r: _has(r, "nums", -3)),
    (lambda: pf.field("nums").arrays_overlap([0, 5]), lambda r: _has(r, "nums", 0) or _has(r, "nums", 5)),
    (
        lambda: pf.field("days").array_contains(datetime.date(2024, 1, 3)),
        lambda r: _has(r, "days", datetime.date(2024, 1, 3)),
    ),
    (
        lambda: pf.field("nums").array_contains(2) & (pf.field("id") < 200),
        lambda r: _has(r, "nums", 2) and r["id"] < 200,
    ),
    (
        lambda: pf.field("tags").array_contains("c") | pf.field("nums").array_contains(1),
        lambda r: _has(r, "tags", "c") or _has(r, "nums", 1),
    ),
    (
        lambda: pf.field("tags").array_contains("c") | (pf.field("id") == 3),
        lambda r: _has(r, "tags", "c") or r["id"] == 3,
    ),
]


@pytest.mark.parametrize("options", [DATA_EVOLUTION, ROW_TRACKING], ids=["data-evolution", "row-tracking"])
def test_multivalue_build_then_read(tmp_path, options):
    cat = _array_table(tmp_path, options)
    per = 64
    for col in ("tags", "nums", "days"):
        assert (
            create_global_index(
                cat.get_table("db.a"), col, "multivalue", options={"sorted-index.records-per-range": str(per)}
            )
            > 0
        )
    entries = index_entries(cat, "a")
    assert {e.index_file.index_type for e in entries} == {"multivalue"}
    rows = table_rows(cat, "a")
    by_field = {}
    for e in entries:
        m = e.index_file.global_index_meta
        # Java's shard build: ranges inside one aligned block of `per` row ids, row count = the range's rows
        assert m.row_range_start // per == m.row_range_end // per
        assert e.index_file.row_count == m.row_range_end - m.row_range_start + 1
        by_field.setdefault(m.index_field_id, set()).update(range(m.row_range_start, m.row_range_end + 1))
    assert all(v == set(range(450)) for v in by_field.values()) and len(by_field) == 3
    t = cat.get_table("db.a")
    for fast in (True, False):  # the fast path and pypaimon's planner + reader
        for make, fn in ARRAY_CASES:
            got, rep_ = read_with_index(t, make(), fast=fast)
            assert fast or not rep_.fast_path  # (the fast path takes no ARRAY columns: it falls back)
            assert sorted_ids(got) == expected_ids(rows, fn), make()
    got, report = read_with_index(t, pf.field("tags").array_contains("b"))
    assert any("multivalue" in u for u in report.global_indexes)
    assert report.rows_selected < 450


def test_multivalue_files_equal_the_writer_per_shard(tmp_path):
    """Each shard's file is what the Java-exact multivalue writer makes of that shard's rows alone."""
    from paimon_fast.globalindex import writer as gi_writer

    cat = _array_table(tmp_path)
    assert (
        create_global_index(
            cat.get_table("db.a"),
            "tags",
            "multivalue",
            options={"sorted-index.records-per-range": "50", "multivalue-index.dictionary-block-size": "32 b"},
        )
        > 0
    )
    t = cat.get_table("db.a")
    rb = t.new_read_builder().with_projection(["tags", "_ROW_ID"])
    full = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    by_rid = dict(zip(full.column("_ROW_ID").to_pylist(), full.column("tags").to_pylist()))
    root = os.path.join(str(tmp_path / "wh"), "db.db", "a", "index")
    for e in index_entries(cat, "a"):
        m = e.index_file.global_index_meta
        rids = [r for r in range(m.row_range_start, m.row_range_end + 1) if r in by_rid]
        w = gi_writer("ARRAY<STRING>", {"multivalue-index.dictionary-block-size": "32 b"}, index_type="multivalue")
        w.write_batch(
            pa.array([by_rid[r] for r in rids], pa.list_(pa.string())),
            np.array([r - m.row_range_start for r in rids], dtype=np.uint64),
        )
        data, meta = w.finish()
        with open(os.path.join(root, e.index_file.file_name), "rb") as f:
            assert f.read() == data
        assert m.index_meta == meta


def test_multivalue_search_modes_after_append(tmp_path):
    cat = _array_table(tmp_path)
    create_global_index(cat.get_table("db.a"), "tags", "multivalue")
    indexed = {r["id"] for r in table_rows(cat, "a")}
    append_batch(cat, "a", _array_batch(5))
    rows = table_rows(cat, "a")
    fast = cat.get_table("db.a")
    full = fast.copy({"scalar-index.search-mode": "full"})
    pred, fn = pf.field("tags").array_contains("a"), lambda r: _has(r, "tags", "a")
    assert sorted_ids(read_with_index(fast, pred)[0]) == expected_ids(rows, fn, indexed)
    assert sorted_ids(read_with_index(full, pred)[0]) == expected_ids(rows, fn)
    assert len(expected_ids(rows, fn)) > len(expected_ids(rows, fn, indexed))  # the modes differ here
    # an incremental build indexes the appended rows; then fast sees them
    assert create_global_index(cat.get_table("db.a"), "tags", "multivalue") > 0
    assert sorted_ids(read_with_index(cat.get_table("db.a"), pred)[0]) == expected_ids(rows, fn)


@pytest.mark.spark
def test_multivalue_spark_build_equals_in_process(tmp_path, spark):
    cat_a = _array_table(tmp_path / "a")
    cat_b = _array_table(tmp_path / "b")
    opts = {"sorted-index.records-per-range": "40"}
    na = create_global_index(cat_a.get_table("db.a"), "nums", "multivalue", options=opts)
    nb = create_global_index(cat_b.get_table("db.a"), "nums", "multivalue", options=opts, spark=spark)
    assert na == nb > 0
    assert range_files(cat_a, "a", str(tmp_path / "a" / "wh")) == range_files(cat_b, "a", str(tmp_path / "b" / "wh"))


def test_global_index_enabled_false_reads_without_it(tmp_path):
    cat, name = color_table(tmp_path, DATA_EVOLUTION)
    create_global_index(cat.get_table(f"db.{name}"), "color")
    append_batch(cat, name, color_batch(3))
    rows = table_rows(cat, name)
    t = cat.get_table(f"db.{name}").copy({"global-index.enabled": "false"})
    got, report = read_with_index(t, pf.field("color") == "red")
    assert not report.global_indexes
    # appended rows too: no index, no fast mode
    assert sorted_ids(got) == expected_ids(rows, lambda r: r["color"] == "red")


def _delete_row_ids(cat, name, row_ids):
    from pypaimon.write.table_delete import TableDeleteByRowId

    t = cat.get_table(f"db.{name}")
    msgs = TableDeleteByRowId(t).delete(list(row_ids))
    commit = t.new_batch_write_builder().new_commit()
    commit.commit(msgs)
    commit.close()


def test_deletion_vectors_before_and_after_the_build(tmp_path):
    """Rows deleted (deletion vectors) before the build are not indexed; rows deleted after it
    are indexed but never returned; expected rows = pypaimon's full read, filtered in Python."""
    opts = {**DATA_EVOLUTION, "deletion-vectors.enabled": "true"}
    cat, name = color_table(tmp_path, opts)
    rnd = random.Random(5)
    _delete_row_ids(cat, name, rnd.sample(range(600), 60))
    assert len(table_rows(cat, name)) == 540
    assert (
        create_global_index(cat.get_table(f"db.{name}"), "color", options={"sorted-index.records-per-range": "50"}) > 0
    )
    # the deleted rows are in no bitmap: the entries' record counts add up to the live rows
    assert sum(e.index_file.row_count for e in index_entries(cat, name)) == 540
    _delete_row_ids(cat, name, rnd.sample(range(600), 60))
    rows = table_rows(cat, name)
    assert 480 <= len(rows) < 540
    t = cat.get_table(f"db.{name}")
    for fast in (True, False):  # the fast path and pypaimon's planner + reader
        for make, fn in CASES:
            got, rep_ = read_with_index(t, make(), fast=fast)
            assert rep_.fast_path == fast, rep_.fallback_reason
            assert sorted_ids(got) == expected_ids(rows, fn), make()


def test_files_storing_row_ids_are_not_mapped_by_position(tmp_path):
    """A data file that carries a physical _ROW_ID column (Java writes one on compaction): its
    row ids are not first row id + position, so neither read path maps global answers into
    it by position; the rows still match the oracle."""
    import glob

    import pyarrow.parquet as pq

    cat, name = color_table(tmp_path, ROW_TRACKING, partitioned=False)
    create_global_index(cat.get_table(f"db.{name}"), "color")
    rows = table_rows(cat, name)
    t = cat.get_table(f"db.{name}")
    first = {f.file_name: f.first_row_id for s in t.new_read_builder().new_scan().plan().splits() for f in s.files}
    path = sorted(glob.glob(os.path.join(str(tmp_path / "wh"), "db.db", name, "bucket-0", "*.parquet")))[0]
    data = pq.read_table(path)
    fr = first[os.path.basename(path)]
    pq.write_table(data.append_column("_ROW_ID", pa.array(range(fr, fr + data.num_rows), pa.int64())), path)
    for fast in (True, False):
        got, rep = read_with_index(cat.get_table(f"db.{name}"), pf.field("color") == "red", fast=fast)
        assert not rep.fast_path and (not fast or "_ROW_ID" in rep.fallback_reason)
        assert sorted_ids(got) == expected_ids(rows, lambda r: r["color"] == "red")
        assert rep.global_indexes  # still used for the other files


# ------------------------------------------------------------------ Spark: a row range split over tasks
def _split_table(tmp_path, arrays):
    """Commits 0-1 write partition x only and 2-3 partition y only (each partition: one row
    range of two data files, which the Spark build splits), commit 4 writes both (ranges of
    one file each, built in one task)."""
    schema = ARRAY_SCHEMA if arrays else SCHEMA
    name = "a" if arrays else "t"
    cat = new_table(str(tmp_path / "wh"), name, schema, DATA_EVOLUTION, ["p"])
    for k in range(5):
        b = _array_batch(k) if arrays else color_batch(k)
        if k < 4:
            b = b.set_column(b.schema.get_field_index("p"), "p", pa.array(["x" if k < 2 else "y"] * b.num_rows))
        append_batch(cat, name, b)
    return cat, name


def _jobs_run(spark, fn):
    """``(fn(), number of Spark jobs it ran)``."""
    sc = spark.sparkContext
    group = f"pf-gi-split-{random.random()}"
    sc.setJobGroup(group, "global index split build")
    try:
        out = fn()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    return out, len(sc.statusTracker().getJobIdsForGroup(group))


@pytest.mark.spark
@pytest.mark.parametrize(
    "column,index_type,per_range",
    [
        ("color", "bitmap", "150"),
        ("n", "bitmap", "1000"),
        ("tags", "multivalue", "1000"),
        ("nums", "multivalue", "1000"),
    ],
)
def test_spark_split_range_equals_in_process_build(tmp_path, spark, column, index_type, per_range):
    """Ranges of several data files read and sorted by several tasks and merged by one: the
    same files (bytes, metas, record counts, row ranges) as the in-process build; a build
    killed before its commit leaves no entries and no exchange files, and running it again
    adds each file once."""
    arrays = index_type == "multivalue"
    cat_a, name = _split_table(tmp_path / "a", arrays)
    cat_b, _ = _split_table(tmp_path / "b", arrays)
    opts = {"sorted-index.records-per-range": per_range}
    na = create_global_index(cat_a.get_table(f"db.{name}"), column, index_type, options=opts)
    split = {**opts, "paimon-fast.global-index.split-rows": "50"}
    if column == "n":  # the workers' allocations as usual: the same files
        split["paimon-fast.global-index.keep-worker-heap"] = "false"
    index_dir = str(tmp_path / "b" / "wh" / "db.db" / name / "index")

    def boom(table, messages):
        raise KeyboardInterrupt("killed before commit")

    pgi_commit = pgi._commit
    pgi._commit = boom
    try:
        with pytest.raises(KeyboardInterrupt):
            create_global_index(cat_b.get_table(f"db.{name}"), column, index_type, options=split, spark=spark)
    finally:
        pgi._commit = pgi_commit
    assert index_entries(cat_b, name) == []
    assert not os.path.isdir(index_dir) or os.listdir(index_dir) == []
    nb, jobs = _jobs_run(
        spark,
        lambda: create_global_index(cat_b.get_table(f"db.{name}"), column, index_type, options=split, spark=spark),
    )
    assert jobs == 2  # read + sort pieces, then merge: the split happened
    assert na == nb > 0
    assert range_files(cat_a, name, str(tmp_path / "a" / "wh")) == range_files(cat_b, name, str(tmp_path / "b" / "wh"))
    assert len(index_entries(cat_b, name)) == nb and len(os.listdir(index_dir)) == nb  # no exchange files left
    assert create_global_index(cat_b.get_table(f"db.{name}"), column, index_type, options=split, spark=spark) == 0
    rows = table_rows(cat_b, name)
    v = {"color": "red", "n": 3, "tags": "b", "nums": 2}[column]
    if arrays:
        pred, fn = pf.field(column).array_contains(v), lambda r: _has(r, column, v)
    else:
        pred, fn = pf.field(column) == v, lambda r: r[column] == v
    got, report = read_with_index(cat_b.get_table(f"db.{name}"), pred)
    assert sorted_ids(got) == expected_ids(rows, fn) and report.global_indexes


def test_split_plan_groups_consecutive_files():
    from paimon_fast.errors import OptionError
    from paimon_fast.paimon.globalindex_spark import OPT_SPLIT_ROWS, _pieces, _split_rows

    files = [("c", 200, 100, "s"), ("a", 0, 100, "s"), ("b", 100, 100, "s"), ("d", 300, 100, "s")]
    spec = {"start": 50, "end": 349, "files": files}  # 300 rows: 50 + 100 + 100 + 50
    assert [[f[0] for f in g] for g in _pieces(spec, 150, 1000, "bitmap")] == [["a", "b"], ["c", "d"]]
    assert [[f[0] for f in g] for g in _pieces(spec, 1, 1000, "bitmap")] == [["a"], ["b"], ["c"], ["d"]]
    assert _pieces(spec, 300, 1000, "bitmap") is None  # one piece: one task
    assert _pieces(spec, 150, 1000, "multivalue") is not None
    assert _pieces(spec, 150, 200, "multivalue") is None  # several shards: one task
    assert _split_rows({}) == 0 and _split_rows({OPT_SPLIT_ROWS: " 7 "}) == 7
    for bad in ("0", "-3", "many"):
        with pytest.raises(OptionError, match="split-rows"):
            _split_rows({OPT_SPLIT_ROWS: bad})


@pytest.mark.parametrize("dtype,values", [("STRING", ["b", None, "a", "b", None]), ("INT", [3, None, 1, 3, -7])])
@pytest.mark.parametrize("rids", [[0, 1, 2, 3, 4], [4, 1, 2, 0, 3]], ids=["ascending", "shuffled"])
def test_split_runs_round_trip(tmp_path, dtype, values, rids):
    """A piece's grouping survives its Arrow IPC run (the non-null row ids only when known)."""
    from paimon_fast.io.fs import Store
    from paimon_fast.paimon.globalindex_spark import _read_run, _write_run

    arr = pa.array(values, pa.string() if dtype == "STRING" else pa.int32())
    g, n = pgb.range_groups(dtype, arr, np.array(rids, np.uint64))
    spec = {"task": 3, "piece": 1}
    _write_run(Store(), str(tmp_path), spec, (g, n))
    h, m = _read_run(Store(), str(tmp_path), spec, 1)
    assert m == n == 5 and (h.nonnull is None) == (rids != sorted(rids))
    for f in g.__slots__:
        a, b = getattr(g, f), getattr(h, f)
        assert (a is None) == (b is None), f
        if a is not None:
            np.testing.assert_array_equal(a, b, err_msg=f)
    assert _read_run(Store(), str(tmp_path), spec, 0) is None  # a piece without rows writes no run


def test_global_index_read_at_the_planned_snapshot(tmp_path, monkeypatch):
    """A commit landing between planning and reading the index manifest does not mix two
    snapshots: the global indexes are those of the snapshot the files were planned from."""
    from pypaimon.snapshot.snapshot_manager import SnapshotManager

    from paimon_fast.paimon.fastpath import clear_plan_cache

    cat, name = color_table(tmp_path, DATA_EVOLUTION)
    t = cat.get_table(f"db.{name}")
    before_build = t.snapshot_manager().get_latest_snapshot()
    assert create_global_index(t, "color") > 0
    rows = table_rows(cat, name)
    t = cat.get_table(f"db.{name}")
    planned = t.snapshot_manager().get_latest_snapshot()
    assert planned.id > before_build.id
    # the first look at the latest snapshot (the planner's) sees the indexed one; any later
    # look sees the snapshot from before the build (no index)
    calls = []

    def latest(self):
        calls.append(1)
        return planned if len(calls) == 1 else before_build

    clear_plan_cache()
    monkeypatch.setattr(SnapshotManager, "get_latest_snapshot", latest)
    got, report = read_with_index(t, pf.field("color") == "blue")
    assert report.global_indexes, report
    assert sorted_ids(got) == expected_ids(rows, lambda r: r["color"] == "blue")


def test_time_travel_reads_that_snapshots_global_indexes(tmp_path):
    """A scan pinned to an older snapshot (``scan.snapshot-id``) uses the global indexes that
    snapshot lists, as Java's and pypaimon's scans do, not the latest ones: rows indexed only
    by a later build stay unindexed there (``fast`` mode leaves them out)."""
    cat, name = color_table(tmp_path, DATA_EVOLUTION)
    create_global_index(cat.get_table(f"db.{name}"), "color")
    indexed_then = {r["id"] for r in table_rows(cat, name)}
    append_batch(cat, name, color_batch(3))
    old = cat.get_table(f"db.{name}").snapshot_manager().get_latest_snapshot()
    rows_then = table_rows(cat, name)
    assert create_global_index(cat.get_table(f"db.{name}"), "color") > 0  # indexes the appended rows
    append_batch(cat, name, color_batch(4))
    t = cat.get_table(f"db.{name}").copy({"scan.snapshot-id": str(old.id)})
    for make, fn in CASES:
        pred = make()
        got, rep_ = read_with_index(t, pred)
        assert not rep_.fast_path  # time travel: pypaimon's planner
        if color_index_answers(pred):
            assert sorted_ids(got) == expected_ids(rows_then, fn, indexed_then), pred
        else:
            assert sorted_ids(got) == expected_ids(rows_then, fn), pred
    rb = t.new_read_builder()
    rb = rb.with_filter(rb.new_predicate_builder().equal("color", "red"))
    theirs = sorted_ids(rb.new_read().to_arrow(rb.new_scan().plan().splits()))
    ours, _ = read_with_index(t, pf.field("color") == "red")
    assert sorted_ids(ours) == theirs  # pypaimon 2.1's own scan of that snapshot agrees


@pytest.mark.parametrize("local", [True, False])
def test_stale_runs_of_a_killed_split_build_are_removed(tmp_path, local):
    """A split build first removes the exchange directories a killed driver left (nothing
    written for a day, or empty), and keeps a running build's and the index files."""
    import time

    import pyarrow.fs as pafs

    from paimon_fast.io.fs import Store
    from paimon_fast.paimon.globalindex_spark import STALE_RUNS_SECONDS, drop_stale_runs

    root = tmp_path / "index"
    old_t = time.time() - STALE_RUNS_SECONDS - 60
    for rel, t in (
        (".runs-0ld/3-0.arrow", old_t),
        (".runs-0ld/3-1.arrow", old_t),
        (".runs-fresh/1-0.arrow", None),
        (".runs-mixed/2-0.arrow", old_t),
        (".runs-mixed/2-1.arrow", None),
        ("bitmap-global-index-1.index", old_t),
    ):
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"x")
        if t is not None:
            os.utime(p, (t, t))
    (root / ".runs-empty").mkdir()
    if local:
        store, where = Store(), str(root)
    else:  # the object-store way: listing and deleting files
        store, where = Store(pafs.SubTreeFileSystem(str(tmp_path), pafs.LocalFileSystem())), "index"
        assert not store.local
    gone = drop_stale_runs(store, where)
    assert gone == ([".runs-0ld", ".runs-empty"] if local else [".runs-0ld"])
    left = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
    assert left == [
        ".runs-fresh/1-0.arrow",
        ".runs-mixed/2-0.arrow",
        ".runs-mixed/2-1.arrow",
        "bitmap-global-index-1.index",
    ]
    assert drop_stale_runs(store, where, older_than=0, now=time.time() + 1) == [".runs-fresh", ".runs-mixed"]


def test_reads_at_known_rows_use_at_most_max_workers_threads(tmp_path, monkeypatch):
    """The files a global index leaves are read by the native reader on at most ``max_workers``
    threads (and never more than paimon_fast.threads()), with the same rows."""
    from paimon_fast.io import pool
    from paimon_fast.paimon import fastpath

    cat, name = color_table(tmp_path, DATA_EVOLUTION)
    create_global_index(cat.get_table(f"db.{name}"), "color")
    rows = table_rows(cat, name)
    asked = []
    real_read = fastpath.read_files

    def reading(*a, **k):
        asked.append(k.get("threads"))
        return real_read(*a, **k)

    monkeypatch.setattr(fastpath, "read_files", reading)
    pool.set_threads(4)
    try:
        for workers, most in ((1, 1), (2, 2), (8, 4)):
            asked.clear()
            got, rep_ = read_with_index(cat.get_table(f"db.{name}"), pf.field("color") == "blue", max_workers=workers)
            assert rep_.fast_path and rep_.global_indexes
            assert sorted_ids(got) == expected_ids(rows, lambda r: r["color"] == "blue")
            assert asked and set(asked) == {most}, (workers, asked)
    finally:
        pool.set_threads(None)


def test_index_manifests_are_read_once_per_file(tmp_path, monkeypatch):
    """A table's next query reuses the index manifest read (it is written once, under a unique
    name); a build's new snapshot lists a new one, read afresh; clear_plan_cache forgets them."""
    from pypaimon.index.index_file_handler import IndexFileHandler

    from paimon_fast.paimon.fastpath import clear_plan_cache

    cat, name = color_table(tmp_path, DATA_EVOLUTION)
    create_global_index(cat.get_table(f"db.{name}"), "color")
    clear_plan_cache()
    scans = []
    real = IndexFileHandler.scan
    monkeypatch.setattr(IndexFileHandler, "scan", lambda self, *a, **k: scans.append(1) or real(self, *a, **k))
    pred = pf.field("color") == "blue"
    for _ in range(3):
        got, rep = read_with_index(cat.get_table(f"db.{name}"), pred)
        assert rep.global_indexes and sorted_ids(got) == expected_ids(
            table_rows(cat, name), lambda r: r["color"] == "blue"
        )
    assert len(scans) == 1
    append_batch(cat, name, color_batch(7))
    create_global_index(cat.get_table(f"db.{name}"), "color")  # a new snapshot, a new index manifest
    scans.clear()
    for _ in range(2):
        got, rep = read_with_index(cat.get_table(f"db.{name}"), pred)
        assert sorted_ids(got) == expected_ids(table_rows(cat, name), lambda r: r["color"] == "blue")
    assert len(scans) == 1
    assert pgi._ENTRIES
    clear_plan_cache()
    assert not pgi._ENTRIES
