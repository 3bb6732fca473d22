"""The fast planning/reading path (paimon_fast.paimon.fastpath) against pypaimon's own
read, our pypaimon-based pruned path and pypaimon-rust, on the test tables: Java 0.9
tables (0.9 manifests, embedded and sidecar indexes, deletion vectors), pypaimon-rust
native tables, a partitioned table, schema evolution (renamed / added / retyped columns),
64-bit deletion vectors, and the plan cache across commits."""

from __future__ import annotations

import io
import os
import random

import pyarrow as pa
import pytest

pytest.importorskip("pypaimon")

import paimon_fast as pf  # noqa: E402
from paimon_fast.errors import IndexFormatError  # noqa: E402
from paimon_fast.paimon import fastpath, legacy_manifest_table, read_with_index, rewrite_file_index  # noqa: E402

from tests.support.paimon_helpers import (  # noqa: E402
    catalog,
    commit_arrow,
    copy_table,
    create_sample_table,
    pypaimon_read,
    sample_batch,
    unpack_java09,
)
from tests.support.sql_oracle import holds  # noqa: E402
from tests.support.rows import sorted_rows  # noqa: E402

BLOOM = {"file-index.bloom-filter.columns": "name", "file-index.bloom-filter.name.items": "2000"}
NATIVE_OPTS = {
    "file-index.bloom-filter.columns": "name",
    "file-index.bloom-filter.name.items": "1000",
    "file-index.bitmap.columns": "category",
}
PREDS = [
    pf.field("name") == "name-1500",
    pf.field("name") == "nope",
    pf.field("category") == "red",
    pf.field("category") == "magenta",
    (pf.field("id") >= 700) & (pf.field("id") < 2300),
    pf.field("category").isin(["cyan", "blue"]) & (pf.field("price") < 100),
    (pf.field("name") == "name-7") | (pf.field("category") == "green"),
]


def _exact(tb, table, pred, projection=None):
    """``tb`` filtered exactly by ``pred`` with an independent oracle (a plain-Python
    three-valued-logic evaluator over its rows, no product or pypaimon filter code):
    pypaimon's filter is a push-down hint (like Java's ``withFilter``), e.g. an OR
    over a partition and a data column returns whole partitions."""
    keep = pa.array([holds(pred, r) for r in tb.to_pylist()], pa.bool_())
    tb = tb.filter(keep)
    return tb.select(list(projection)) if projection is not None else tb


def _check(table, pred, projection=None, native=False):
    """Fast path == our pypaimon-based path == pypaimon's read (== pypaimon-rust's), all filtered exactly."""
    fast, rep = read_with_index(table, pred, projection=projection)
    assert rep.fast_path, rep.fallback_reason
    slow, rep2 = read_with_index(table, pred, fast=False)
    assert not rep2.fast_path
    plain = pypaimon_read(legacy_manifest_table(table), None)  # every row, unfiltered
    expected = _exact(plain, table, pred, projection)
    assert fast.schema == expected.schema
    assert sorted_rows(fast) == sorted_rows(expected) == sorted_rows(_exact(slow, table, pred, projection))
    if native:
        native_rows = _exact(pypaimon_read(table, pred, native=True), table, pred, projection)
        assert sorted_rows(native_rows) == sorted_rows(fast)
    # the fast path keeps at most the files the pypaimon path keeps
    assert rep.files_planned - rep.files_skipped <= rep2.files_planned - rep2.files_skipped
    return fast, rep


@pytest.fixture(scope="module")
def java09(tmp_path_factory):
    return unpack_java09(tmp_path_factory.mktemp("fast09"))


@pytest.mark.parametrize("name", ["append_embedded", "append_sidecar", "append_dv"])
@pytest.mark.parametrize("pred", PREDS, ids=range(len(PREDS)))
def test_java09_tables_same_rows(java09, name, pred):
    table = catalog(java09).get_table("db." + name)  # no legacy wrapper: our own manifest reader
    _check(table, pred)


