"""paimon_fast.paimon.optimize (paimon_fast/paimon/sort_compact.py): an append table's files
rewritten clustered by columns, with their file indexes, in one commit that deletes exactly the
files it read."""

from __future__ import annotations

import json
import os

import pyarrow as pa
import pyarrow.compute as pc
import pytest

pytest.importorskip("pypaimon")

import paimon_fast as pf  # noqa: E402
from paimon_fast.errors import ColumnNotFoundError, DataFileChangedError, OptionError  # noqa: E402
from paimon_fast.fileindex import FileIndexFormat  # noqa: E402
from paimon_fast.paimon import optimize, read, read_with_index, rewrite_file_index  # noqa: E402

from tests.support.paimon_helpers import (  # noqa: E402
    catalog,
    commit_arrow,
    copy_table,
    create_sample_table,
    pypaimon_read,
    sample_batch,
    unpack_java09,
)

OPTS = {
    "file-index.bloom-filter.columns": "name",
    "file-index.bloom-filter.name.items": "2000",
    "target-file-size": "12 kb",  # several files for 4,000 rows
}


def _entries(table):
    """(partition values, DataFileMeta) of the live files of the latest snapshot."""
    splits = table.new_read_builder().new_scan().plan().splits()
    return [(tuple(s.partition.values), f) for s in splits for f in s.files]


def _file_rows(table, partition, f):
    from pypaimon.read.split import DataSplit
    from pypaimon.table.row.generic_row import GenericRow

    split = DataSplit(
        files=[f],
        partition=GenericRow(list(partition), table.partition_keys_fields),
        bucket=0,
        raw_convertible=True,
        data_deletion_files=None,
    )
    return table.new_read_builder().new_read().to_arrow([split])


def _by_id(t: pa.Table) -> pa.Table:
    return t.sort_by("id").select(sorted(t.column_names))


def _data_files(root):
    return {os.path.join(d, n) for d, _, ns in os.walk(root) for n in ns if n.endswith(".parquet")}


def _snapshot_id(table):
    s = table.snapshot_manager().get_latest_snapshot()
    return None if s is None else s.id


def test_optimize_sorts_the_files_keeps_the_rows_and_indexes_the_new_files(tmp_path):
    table = create_sample_table(tmp_path, options=OPTS)
    before = _by_id(pypaimon_read(table))
    old = {f.file_name for _, f in _entries(table)}
    snap0 = _snapshot_id(table)

    rep = optimize(table, ["price"])
    table = catalog(tmp_path).get_table("db.t")
    assert rep.partitions == 1 and rep.files_before == len(old) and rep.rows == 4000
    assert rep.snapshot_id == snap0 + 1 == _snapshot_id(table)
    assert "order by price" in str(rep)
    assert _by_id(pypaimon_read(table)).equals(before)

    entries = _entries(table)
    assert rep.files_after == len(entries) > 1
    assert not old & {f.file_name for _, f in entries}  # every file was replaced
    ranges = []
    for part, f in entries:
        prices = _file_rows(table, part, f).column("price").to_pylist()
        assert prices == sorted(prices)  # each file sorted
        ranges.append((prices[0], prices[-1]))
        # and indexed: the configured bloom filter on name, in the manifest or a sidecar
        if f.embedded_index:
            data = bytes(f.embedded_index)
        else:
            (side,) = [x for x in f.extra_files if x.endswith(".index")]
            data = open(f.aligned_file_path(side), "rb").read()
        assert FileIndexFormat.open(data).index_metas()["name"].keys() == {"bloom-filter"}
    ranges.sort()
    assert all(a[1] <= b[0] for a, b in zip(ranges, ranges[1:]))  # across files: price ranges in order

    # the new files' indexes and statistics prune: a bloom lookup and a price range
    got, prep = read_with_index(table, pf.field("name") == "name-1234")
    assert got.column("id").to_pylist() == [1234]
    assert prep.files_with_index == len(entries) and prep.files_skipped >= len(entries) - 1
    r = read(table, "price < 100")
    assert r.count() == pc.sum(pc.less(before.column("price"), 100)).as_py()


