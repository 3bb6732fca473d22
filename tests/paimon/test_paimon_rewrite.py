"""rewrite_file_index on pypaimon tables, schema evolution, the CLI, predicate translation."""

from __future__ import annotations

import json
import os

import pytest

pytest.importorskip("pypaimon")

import paimon_fast as pf  # noqa: E402
from paimon_fast.fileindex import FileIndexFormat  # noqa: E402
from paimon_fast.paimon import (
    from_pypaimon,
    legacy_manifest_table,
    plan_with_index,  # noqa: E402
    read_with_index,
    rewrite_file_index,
    to_pypaimon,
)
from paimon_fast.paimon.rewrite import new_index_file_name, plan_rewrite  # noqa: E402

from tests.support.paimon_helpers import catalog, copy_table, create_sample_table, pypaimon_read, unpack_java09  # noqa: E402

BLOOM = {"file-index.bloom-filter.columns": "name", "file-index.bloom-filter.name.items": "2000"}


def _files(table):
    return [f for s in table.new_read_builder().new_scan().plan().splits() for f in s.files]


def _delta_kinds(table, snapshot_id):
    """(kind, file name) of the delta manifest entries of one snapshot, in file order."""
    import fastavro

    snap = json.load(open(os.path.join(table.table_path, "snapshot", f"snapshot-{snapshot_id}")))
    mdir = os.path.join(table.table_path, "manifest")
    out = []
    for ml in fastavro.reader(open(os.path.join(mdir, snap["deltaManifestList"]), "rb")):
        for e in fastavro.reader(open(os.path.join(mdir, ml["_FILE_NAME"]), "rb")):
            out.append((e["_KIND"], e["_FILE"]["_FILE_NAME"]))
    return out


def test_new_index_file_name_follows_java():
    assert new_index_file_name(None, "data-a-0.parquet") == "data-a-0.parquet.index"
    assert new_index_file_name("data-a-0.parquet.index", "data-a-0.parquet") == "data-a-0.parquet-1.index"
    assert new_index_file_name("data-a-0.parquet-1.index", "data-a-0.parquet") == "data-a-0.parquet-2.index"
    assert new_index_file_name("data-a-0.parquet-9.index", "data-a-0.parquet") == "data-a-0.parquet-10.index"


def test_rewrite_adds_sidecar_indexes_and_prunes(tmp_path):
    table = create_sample_table(tmp_path, options=BLOOM)
    assert all(not f.embedded_index and not f.extra_files for f in _files(table))
    pred = pf.field("name").isin(["name-1500", "name-2500"])
    _, rep0 = read_with_index(table, pred)
    assert rep0.files_skipped == 0 and rep0.files_with_index == 0

    rep = rewrite_file_index(None, table)
    assert rep.committed and rep.files_rewritten == 4 and rep.sidecars_written == 4 and rep.rows_indexed == 4000
    table = catalog(tmp_path).get_table("db.t")
    files = _files(table)
    assert all(f.extra_files == [f.file_name + ".index"] for f in files)
    for f in files:  # the sidecar is a real container with a bloom filter on name
        with open(f.aligned_file_path(f.extra_files[0]), "rb") as fh:
            assert FileIndexFormat.open(fh.read()).index_metas()["name"].keys() == {"bloom-filter"}

    # deletions first, then additions, of the same data files
    kinds = _delta_kinds(table, rep.snapshot_id)
    assert [k for k, _ in kinds] == [1] * 4 + [0] * 4
    assert sorted(n for k, n in kinds if k == 1) == sorted(n for k, n in kinds if k == 0)

    tb, rep1 = read_with_index(table, pred)
    assert rep1.files_skipped == 2 and rep1.rows_skipped == 2000
    assert sorted(tb.column("id").to_pylist()) == [1500, 2500]
    assert pypaimon_read(table).num_rows == 4000

    # nothing left to do; then a forced rebuild takes Java's next sidecar name
    again = rewrite_file_index(None, table)
    assert again.files_rewritten == 0 and again.files_already_indexed == 4 and not again.committed
    forced = rewrite_file_index(None, table, force=True)
    assert forced.files_rewritten == 4
    table = catalog(tmp_path).get_table("db.t")
    assert all(f.extra_files == [f.file_name + "-1.index"] for f in _files(table))
    tb, _ = read_with_index(table, pred)
    assert sorted(tb.column("id").to_pylist()) == [1500, 2500]


def test_rewrite_embeds_small_indexes(tmp_path):
    table = create_sample_table(tmp_path, options=dict(BLOOM, **{"file-index.in-manifest-threshold": "64kb"}), files=3)
    rep = rewrite_file_index(None, table)
    assert rep.embedded == 3 and rep.sidecars_written == 0
    table = catalog(tmp_path).get_table("db.t")
    assert all(f.embedded_index and not f.extra_files for f in _files(table))
    assert not any(p.endswith(".index") for p in os.listdir(os.path.join(table.table_path, "bucket-0")))
    tb, rep2 = read_with_index(table, pf.field("name") == "name-42")
    assert tb.column("id").to_pylist() == [42] and rep2.files_skipped == 2