def test_java09_skips_what_java_skips(java09):
    table = catalog(java09).get_table("db.append_embedded")
    tb, rep = read_with_index(table, pf.field("name") == "name-1500")
    assert rep.fast_path and tb.column("id").to_pylist() == [1500]
    assert rep.files_planned - rep.files_skipped <= 1  # Java plans 1 file


def test_java09_deletion_vector_applied(java09):
    table = catalog(java09).get_table("db.append_dv")
    tb, rep = read_with_index(table, pf.field("id") >= 0)
    assert rep.fast_path and rep.deletion_vectors_folded == 1
    assert tb.num_rows == 1666


def test_primary_key_table_falls_back(java09):
    table = catalog(java09).get_table("db.pk_dv")
    tb, rep = read_with_index(table, pf.field("id") < 50)
    assert not rep.fast_path and "primary-key" in rep.fallback_reason
    assert sorted_rows(tb) == sorted_rows(
        _exact(pypaimon_read(legacy_manifest_table(table), pf.field("id") < 50), table, pf.field("id") < 50)
    )


@pytest.fixture(scope="module")
def native_table(tmp_path_factory):
    pytest.importorskip("pypaimon_rust")
    return create_sample_table(tmp_path_factory.mktemp("fastnative"), options=NATIVE_OPTS, native=True)


@pytest.mark.parametrize("pred", PREDS, ids=range(len(PREDS)))
def test_native_table_same_rows_as_pypaimon_rust(native_table, pred):
    _check(native_table, pred, native=True)


def test_projection(native_table):
    pred = pf.field("category") == "red"
    for proj in (["id"], ["price", "name"], ["category", "id"]):
        tb, _ = _check(native_table, pred, projection=proj)
        assert tb.column_names == proj


def test_partitioned_table(tmp_path):
    import pyarrow as pa
    from pypaimon import Schema

    cat = catalog(tmp_path)
    cat.create_database("db", True)
    schema = pa.schema([("id", pa.int32()), ("name", pa.string()), ("category", pa.string()), ("price", pa.int64())])
    opts = {"bucket": "-1", **BLOOM, "file-index.bitmap.columns": "price"}
    cat.create_table("db.p", Schema.from_pyarrow_schema(schema, partition_keys=["category"], options=opts), False)
    t = cat.get_table("db.p")
    for k in range(4):
        commit_arrow(t, sample_batch(k, 500))
    t = cat.get_table("db.p")
    rewrite_file_index(None, t)
    t = cat.get_table("db.p")
    for pred in PREDS + [pf.field("price") == 7, (pf.field("category") == "blue") & (pf.field("price") == 14)]:
        _check(t, pred)
    tb, rep = read_with_index(t, pf.field("name") == "name-1500")
    assert tb.column("id").to_pylist() == [1500] and rep.files_skipped >= 1


def test_schema_evolution_rename_and_add(tmp_path):
    from pypaimon.schema.data_types import AtomicType
    from pypaimon.schema.schema_change import SchemaChange

    table = create_sample_table(tmp_path, options=BLOOM)
    rewrite_file_index(None, table)
    cat = catalog(tmp_path)
    cat.alter_table("db.t", [SchemaChange.rename_column("name", "full_name")])
    cat.alter_table("db.t", [SchemaChange.add_column("name", AtomicType("STRING"))])
    t = cat.get_table("db.t")
    b = sample_batch(9, 100)
    import pyarrow as pa

    b = pa.table(
        {
            "id": b["id"],
            "full_name": b["name"],
            "category": b["category"],
            "price": b["price"],
            "name": pa.array([f"new-{i}" for i in range(100)]),
        }
    )
    commit_arrow(t, b)
    t = cat.get_table("db.t")
    for pred in [
        pf.field("full_name") == "name-1500",
        pf.field("name") == "name-1500",
        pf.field("name") == "new-5",
        pf.field("name").is_null() & (pf.field("full_name") == "name-7"),
        pf.field("name").is_not_null(),
    ]:
        _check(t, pred)
    tb, rep = read_with_index(t, pf.field("full_name") == "name-1500")
    assert tb.column("id").to_pylist() == [1500] and rep.files_skipped >= 3
    tb, rep = read_with_index(t, pf.field("name") == "new-5")
    assert tb.column("full_name").to_pylist() == ["name-905"]


