"""Tables on object stores: the filesystem layer (paimon_fast.fs) against a local S3
server (moto, 127.0.0.1) and the local filesystem: atomic writes, conditional
creates that refuse a second writer, versioned commit objects found even when a
listing lags, counted ranged reads."""
import os
import pickle

import pytest

from paimon_fast import fs
from paimon_fast.fs import CommitConflictError, CommitFile, IOCounter


@pytest.fixture
def s3(s3_server):
    b = s3_server.new_bucket()
    store, root = fs.resolve(s3_server.uri(b, "t"))
    return store, root, b


def test_resolve_paths_and_uris(tmp_path, s3_server):
    store, p = fs.resolve(str(tmp_path / "x"))
    assert store.local and p == str(tmp_path / "x")
    store, p = fs.resolve(f"file://{tmp_path}/y")
    assert store.local and p == f"{tmp_path}/y"
    b = s3_server.new_bucket()
    store, p = fs.resolve(s3_server.uri(b, "a/b/"))
    assert not store.local and store.object_store and p == f"{b}/a/b"
    assert store.uri(p) == f"s3://{b}/a/b"                      # shown without credentials
    assert fs.display_uri(s3_server.uri(b, "a")) == f"s3://{b}/a"
    store2, p2 = fs.resolve(f"s3://{b}/a", s3_server.filesystem())
    assert p2 == f"{b}/a" and store2.type_name == "s3"
    back = pickle.loads(pickle.dumps(store))                   # executors get the same store
    back.write_atomic(f"{b}/a/z", b"1")
    assert store.read_bytes(f"{b}/a/z") == b"1"


@pytest.mark.parametrize("where", ["local", "s3"])
def test_atomic_writes_and_exclusive_create(where, tmp_path, s3):
    store, root = (fs.Store(), str(tmp_path)) if where == "local" else s3[:2]
    p = store.join(root, "d", "f.json")
    store.write_atomic(p, b"one")
    store.write_atomic(p, b"two")
    assert store.read_bytes(p) == b"two"
    with pytest.raises(RuntimeError):
        store.write_atomic(p, b"three-three", _fault="raise")
    assert store.read_bytes(p) == b"two"                      # a failed write leaves the old bytes
    q = store.join(root, "d", "g.json")
    store.create_exclusive(q, b"first")
    with pytest.raises(CommitConflictError):
        store.create_exclusive(q, b"second")
    assert store.read_bytes(q) == b"first"                    # never silently overwritten
    names = [e.rel for e in store.list_files(root)]
    assert names == ["d/f.json", "d/g.json"]                  # no temporary file left
    assert store.stat(p)[0] == 3 and store.stat(store.join(root, "nope")) is None


@pytest.mark.parametrize("where", ["local", "s3"])
def test_commit_file_versions_and_lost_race(where, tmp_path, s3):
    store, root = (fs.Store(), str(tmp_path)) if where == "local" else s3[:2]
    cf = CommitFile(store, root, "_catalog.json")
    assert cf.read() == (None, None)
    v, _ = cf.read()
    v1 = cf.write(b"A", v)
    v, data = cf.read()
    assert data == b"A"
    if where == "local":
        assert v is None and v1 is None and os.path.exists(os.path.join(root, "_catalog.json"))
        return
    assert v == v1 == 1
    assert cf.write(b"B", v) == 2
    with pytest.raises(CommitConflictError, match="another writer committed version 2"):
        cf.write(b"C", v)                                     # started from version 1: lost the race
    assert cf.read() == (2, b"B")
    # a listing that lags behind a fresh commit: the next versions are probed directly
    cf.versions = lambda: [1]
    assert cf.read() == (2, b"B")
    assert CommitFile(store, root, "_catalog.json").stale_versions(keep=1) == [cf._vpath(1)]


@pytest.mark.parametrize("where", ["local", "s3"])
def test_ranged_counted_reads(where, tmp_path, s3):
    store, root = (fs.Store(), str(tmp_path)) if where == "local" else s3[:2]
    p = store.join(root, "blob")
    data = bytes(range(256)) * 1000
    store.write_atomic(p, data)
    c = IOCounter()
    with store.open_source(p, c) as src:
        assert src.size == len(data)
        assert bytes(src.read_at(1000, 10)) == data[1000:1010]
        assert bytes(src.read_at(len(data) - 4, 4)) == data[-4:]
    assert c.snapshot() == (14, 2)                            # two ranged reads, 14 bytes, not the file
    import pyarrow as pa
    import pyarrow.parquet as pq

    q = store.join(root, "t.parquet")
    buf = pa.BufferOutputStream()
    n = 200_000
    pq.write_table(pa.table({"a": list(range(n)), "b": [str(i) for i in range(n)]}), buf,
                   row_group_size=20_000)
    store.write_atomic(q, buf.getvalue().to_pybytes())
    c = IOCounter()
    t = pq.ParquetFile(store.open_input(q, c)).read_row_group(3, columns=["a"])
    assert t.column("a").to_pylist() == list(range(60_000, 80_000))
    # the footer (pyarrow reads the last 64 KiB first) and one column chunk of one row group
    md = pq.ParquetFile(store.open_input(q)).metadata
    chunk = md.row_group(3).column(0).total_compressed_size
    assert chunk <= c.bytes <= chunk + max(65536, md.serialized_size + 8) and c.bytes < store.size(q) / 5


def test_fsspec_filesystem(tmp_path):
    fsspec = pytest.importorskip("fsspec")
    mem = fsspec.filesystem("memory")
    store, root = fs.resolve("/pf-test-mem", mem)
    assert not store.local and not store.object_store
    p = store.join(root, "x.json")
    store.write_atomic(p, b"1")
    store.write_atomic(p, b"2")
    assert store.read_bytes(p) == b"2"
    store.create_exclusive(store.join(root, "y"), b"1")
    with pytest.raises(CommitConflictError):
        store.create_exclusive(store.join(root, "y"), b"2")
    assert [e.rel for e in store.list_files(root)] == ["x.json", "y"]