def test_rewrite_dry_run_commits_nothing(tmp_path):
    table = create_sample_table(tmp_path, options=BLOOM, files=2)
    snap = table.snapshot_manager().get_latest_snapshot().id
    rep = rewrite_file_index(None, table, commit=False)
    assert rep.files_rewritten == 2 and not rep.committed
    assert table.snapshot_manager().get_latest_snapshot().id == snap


def test_columns_resolved_by_field_id_after_rename_and_add(tmp_path):
    """A renamed column keeps using its index; a new column with the old name must not."""
    from pypaimon.schema.data_types import AtomicType
    from pypaimon.schema.schema_change import SchemaChange

    table = create_sample_table(tmp_path, options=BLOOM)
    rewrite_file_index(None, table)
    cat = catalog(tmp_path)
    cat.alter_table("db.t", [SchemaChange.rename_column("name", "full_name")])
    cat.alter_table("db.t", [SchemaChange.add_column("name", AtomicType("STRING"))])
    table = cat.get_table("db.t")
    tb, rep = read_with_index(table, pf.field("full_name") == "name-1500")
    assert tb.column("id").to_pylist() == [1500]
    assert rep.files_skipped == 3
    # the new "name" is null in every old file: the old files' index on (old) "name" must not prune
    tb, rep = read_with_index(table, pf.field("name") == "name-1500")
    assert tb.num_rows == 0
    assert rep.files_skipped == 0
    tb, rep = read_with_index(table, pf.field("name").is_null() & (pf.field("full_name") == "name-7"))
    assert tb.column("id").to_pylist() == [7] and rep.files_skipped == 3


def test_rewrite_on_java09_table(tmp_path_factory, tmp_path):
    """A 0.9 table (legacy manifests, embedded bloom + bitmap V1) gets a bloom index on
    price added; the existing indexes are kept byte for byte (0.9 reads only bitmap V1)."""
    wh = unpack_java09(tmp_path_factory.mktemp("j09"))
    copy_table(wh, str(tmp_path), "append_dv")
    table = legacy_manifest_table(catalog(tmp_path).get_table("db.append_dv"))
    old = {f.file_name: FileIndexFormat.open(bytes(f.embedded_index)) for f in _files(table)}
    opts = {"file-index.bloom-filter.columns": "name,price", "file-index.bloom-filter.price.items": "1000"}
    _, tasks, total, already = plan_rewrite(table, opts)
    assert total == 2 and len(tasks) == 2
    assert all(set(t.keep) == {"name", "category"} for t in tasks)
    rep = rewrite_file_index(None, table, opts)
    assert rep.committed
    table = legacy_manifest_table(catalog(tmp_path).get_table("db.append_dv"))
    for f in _files(table):
        new = FileIndexFormat.open(bytes(f.embedded_index))
        assert set(new.index_metas()) == {"name", "category", "price"}
        for col, itype in [("name", "bloom-filter"), ("category", "bitmap")]:
            assert new.payload(col, itype) == old[f.file_name].payload(col, itype)
        assert new.payload("category", "bitmap")[0] == 1  # still V1
    before = pypaimon_read(table)
    assert before.num_rows == 1666  # the deletion vector still applies
    prices = set(before.column("price").to_pylist())
    skipped = 0
    for p in range(5, 400, 10):  # prices are multiples of 10: none of these match
        assert p not in prices
        tb, rep2 = read_with_index(table, pf.field("price") == p)
        assert tb.num_rows == 0
        skipped += rep2.files_skipped
    assert skipped > 20  # the new bloom filter rules out most of them (fpp 0.1 by default)


def test_predicate_translation_round_trip():
    names = ["id", "name", "category", "price"]
    preds = [
        pf.field("id") == 3,
        (pf.field("name").isin(["a", "b"]) | pf.field("price").is_null()) & (pf.field("id") >= 10),
        pf.field("category").startswith("r") | pf.field("name").like("n%") | pf.field("name").contains("x"),
        pf.field("price").between(1, 5) & pf.field("price").not_between(2, 3) & (pf.field("id") != 4),
        pf.field("id").notin([1, 2]) & pf.field("name").is_not_null() & pf.field("name").endswith("9"),
        (pf.field("id") < 1) | (pf.field("id") <= 2) | (pf.field("id") > 3),
    ]
    for p in preds:
        pp = to_pypaimon(p, names)
        assert from_pypaimon(pp) == p
    pp = to_pypaimon(pf.field("price") == 7, names)
    assert (pp.method, pp.index, pp.field, pp.literals) == ("equal", 3, "price", [7])
    with pytest.raises(ValueError):
        to_pypaimon(pf.field("nope") == 1, names)