def test_retyped_column_falls_back(tmp_path):
    from pypaimon.schema.data_types import AtomicType
    from pypaimon.schema.schema_change import SchemaChange

    create_sample_table(tmp_path, options=BLOOM)
    cat = catalog(tmp_path)
    try:
        cat.alter_table("db.t", [SchemaChange.update_column_type("id", AtomicType("BIGINT"))])
    except Exception as e:  # pragma: no cover - pypaimon without type changes
        pytest.skip(f"pypaimon cannot change a column type here: {e}")
    t = cat.get_table("db.t")
    tb, rep = read_with_index(t, pf.field("id") == 1500)
    assert not rep.fast_path and "changed type" in rep.fallback_reason
    assert tb.column("id").to_pylist() == [1500]


def test_plan_cache_follows_the_snapshot(tmp_path):
    table = create_sample_table(tmp_path, options=BLOOM, files=2)
    fastpath.clear_plan_cache()
    pred = pf.field("price") >= 0
    tb, rep = read_with_index(table, pred)
    assert tb.num_rows == 2000 and not rep.plan_cached
    tb, rep = read_with_index(table, pred)
    assert tb.num_rows == 2000 and rep.plan_cached
    commit_arrow(table, sample_batch(5))
    tb, rep = read_with_index(table, pred)  # the same table object: the new snapshot is seen
    assert tb.num_rows == 3000 and not rep.plan_cached
    tb, rep = read_with_index(table, pred, use_cache=False)
    assert tb.num_rows == 3000 and not rep.plan_cached


def test_plan_cache_not_fooled_by_a_recreated_table(tmp_path):
    """Drop and re-create a table at the same path: its snapshot ids start again at 1,
    but the cached plan of the old table's snapshot 1 must not be used."""
    import shutil

    fastpath.clear_plan_cache()
    pred = pf.field("price") >= 0
    table = create_sample_table(tmp_path, options=BLOOM, files=1, n=700)
    tb, rep = read_with_index(table, pred)
    assert tb.num_rows == 700 and rep.fast_path and not rep.plan_cached
    path = str(table.table_path)
    shutil.rmtree(path.replace("file://", ""))
    table = create_sample_table(tmp_path, options=BLOOM, files=1, n=300)
    assert str(table.table_path) == path and table.snapshot_manager().get_latest_snapshot().id == 1
    tb, rep = read_with_index(table, pred)
    assert tb.num_rows == 300 and not rep.plan_cached


def test_64bit_deletion_vector(tmp_path_factory, tmp_path):
    """The 64-bit DV table of test_paimon_deletion, read by the fast path."""
    from tests.support.paimon_helpers import rewrite_dv_as_64bit

    wh = unpack_java09(tmp_path_factory.mktemp("fast64"))
    copy_table(wh, str(tmp_path), "append_dv")
    root = os.path.join(str(tmp_path), "db.db", "append_dv")
    table = catalog(tmp_path).get_table("db.append_dv")
    expected = sorted_rows(pypaimon_read(legacy_manifest_table(table), pf.field("id") < 1500))
    rewrite_dv_as_64bit(root)
    table = catalog(tmp_path).get_table("db.append_dv")
    fastpath.clear_plan_cache()
    tb, rep = read_with_index(table, pf.field("id") < 1500)
    assert rep.fast_path and rep.deletion_vectors_folded == 1
    assert sorted_rows(tb) == expected


