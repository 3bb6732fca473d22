"""Iceberg interop (pyiceberg reads our Puffin deletion vectors), applying
vectors to Arrow data, and the dynamic bucket index."""

import numpy as np
import pyarrow as pa
import pytest

from paimon_fast import tableindex as ti
from paimon_fast.reference import tableindex as ref
from tests.support.vectorlib import arrow_values, load_bin, manifest


def test_pyiceberg_reads_our_puffin_deletion_vectors(tmp_path):
    pytest.importorskip("pyiceberg", reason="pyiceberg is in the test extra")
    from pyiceberg.table.deletion_vector import deletion_vectors_from_puffin_file
    from pyiceberg.table.puffin import PuffinFile

    rng = np.random.default_rng(5)
    m = manifest("deletion_vector_64")
    vectors = []
    for b in m["blobs_64"]:  # Java's own 64-bit blobs, re-encoded by us
        blob = load_bin("deletion_vector_64", b["file"])
        dv = ti.DeletionVector.from_blob(blob)
        assert dv.to_blob() == blob
        vectors.append((f"data/{b['name']}.parquet", dv))
    vectors.append(
        ("data/random.parquet", ti.DeletionVector.from_positions(rng.integers(0, 3 * 2**32, 20000), bitmap64=True))
    )
    vectors.append(("data/from32.parquet", ti.DeletionVector.from_positions(np.arange(0, 70000, 7))))
    path = tmp_path / "dv.puffin"
    data = ti.write_puffin(vectors, path)
    assert path.read_bytes() == data
    got = deletion_vectors_from_puffin_file(PuffinFile(data))
    assert [g.referenced_data_file for g in got] == [n for n, _ in vectors]
    for g, (_, dv) in zip(got, vectors):
        # the bitmaps pyiceberg's Puffin reader deserialized (key k = positions k << 32 | low)
        from_bitmaps = [(k << 32) | int(p) for k, bm in enumerate(g._bitmaps) for p in bm]
        assert from_bitmaps == dv.positions().tolist()
        if len(g._bitmaps) and len(g._bitmaps[0]):
            # to_vector() infers the Arrow type from key 0's chunk: it fails when that one is empty
            np.testing.assert_array_equal(np.array(g.to_vector().to_pylist(), dtype=np.uint64), dv.positions())
    # and back through our reader
    for (n, dv), (n2, dv2) in zip(vectors, ti.read_puffin(path)):
        assert n == n2
        assert dv2.positions().tolist() == dv.positions().tolist()


def test_apply_deletion_vector_to_record_batches():
    n = 100_000
    table = pa.table({"id": np.arange(n), "s": pa.array([f"r{i}" for i in range(n)])})
    deleted = np.random.default_rng(1).choice(n, 10_000, replace=False)
    for bits64 in (False, True):
        dv = ti.DeletionVector.from_positions(deleted, bitmap64=bits64)
        out = pa.Table.from_batches(list(ti.filter_batches(dv, table.to_batches(max_chunksize=7_777))))
        keep = np.setdiff1d(np.arange(n), deleted)
        np.testing.assert_array_equal(out.column("id").to_numpy(), keep)
        assert out.column("s").to_pylist()[:3] == [f"r{i}" for i in keep[:3]]
        b = table.slice(500, 1000).to_batches()[0]
        np.testing.assert_array_equal(
            dv.filter_batch(b, 500).column("id").to_numpy(),
            ref.filter_batch(dv.positions(), b, 500).column("id").to_numpy(),
        )


def _bucket_files():
    m = manifest("hash_index")
    by = {c["name"]: c for c in m["cases"]}
    return by, [
        (0, load_bin("hash_index", by["hash_pk_int_1000"]["file"])),
        (1, load_bin("hash_index", by["hash_pk_int_string_200"]["file"])),
    ]