def test_pypaimon_predicate_accepted(tmp_path):
    table = create_sample_table(tmp_path, options=BLOOM, files=2)
    rewrite_file_index(None, table)
    table = catalog(tmp_path).get_table("db.t")
    pb = table.new_read_builder().new_predicate_builder()
    tb, rep = read_with_index(table, pb.equal("name", "name-5"))
    assert tb.column("id").to_pylist() == [5] and rep.files_skipped == 1
    # a read builder with its own filter
    rb = table.new_read_builder().with_filter(pb.equal("name", "name-1005"))
    rb2, splits, rep = plan_with_index(rb, None)
    assert rep.files_skipped == 1
    assert rb2.new_read().to_arrow(splits).column("id").to_pylist() == [1005]


def test_cli_query_and_rewrite(tmp_path, capsys):
    from paimon_fast.cli import main

    create_sample_table(tmp_path, options=BLOOM, files=3)
    assert main(["paimon", "rewrite-index", str(tmp_path), "db.t", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["files_rewritten"] == 3 and out["committed"]
    assert main(["paimon", "query", str(tmp_path), "db.t", "--where", "name = 'name-2001'", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in out["rows"]] == [2001]
    assert out["report"]["files_skipped"] == 2 and out["report"]["files_planned"] == 3
    assert main(["paimon", "query", str(tmp_path), "db.t", "--where", "id < 3", "--select", "id,name"]) == 0
    captured = capsys.readouterr()
    assert "{'id': 0, 'name': 'name-0'}" in captured.out and "files planned" in captured.err


# ---------------------------------------------------------------- Spark


@pytest.mark.spark
def test_rewrite_on_spark_matches_local(tmp_path, spark):
    local_wh, spark_wh = tmp_path / "local", tmp_path / "spark"
    create_sample_table(local_wh, options=BLOOM, files=3)
    create_sample_table(spark_wh, options=BLOOM, files=3)
    rl = rewrite_file_index(None, catalog(local_wh).get_table("db.t"))
    rs = rewrite_file_index(spark, catalog(spark_wh).get_table("db.t"), mode="spark", spark_parallelism=2)
    assert rs.mode == "spark" and rs.committed and rs.files_rewritten == rl.files_rewritten == 3

    def payloads(wh):
        t = catalog(wh).get_table("db.t")
        out = []
        for f in _files(t):  # same rows in both tables, so the same index bytes
            with open(f.aligned_file_path(f.extra_files[0]), "rb") as fh:
                out.append(fh.read())
        return sorted(out)

    assert payloads(local_wh) == payloads(spark_wh)
    tb, rep = read_with_index(catalog(spark_wh).get_table("db.t"), pf.field("name") == "name-2999")
    assert tb.column("id").to_pylist() == [2999] and rep.files_skipped >= 1


def test_ranges_coalesce_only_over_live_rows():
    from pyroaring import BitMap

    from paimon_fast.paimon.scan import _ranges_of

    sel = BitMap([1, 2, 3, 10, 20, 100])
    assert _ranges_of(sel, 0) == [(1, 3), (10, 10), (20, 20), (100, 100)]
    assert _ranges_of(sel, 5) == [(6, 8), (15, 15), (25, 25), (105, 105)]
    assert _ranges_of(sel, 0, None, gap=10) == [(1, 20), (100, 100)]
    # a deleted row inside a gap keeps the ranges apart
    assert _ranges_of(sel, 0, BitMap([15]), gap=10) == [(1, 10), (20, 20), (100, 100)]
    assert _ranges_of(sel, 0, BitMap([2, 500]), gap=100) == [(1, 100)]
    assert _ranges_of(BitMap(), 0, None, gap=10) == []


def test_pk_table_with_deletion_vectors_pruned_after_rewrite(tmp_path_factory, tmp_path):
    """0.9 wrote no file index for the primary-key table; after rewrite_file_index its
    raw-convertible splits (deletion vectors) are pruned, with the DV folded in."""
    wh = unpack_java09(tmp_path_factory.mktemp("j09pk"))
    copy_table(wh, str(tmp_path), "pk_dv")
    table = legacy_manifest_table(catalog(tmp_path).get_table("db.pk_dv"))
    assert all(s.raw_convertible for s in table.new_read_builder().new_scan().plan().splits())
    rep = rewrite_file_index(None, table)  # the table's own options: bloom on name, bitmap on category
    assert rep.committed and rep.files_rewritten == 2
    table = legacy_manifest_table(catalog(tmp_path).get_table("db.pk_dv"))
    for pred in [
        pf.field("name") == "name-1500",
        pf.field("category") == "magenta",
        pf.field("category") == "red",
        pf.field("category").isin(["red", "cyan"]) & (pf.field("id") < 2000),
    ]:
        tb, rep = read_with_index(table, pred)
        assert rep.applied and rep.files_with_index == rep.files_planned
        assert sorted(tb.column("id").to_pylist()) == sorted(pypaimon_read(table, pred).column("id").to_pylist())
        if pred == (pf.field("category") == "magenta"):
            assert rep.files_planned - rep.files_skipped == 0
        if pred == (pf.field("category") == "red"):
            assert rep.deletion_vectors_folded >= 1 and rep.rows_index_selected < rep.rows_planned