def test_corrupt_skipped_file_not_read(tmp_path):
    pytest.importorskip("pypaimon_rust")
    table = create_sample_table(tmp_path, options=NATIVE_OPTS, native=True)
    pred = pf.field("name") == "name-1500"
    tb, rep = read_with_index(table, pred)
    assert rep.fast_path and rep.files_skipped >= 1
    bdir = os.path.join(str(tmp_path), "db.db", "t", "bucket-0")
    for name in rep.skipped_files:
        with open(os.path.join(bdir, name), "wb") as f:
            f.write(b"not parquet" * 10)
    tb2, rep2 = read_with_index(table, pred)
    assert tb2.column("id").to_pylist() == [1500] and rep2.skipped_files == rep.skipped_files


def _manifests(java09):
    out = []
    for name in ["append_embedded", "append_sidecar", "append_dv", "pk_dv"]:
        mdir = os.path.join(java09, "db.db", name, "manifest")
        out += [os.path.join(mdir, n) for n in sorted(os.listdir(mdir))]
    return out


def test_lean_avro_reader_equals_fastavro(java09):
    import fastavro

    paths = _manifests(java09)
    assert len(paths) >= 8
    for p in paths:
        data = open(p, "rb").read()
        assert fastpath.read_avro(data) == list(fastavro.reader(io.BytesIO(data)))


def test_lean_avro_reader_fuzz(java09):
    """Truncated or mutated manifests: IndexFormatError, records, or Fallback (a codec
    name we do not know: pypaimon's path then reads it), nothing else."""
    rng = random.Random(12)
    datas = [open(p, "rb").read() for p in _manifests(java09)]
    for i in range(1500):
        d = bytearray(rng.choice(datas))
        if i % 3 == 0:
            d = d[: rng.randrange(len(d))]
        else:
            for _ in range(rng.randint(1, 4)):
                d[rng.randrange(len(d))] = rng.randrange(256)
        try:
            recs = fastpath.read_avro(bytes(d))
        except (IndexFormatError, fastpath.Fallback):
            continue
        assert isinstance(recs, list)


# ---------------------------------------------------------------- merge-read PK splits, 64-bit DVs
def _pk_dv_64(tmp_path, wh):
    """pk_dv (Java 0.9) with its deletion vector rewritten as a 64-bit one."""
    from tests.support.paimon_helpers import rewrite_dv_as_64bit

    copy_table(wh, str(tmp_path), "pk_dv")
    root = os.path.join(str(tmp_path), "db.db", "pk_dv")
    assert rewrite_dv_as_64bit(root) > 0
    return legacy_manifest_table(catalog(tmp_path).get_table("db.pk_dv"))


def _merge_read_splits(table):
    """The table's splits forced to pypaimon's merge read (as a split whose files
    hold delete rows is: ``raw_convertible`` False)."""
    rb = table.new_read_builder()
    splits = rb.new_scan().plan().splits()
    assert splits and all(s.data_deletion_files for s in splits)
    for s in splits:
        s.raw_convertible = False
    return rb, splits


def test_merge_read_pk_split_with_64bit_dv(java09, tmp_path):
    from paimon_fast.paimon import IndexPruner

    t32 = legacy_manifest_table(catalog(java09).get_table("db.pk_dv"))
    rb, splits = _merge_read_splits(t32)
    expected = sorted_rows(rb.new_read().to_arrow(splits))
    assert len(expected) == 3000  # the DV removed rows (3100 written)

    t64 = _pk_dv_64(tmp_path, java09)
    rb, splits = _merge_read_splits(t64)
    with pytest.raises(Exception, match="magic"):
        rb.new_read().to_arrow(splits)  # pypaimon alone: cannot parse the 64-bit vector
    new, rep = IndexPruner(t64, pf.field("id") >= 0).prune(splits)
    assert rep.deletion_vectors_converted == 1 and rep.deletion_vectors_folded == 0
    assert all(not s.raw_convertible for s in new)
    assert sorted_rows(rb.new_read().to_arrow(new)) == expected