def test_the_new_files_carry_value_statistics_and_keep_the_bitmap_version(tmp_path, tmp_path_factory):
    """pypaimon writes no value statistics by default (``metadata.stats-mode = none``); a
    clustered file's min / max is what prunes it, so optimize writes them (unless the table sets
    the mode).  A bitmap index stays version 1 where the files it replaces had version 1 (Java
    0.9's tables: Paimon 0.9 reads no other), else version 2 (Java master's)."""
    from paimon_fast.paimon import legacy_manifest_table
    from paimon_fast.paimon.rewrite import _existing_index, _live_entries, data_file_path

    def stats(table):
        """The live files with their value statistics (the scan's splits drop them)."""
        es = _live_entries(table)[1]
        return [e.file for e in es if data_file_path(table, tuple(e.partition.values), e.bucket, e.file)]

    opts = {**OPTS, "file-index.bitmap.columns": "category"}
    table = create_sample_table(tmp_path / "a", options=opts)
    assert all(f.value_stats_cols == [] for f in stats(table))  # (pypaimon's default)
    optimize(table, ["price"])
    table = catalog(tmp_path / "a").get_table("db.t")
    for f in stats(table):
        prices = _file_rows(table, (), f).column("price").to_pylist()
        names = [x.name for x in table.table_schema.fields]
        i = names.index("price")
        assert f.value_stats_cols is None
        assert (f.value_stats.min_values.get_field(i), f.value_stats.max_values.get_field(i)) == (
            min(prices),
            max(prices),
        )
        assert _existing_index(table, f).payload("category", "bitmap")[0] == 2

    table = create_sample_table(tmp_path / "b", options={**OPTS, "metadata.stats-mode": "none"})
    optimize(table, ["price"])
    assert all(f.value_stats_cols == [] for f in stats(catalog(tmp_path / "b").get_table("db.t")))

    wh = unpack_java09(tmp_path_factory.mktemp("j09"))
    copy_table(wh, str(tmp_path / "c"), "append_embedded")
    table = legacy_manifest_table(catalog(tmp_path / "c").get_table("db.append_embedded"))
    assert {_existing_index(table, f).payload("category", "bitmap")[0] for f in stats(table)} == {1}
    optimize(table, ["category"])
    table = legacy_manifest_table(catalog(tmp_path / "c").get_table("db.append_embedded"))
    assert {_existing_index(table, f).payload("category", "bitmap")[0] for f in stats(table)} == {1}


def test_zorder_of_one_partition_leaves_the_others(tmp_path):
    from pypaimon import Schema

    cat = catalog(tmp_path)
    cat.create_database("db", True)
    schema = pa.schema([("dt", pa.string()), ("id", pa.int32()), ("name", pa.string()), ("price", pa.int64())])
    cat.create_table("db.p", Schema.from_pyarrow_schema(schema, partition_keys=["dt"], options={"bucket": "-1"}), False)
    table = cat.get_table("db.p")
    for k in range(3):
        b = sample_batch(k, 500).select(["id", "name", "price"])
        dt = pa.array(["a" if i % 2 else "b" for i in range(b.num_rows)])
        commit_arrow(table, b.add_column(0, "dt", dt))
    before = _by_id(pypaimon_read(table))
    b_files = {f.file_name for p, f in _entries(table) if p == ("b",)}
    a_files = {f.file_name for p, f in _entries(table) if p == ("a",)}

    rep = optimize(table, ["price", "id"], "zorder", partitions=[{"dt": "a"}])
    table = cat.get_table("db.p")
    assert rep.partitions == 1 and rep.files_before == len(a_files) == 3 and rep.rows == 750
    assert _by_id(pypaimon_read(table)).equals(before)
    after = _entries(table)
    assert {f.file_name for p, f in after if p == ("b",)} == b_files
    assert not {f.file_name for p, f in after if p == ("a",)} & a_files

    with pytest.raises(OptionError, match="every partition key"):
        optimize(table, ["price"], partitions=[{"day": "a"}])


def test_rows_appended_during_an_optimize_are_kept(tmp_path):
    """The commit deletes the files the optimize read, not the partition's files at commit time
    (which an INSERT OVERWRITE would do, dropping the rows appended meanwhile)."""
    table = create_sample_table(tmp_path, options=OPTS)

    def append(phase, done, total):
        if phase == "indexed":  # (right before the commit)
            commit_arrow(catalog(tmp_path).get_table("db.t"), sample_batch(500, 10))  # ids 5000..5009

    optimize(table, ["price"], progress=append)
    ids = pypaimon_read(catalog(tmp_path).get_table("db.t")).column("id").to_pylist()
    assert sorted(ids) == list(range(4000)) + list(range(5000, 5010))