def test_dynamic_bucket_index_lookup_and_assign():
    by, files = _bucket_files()
    idx = ti.DynamicBucketIndex.from_files(files, target_row_num=1100)
    c = by["hash_pk_int_1000"]
    cols = [arrow_values([k[0] for k in c["keys_in_insert_order"]], "INT")]
    assert (idx.lookup(cols, ["INT"]) == 0).all()
    c2 = by["hash_pk_int_string_200"]
    cols2 = [arrow_values([k[i] for k in c2["keys_in_insert_order"]], t) for i, t in enumerate(c2["key_types"])]
    assert (idx.lookup(cols2, c2["key_types"]) == 1).all()
    # new keys: bucket 0 up to 1100 rows, then bucket 1 up to 1100, then new bucket 2
    new = np.arange(10**9, 10**9 + 2000, dtype=np.int32)
    new_hashes = ti.binary_row_hash([pa.array(new)], ["INT"])
    assert not (idx.lookup_hashes(new_hashes) >= 0).any()
    got = idx.assign_hashes(np.concatenate([new_hashes, new_hashes[:10]]))
    assert (got[:100] == 0).all() and (got[100:1000] == 1).all() and (got[1000:2000] == 2).all()
    assert (got[2000:] == 0).all()
    assert idx.buckets == {0: 1100, 1: 1100, 2: 1000}
    assert (idx.assign_hashes(new_hashes) == got[:2000]).all()  # stable
    files_out = idx.hash_index_files()
    old0 = ti.read_hash_index(files[0][1])
    assert files_out[0] == ti.write_hash_index(np.concatenate([old0, new_hashes[:100]]), previous_count=len(old0))
    assert ti.read_hash_index(files_out[0]).tolist() == ref.int_set_order(
        old0.tolist() + new_hashes[:100].tolist(), len(old0)
    )
    assert files_out[2] == ti.write_hash_index(new_hashes[1000:2000])


def test_dynamic_bucket_index_java_hashmap_order_and_bound():
    # buckets 40 and 8 share HashMap bin 8 of a 16-slot table: insertion order inside the bin
    files = [(40, ti.write_int_file([1])), (8, ti.write_int_file([2])), (3, ti.write_int_file([3]))]
    idx = ti.DynamicBucketIndex.from_files(files, target_row_num=2)
    assert idx.assign_hashes([10, 11, 12]).tolist() == [3, 40, 8]
    assert idx.assign_hashes([13]).tolist() == [0]  # all full -> lowest free bucket id
    bounded = ti.DynamicBucketIndex(target_row_num=1, max_buckets=2, seed=1)
    out = bounded.assign_hashes(np.arange(1, 50))
    assert out[:2].tolist() == [0, 1] and set(out.tolist()) == {0, 1}


@pytest.mark.parametrize("offset", [0, 3, 13])
def test_apply_deletion_vector_all_column_kinds(offset):
    import decimal

    rng = np.random.default_rng(offset)
    n = 3000 + offset
    nulls = rng.random(n) < 0.2
    cols = {
        "i8": pa.array(rng.integers(-100, 100, n).astype(np.int8), mask=nulls),
        "i64": pa.array(rng.integers(-(2**62), 2**62, n), mask=nulls),
        "f32": pa.array(rng.random(n).astype(np.float32)),
        "b": pa.array(rng.random(n) < 0.5, mask=nulls),
        "s": pa.array([None if x else f"s{i}" * (i % 5) for i, x in enumerate(nulls)]),
        "ls": pa.array([f"x{i}" for i in range(n)], pa.large_string()),
        "bin": pa.array([bytes([i % 256]) * (i % 9) for i in range(n)], pa.binary()),
        "d": pa.array([decimal.Decimal(i) / 100 for i in range(n)], pa.decimal128(10, 2)),
        "ts": pa.array(rng.integers(0, 2**40, n), pa.int64()).cast(pa.timestamp("us")),
        "lst": pa.array([[i, i + 1] for i in range(n)]),  # not flat: Arrow's filter
    }
    batch = pa.RecordBatch.from_pydict(cols).slice(offset)  # pa.record_batch(dict) needs pyarrow 15
    deleted = rng.choice(n, n // 7, replace=False) + 1000
    dv = ti.DeletionVector.from_positions(deleted)
    got = ti.apply_deletion_vector(dv, batch, 1000)
    got.validate(full=True)
    want = batch.filter(pa.array(dv.keep_mask(1000, batch.num_rows)))
    assert got.equals(want)
    assert ti.apply_deletion_vector(dv, batch, 10**7) is batch  # no deleted rows in range
    t = pa.Table.from_batches([batch])
    assert ti.apply_deletion_vector(dv, t, 1000).equals(pa.Table.from_batches([want]))


def test_remove_deleted_from_index_results():
    from pyroaring import BitMap, BitMap64

    dv = ti.DeletionVector.from_positions([1, 5, 9, 2**20])
    assert dv.remove_deleted(BitMap([0, 1, 2, 5, 2**20, 2**20 + 1])) == BitMap([0, 2, 2**20 + 1])
    dv64 = ti.DeletionVector.from_positions([2**33, 3], bitmap64=True)
    assert dv64.remove_deleted(BitMap64([3, 4, 2**33, 2**33 + 1])) == BitMap64([4, 2**33 + 1])
    assert dv.remove_deleted(np.array([1, 2, 3])).tolist() == [2, 3]
    assert len(dv.remove_deleted(BitMap())) == 0