def test_merge_read_pk_split_with_64bit_dv_clear_error(java09, tmp_path):
    """Without our FileIO wrapper the converted vector cannot be served: a clear error."""
    from paimon_fast.paimon import IndexPruner
    from paimon_fast.paimon.scan import UnsupportedFeatureError

    t64 = _pk_dv_64(tmp_path, java09)
    plain = catalog(tmp_path).get_table("db.pk_dv")
    plain_t = legacy_manifest_table(plain)
    _, splits = _merge_read_splits(plain_t)
    bare = __import__("copy").copy(plain_t)
    bare.file_io = plain.file_io  # pypaimon's own FileIO
    with pytest.raises(UnsupportedFeatureError, match="64-bit deletion vectors"):
        IndexPruner(bare, pf.field("id") >= 0).prune(splits)
    assert t64 is not None


def test_time_travel_falls_back(tmp_path):
    table = create_sample_table(tmp_path, options=BLOOM, files=3)
    old = table.copy({"scan.snapshot-id": "1"})
    tb, rep = read_with_index(old, pf.field("price") >= 0)
    assert not rep.fast_path and tb.num_rows == 1000
    tb, rep = read_with_index(table, pf.field("price") >= 0)
    assert rep.fast_path and tb.num_rows == 3000


# ---------------------------------------------------------------- cold-path caches (header caches, lean evaluation)
def test_lean_avro_reader_cold_and_warm_headers(java09):
    """Every manifest decodes the same with the header caches empty (each file parsed
    from scratch) and warm from other files of other tables, in any order."""
    import fastavro

    paths = _manifests(java09)
    expected = {p: list(fastavro.reader(io.BytesIO(open(p, "rb").read()))) for p in paths}
    for p in paths:
        fastpath.clear_plan_cache()
        assert not fastpath._HEADER_CACHE
        assert fastpath.read_avro(open(p, "rb").read()) == expected[p]
    rng = random.Random(5)
    for _ in range(3):
        rng.shuffle(paths)
        for p in paths:
            assert fastpath.read_avro(open(p, "rb").read()) == expected[p]
    assert 1 <= len(fastpath._HEADER_CACHE) <= 8  # a few schemas shared by many files
    # the same records under other headers (extra metadata, other codecs): parsed, not matched
    reader = fastavro.reader(io.BytesIO(open(paths[0], "rb").read()))
    schema = fastavro.parse_schema(reader.writer_schema)
    n = len(fastpath._HEADER_CACHE)
    for k, codec in enumerate(["null", "deflate", "null"]):
        buf = io.BytesIO()
        fastavro.writer(buf, schema, expected[paths[0]], codec=codec, metadata={"x": "y" * (k + 1)})
        assert fastpath.read_avro(buf.getvalue()) == expected[paths[0]]
    assert len(fastpath._HEADER_CACHE) == n + 3


EXTRA_PREDS = PREDS + [
    pf.field("name").isin(["name-3", "name-1999", "zzz"]),
    pf.field("category").is_null(),
    pf.field("category") != "red",
    (pf.field("category") == "red") & (pf.field("name") == "name-1500"),
    (pf.field("name") == "nope") | (pf.field("price") > 10),
]


def _containers(table):
    """``(source factory, file)`` of every data file with an index."""
    plan, _ = fastpath.get_plan(table, use_cache=False)
    out = []
    for f in plan.files:
        if f.embedded:
            out.append((lambda f=f: fastpath.BytesSource(bytes(f.embedded)), f))
            continue
        for extra in f.extra:
            if extra.endswith(".index"):
                out.append((lambda f=f, extra=extra: fastpath._PreadSource(f"{f.fsdir}/{extra}"), f))
    return plan, out


def _same_result(a, b):
    assert a.remain == b.remain
    assert isinstance(a, fastpath.BitmapResult) == isinstance(b, fastpath.BitmapResult)
    if isinstance(a, fastpath.BitmapResult):
        assert fastpath.BitMap(a.bitmap) == fastpath.BitMap(b.bitmap)