def test_a_commit_that_replaced_the_same_files_first_wins(tmp_path):
    """Another rewrite of the same files committed between the read and the commit: this one
    fails, its new data files are deleted, and no row is doubled."""
    table = create_sample_table(tmp_path, options=OPTS)
    files0 = _data_files(tmp_path)

    def rival(phase, done, total):
        if phase == "indexed":
            rewrite_file_index(None, catalog(tmp_path).get_table("db.t"), force=True)

    with pytest.raises(DataFileChangedError, match="another commit replaced files"):
        optimize(table, ["price"], progress=rival)
    table = catalog(tmp_path).get_table("db.t")
    assert sorted(pypaimon_read(table).column("id").to_pylist()) == list(range(4000))
    assert _data_files(tmp_path) == files0


def _interrupt_at(at: str):
    """An optimize's progress callback that interrupts the run when it reports phase ``at``."""

    def progress(phase, done, total):
        if phase == at:
            raise KeyboardInterrupt

    return progress


def test_stopped_before_its_commit_leaves_the_table_as_it_was(tmp_path):
    table = create_sample_table(tmp_path, options=OPTS)
    snap0, files0 = _snapshot_id(table), _data_files(tmp_path)
    before = _by_id(pypaimon_read(table))

    with pytest.raises(KeyboardInterrupt):
        optimize(table, ["price"], progress=_interrupt_at("indexed"))
    table = catalog(tmp_path).get_table("db.t")
    assert _snapshot_id(table) == snap0
    assert _data_files(tmp_path) == files0  # the files it wrote are gone
    assert not [n for _, _, ns in os.walk(tmp_path) for n in ns if n.endswith(".index")]
    assert _by_id(pypaimon_read(table)).equals(before)


def test_a_failure_after_the_commit_deletes_nothing(tmp_path):
    """Once the commit has started, the new files stay whatever happens next (the commit may
    have landed): here it did, and every row is still there."""
    table = create_sample_table(tmp_path, options=OPTS)
    before = _by_id(pypaimon_read(table))

    with pytest.raises(KeyboardInterrupt):
        optimize(table, ["price"], progress=_interrupt_at("committed"))
    table = catalog(tmp_path).get_table("db.t")
    assert _by_id(pypaimon_read(table)).equals(before)
    assert all(os.path.exists(f.file_path or f.aligned_file_path(f.file_name)) for _, f in _entries(table))


def test_the_command_line(tmp_path, capsys):
    from paimon_fast.cli import main

    table = create_sample_table(tmp_path, options=OPTS)
    before = _by_id(pypaimon_read(table))
    assert main(["paimon", "optimize", str(tmp_path), "db.t", "--cluster-by", "price,id", "--json"]) == 0
    got = capsys.readouterr()
    out = json.loads(got.out)
    assert out["cluster_by"] == ["price", "id"] and out["rows"] == 4000 and out["partitions"] == 1
    assert "partitions 1/1" in got.err and "committed 1/1" in got.err  # the progress lines
    assert _by_id(pypaimon_read(catalog(tmp_path).get_table("db.t"))).equals(before)
    assert main(["paimon", "optimize", str(tmp_path), "db.t", "--cluster-by", "price", "--quiet"]) == 0
    got = capsys.readouterr()
    assert got.err == "" and "order by price: 1 partition(s)" in got.out


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"primary_keys": ["id"]}, "has primary keys"),
        ({"options": {"bucket": "2", "bucket-key": "id"}}, "bucket = 2"),
        ({"options": {"deletion-vectors.enabled": "true"}}, "deletion-vectors.enabled"),
        ({"options": {"row-tracking.enabled": "true"}}, "row-tracking or data-evolution"),
    ],
)
def test_tables_it_cannot_rewrite_are_refused(tmp_path, kw, match):
    table = create_sample_table(tmp_path, files=1, n=10, **kw)
    snap0 = _snapshot_id(table)
    with pytest.raises(OptionError, match=match):
        optimize(table, ["price"])
    assert _snapshot_id(catalog(tmp_path).get_table("db.t")) == snap0


def test_bad_arguments_are_refused(tmp_path):
    table = create_sample_table(tmp_path, files=1, n=10)
    with pytest.raises(ColumnNotFoundError):
        optimize(table, ["nope"])
    with pytest.raises(OptionError, match="unknown clustering strategy"):
        optimize(table, ["price"], "spiral")
    with pytest.raises(OptionError, match="hilbert strategy needs at least two"):
        optimize(table, ["price"], "hilbert")
    rep = optimize(table, "price, id")  # a comma-separated string names the columns too
    assert rep.cluster_by == ["price", "id"] and rep.rows == 10