@pytest.mark.parametrize("name", ["append_embedded", "append_sidecar", "native"])
def test_lean_index_evaluation_equals_container(java09, native_table, name):
    """The lean per-file evaluation (cached header) answers exactly what the container
    object answers, for every file and predicate (AND / OR, non-indexed columns, IN,
    IS NULL, NOT EQUAL)."""
    from paimon_fast.fileindex.format import FileIndexFile
    from paimon_fast.paimon.scan import _result_of

    table = native_table if name == "native" else catalog(java09).get_table("db." + name)
    plan, conts = _containers(table)
    assert conts
    schemas = fastpath._Schemas(table, plan)
    for make, f in conts:
        names, types = schemas.index_view(f.schema_id)
        with make() as src:
            layout = FileIndexFile(src, types, {}).layout()
            for pred in EXTRA_PREDS:
                _same_result(
                    fastpath._lean_result(src, layout[0], names, types, pred),
                    _result_of(FileIndexFile(src, types, {}), pred, names),
                )


def test_container_header_cache_never_trusts_other_bytes(tmp_path):
    """Sidecars sharing one header: a truncated one (other size) is parsed and found
    corrupt (its file kept), one with a corrupt index body answers as the container
    does; rows equal pypaimon's either way, cold and warm."""
    pytest.importorskip("pypaimon_rust")
    opts = {"file-index.bloom-filter.columns": "name", "file-index.bloom-filter.name.items": "1000"}
    table = create_sample_table(tmp_path, options=opts, native=True, files=5)
    bdir = os.path.join(str(tmp_path), "db.db", "t", "bucket-0")
    sidecars = sorted(n for n in os.listdir(bdir) if n.endswith(".index"))
    assert len(sidecars) >= 3
    heads = set()
    for n in sidecars:
        with fastpath._PreadSource(os.path.join(bdir, n)) as src:
            heads.add(fastpath._header_key(src)[0])
    assert len(heads) == 1  # one header shared by every sidecar: the cache has something to share
    with open(os.path.join(bdir, sidecars[1]), "r+b") as fh:
        fh.truncate(os.path.getsize(os.path.join(bdir, sidecars[1])) - 3)
    p2 = os.path.join(bdir, sidecars[2])
    data = bytearray(open(p2, "rb").read())
    with fastpath._PreadSource(p2) as src:
        head_len = len(fastpath._header_key(src)[0])
    for i in range(head_len, len(data), 7):
        data[i] ^= 0x5A
    open(p2, "wb").write(bytes(data))
    for rounds in range(2):
        fastpath.clear_plan_cache()
        for pred in EXTRA_PREDS:
            for _ in range(2):  # cold plan, then warm (cached layouts)
                fast, rep = read_with_index(table, pred)
                assert rep.fast_path
                assert sorted_rows(fast) == sorted_rows(_exact(pypaimon_read(table, pred), table, pred))


def test_pread_source_reads(tmp_path):
    rng = random.Random(3)
    data = bytes(rng.randrange(256) for _ in range(10000))
    p = tmp_path / "x.bin"
    p.write_bytes(data)
    for _ in range(200):
        with fastpath._PreadSource(str(p)) as src:
            for _ in range(4):
                off = rng.choice([0, rng.randrange(len(data)), rng.randrange(4096), 4090])
                n = rng.randrange(0, min(len(data) - off, 6000) + 1)
                assert bytes(src.read_at(off, n)) == data[off : off + n]
            with pytest.raises(IndexFormatError):
                src.read_at(len(data) - 2, 3)
    small = tmp_path / "s.bin"
    small.write_bytes(data[:100])
    with fastpath._PreadSource(str(small)) as src:
        assert bytes(src.read_at(0, 20)) == data[:20] and bytes(src.read_at(90, 10)) == data[90:100]
        assert src.bytes_read == 100


def test_clear_plan_cache_clears_header_caches(native_table):
    read_with_index(native_table, pf.field("name") == "name-3")
    assert fastpath._HEADERS and fastpath._HEADER_CACHE and fastpath._SCHEMA_CACHE
    fastpath.clear_plan_cache()
    assert not fastpath._HEADERS and not fastpath._HEADER_CACHE and not fastpath._SCHEMA_CACHE
