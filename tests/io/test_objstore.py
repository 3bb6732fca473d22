"""Tables on object stores: the filesystem layer (paimon_fast.io.fs) against a local S3
server (moto, 127.0.0.1) and the local filesystem: atomic writes, conditional
creates that refuse a second writer, versioned commit objects found even when a
listing lags, counted ranged reads."""

import json
import os
import pickle

import pytest

from paimon_fast.io import fs
from paimon_fast.io.fs import CommitConflictError, CommitFile, IOCounter
from paimon_fast.io.fsutil import Chunks
from tests.support.objstore_support import (
    OPTIONS,
    PREDICATES,
    no_statistics,  # noqa: F401  (an autouse fixture)
    oracle,
    paimon_catalog,
    write_dataset,
)


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
    assert store.uri(p) == f"s3://{b}/a/b"  # shown without credentials
    assert fs.display_uri(s3_server.uri(b, "a")) == f"s3://{b}/a"
    store2, p2 = fs.resolve(f"s3://{b}/a", s3_server.filesystem())
    assert p2 == f"{b}/a" and store2.type_name == "s3"
    back = pickle.loads(pickle.dumps(store))  # executors get the same store
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
    assert store.read_bytes(p) == b"two"  # a failed write leaves the old bytes
    q = store.join(root, "d", "g.json")
    store.create_exclusive(q, b"first")
    with pytest.raises(CommitConflictError):
        store.create_exclusive(q, b"second")
    assert store.read_bytes(q) == b"first"  # never silently overwritten
    names = [e.rel for e in store.list_files(root)]
    assert names == ["d/f.json", "d/g.json"]  # no temporary file left
    assert store.stat(p)[0] == 3 and store.stat(store.join(root, "nope")) is None
    # a file given as buffers (a global index build's Chunks) is written whole, in order
    big = bytes(range(256)) * 40
    chunks = Chunks([big[:100], memoryview(big)[100:3000], b"", bytearray(big[3000:])])
    assert len(chunks) == len(big) and bytes(chunks) == big
    store.write_atomic(p, chunks)
    assert store.read_bytes(p) == big
    with pytest.raises(RuntimeError):
        store.write_atomic(p, Chunks([b"x" * 10, b"y" * 10]), _fault="raise")
    assert store.read_bytes(p) == big


@pytest.mark.parametrize("where", ["local", "s3"])
def test_commit_file_versions_and_lost_race(where, tmp_path, s3):
    store, root = (fs.Store(), str(tmp_path)) if where == "local" else s3[:2]
    cf = CommitFile(store, root, "_catalog.json")
    assert cf.read() == (None, None)
    v, _ = cf.read()
    v1 = cf.write(b"A", v)
    v, data = cf.read()
    assert data == b"A"
    if where == "local":  # versions locally too (created by hard link, which fails onto an existing name)
        assert os.path.exists(os.path.join(root, "_commits", "_catalog.json.0000000001"))
        assert not os.path.exists(os.path.join(root, "_catalog.json"))
    assert v == v1 == 1
    assert cf.write(b"B", v) == 2
    with pytest.raises(CommitConflictError, match="another writer committed version 2"):
        cf.write(b"C", v)  # started from version 1: lost the race
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
    assert c.snapshot() == (14, 2)  # two ranged reads, 14 bytes, not the file
    if where == "s3":  # a header read in small steps: one request
        c = IOCounter()
        with store.open_source(p, c, head=4096) as src:
            assert bytes(src.read_at(0, 8)) + bytes(src.read_at(8, 100)) == data[:108]
            assert bytes(src.read_at(5000, 3)) == data[5000:5003]
        assert c.snapshot() == (4096 + 3, 2)
    import pyarrow as pa
    import pyarrow.parquet as pq

    q = store.join(root, "t.parquet")
    buf = pa.BufferOutputStream()
    n = 200_000
    pq.write_table(pa.table({"a": list(range(n)), "b": [str(i) for i in range(n)]}), buf, row_group_size=20_000)
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


def test_local_listing_walks_like_os_walk(tmp_path):
    """A local store's recursive listing: every file under the root with its stat, directories
    ``skip_dir`` names left out with all under them, links to directories listed nowhere and not
    entered, broken links and refused names left out; the oracle is os.walk + os.stat."""
    root = tmp_path / "d"
    for rel in ("a.parquet", "b/c.parquet", "b/e/f.parquet", "_hidden/g.parquet", "b/_x/h.parquet", "n.txt"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(b"x" * len(rel))
    os.symlink(root / "b", root / "link_dir")
    os.symlink(root / "a.parquet", root / "b" / "link.parquet")
    os.symlink(root / "gone.parquet", root / "broken.parquet")
    store, r = fs.resolve(str(root))

    def skip(d):
        return d.startswith("_")

    def keep(n):
        return n.endswith(".parquet")

    want = []
    for dirpath, dirnames, filenames in os.walk(r):
        dirnames[:] = [d for d in dirnames if not skip(d)]
        for n in filenames:
            p = os.path.join(dirpath, n)
            if keep(n) and os.path.exists(p):
                st = os.stat(p)
                want.append((os.path.relpath(p, r), p, st.st_size, st.st_mtime_ns, st.st_ino))
    got = [(e.rel, e.path, e.size, e.mtime_ns, e.ino) for e in store.list_files(r, skip_dir=skip, keep=keep)]
    assert got == sorted(want)
    assert [g[0] for g in got] == ["a.parquet", "b/c.parquet", "b/e/f.parquet", "b/link.parquet"]
    assert store.list_files(str(tmp_path / "nope")) == []
    # one level: the root's files as os.listdir sees them (links to files followed, broken ones and
    # directories left out), with the same stats
    top = []
    for n in os.listdir(r):
        p = os.path.join(r, n)
        if os.path.isfile(p):
            st = os.stat(p)
            top.append((n, p, st.st_size, st.st_mtime_ns, st.st_ino))
    got = [(e.rel, e.path, e.size, e.mtime_ns, e.ino) for e in store.list_files(r, recursive=False)]
    assert got == sorted(top) and len(got) >= 2
    assert [e.rel for e in store.list_files(r, recursive=False, keep=keep)] == ["a.parquet"]


def test_a_root_that_cannot_be_listed_is_not_empty(tmp_path, monkeypatch):
    from paimon_fast._kernels import load

    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.parquet").write_bytes(b"x")
    store, r = fs.resolve(str(tmp_path))
    kernel = load("dirscan")  # (what reads a local directory)
    real = kernel.scan

    def scan(p, keep=None):
        if os.path.basename(p) == "d":
            raise PermissionError(13, "Permission denied", p)
        return real(p, keep)

    monkeypatch.setattr(kernel, "scan", scan)
    assert store.list_files(r) == []  # a directory under the root that cannot be listed: skipped
    with pytest.raises(PermissionError):
        store.list_files(os.path.join(r, "d"))
    with pytest.raises(PermissionError):
        store.list_files(os.path.join(r, "d"), recursive=False)


# ---------------------------------------------------------------- Parquet datasets on S3

import subprocess  # noqa: E402
import sys  # noqa: E402

import paimon_fast as pf  # noqa: E402
from paimon_fast.tables import ParquetDataset  # noqa: E402


@pytest.fixture
def local_and_s3(tmp_path, s3_server):
    local = write_dataset(str(tmp_path / "local"))
    b = s3_server.new_bucket()
    s3_server.upload_dir(local, b, "events")
    return local, s3_server.uri(b, "events"), b


def _answers(ds, preds=PREDICATES):
    out = {}
    for w in preds:
        t, rep = ds.scan(w)
        out[w] = (sorted(t.column("id").to_pylist()), rep.files_skipped, rep.rows_read)
    return out


def test_dataset_build_and_pruned_read_on_s3_equal_local(local_and_s3, s3_server):
    local, uri, bucket = local_and_s3
    lds, sds = ParquetDataset(local), ParquetDataset(uri)
    assert [f.path for f in sds.files()] == [f.path for f in lds.files()]
    lrep, srep = lds.build(OPTIONS), sds.build(OPTIONS)
    assert (srep.files_built, srep.inline, srep.index_bytes) == (lrep.files_built, lrep.inline, lrep.index_bytes)
    want = _answers(lds)
    got = _answers(sds)
    assert got == want
    for w in PREDICATES:
        assert got[w][0] == oracle(local, w)
    assert any(v[1] > 0 for v in got.values())  # the indexes pruned files on S3 too
    keys = s3_server.keys(bucket, "events")
    assert "events/_commits/_paimon_fast_catalog.json.0000000001" in keys
    assert "events/_paimon_fast_catalog.json" not in keys  # the catalog is a versioned commit there
    idx = [k for k in keys if k.endswith(".index")]
    assert idx and all(len(k.rsplit("/", 1)[1].split(".")[-2]) == 16 for k in idx)  # content-hash names
    assert all(k.startswith("events/_file_index/") for k in idx)  # where no Parquet reader looks
    for k in keys:  # credentials never land in the table
        body = s3_server.client.get_object(Bucket=bucket, Key=k)["Body"].read()
        assert b"testing-secret" not in body and b"testing-key" not in body
    # a re-run finds every index current; the plan reads the catalog and index bytes only
    assert sds.build(OPTIONS).files_built == 0
    from paimon_fast.tables.parquet import HELD_READERS

    HELD_READERS.clear()  # as in a new process: no index reader held from the reads above
    plan = ParquetDataset(uri).plan("id = 1234")
    sizes = {k: s3_server.client.head_object(Bucket=bucket, Key=k)["ContentLength"] for k in keys}
    catalog = sizes[max(k for k in keys if "_commits/" in k)]
    # the catalog once, index files (small ones whole) and one footer (the schema): no data pages
    assert (
        0
        < plan.report.bytes_read
        <= catalog + sum(n for k, n in sizes.items() if k.endswith(".index")) + sds.files()[0].size
    )
    # planned again, the held readers read none of the index bytes again
    assert ParquetDataset(uri).plan("id = 1234").report.bytes_read < plan.report.bytes_read
    # the same through an explicit pyarrow filesystem and a path inside it
    fds = ParquetDataset(f"{bucket}/events", s3_server.filesystem())
    assert _answers(fds) == want


def test_deletes_and_global_index_on_s3_equal_local(local_and_s3):
    from paimon_fast.tables import globalindex as sb

    local, uri, _ = local_and_s3
    results = []
    for root in (local, uri):
        ds = ParquetDataset(root)
        ds.build(OPTIONS)
        rep = ds.delete("status = 'sent'")
        sb.build_global_index_local(root, "name")
        ds = ParquetDataset(root)
        t, srep = ds.scan("name = 'us4-2'")
        assert srep.global_index_used == ["name"]
        results.append(
            (
                rep.rows_deleted,
                _answers(ds),
                sorted(t.column("id").to_pylist()),
                sb.read_listing(root, "name")["total_row_count"],
            )
        )
    assert results[0] == results[1]
    sent = set(oracle(local, "status = 'sent'"))
    assert results[1][0] == len(sent)
    assert results[1][2] == [i for i in oracle(local, "name = 'us4-2'") if i not in sent]


def test_catalog_commit_race_is_refused_on_s3(local_and_s3):
    from paimon_fast.io.fs import CommitConflictError

    _, uri, _ = local_and_s3
    ParquetDataset(uri).build(OPTIONS)
    a, b = ParquetDataset(uri), ParquetDataset(uri)
    ca, cb = a.read_catalog(), b.read_catalog()
    ca["note"] = "writer a"
    a.write_catalog(ca)
    cb["note"] = "writer b"
    with pytest.raises(CommitConflictError, match="another writer committed"):
        b.write_catalog(cb)  # lost the race: refused, not overwritten
    assert ParquetDataset(uri).read_catalog()["note"] == "writer a"
    with pytest.raises(pf.errors.PaimonFastError):
        b.write_catalog(cb)


KILL_SCRIPT = r"""
import os, sys
from paimon_fast.tables import ParquetDataset
from paimon_fast.tables import globalindex as sb
uri, what = sys.argv[1], sys.argv[2]
if what == "build":
    from paimon_fast.io.fs import CommitFile
    CommitFile.write = lambda *a, **k: os._exit(17)   # killed after the index files, before the commit
    ParquetDataset(uri).build({"file-index.bitmap.columns": "name,status", "file-index.in-manifest-threshold": "64"})
else:
    from paimon_fast.io.fs import CommitFile
    CommitFile.write = lambda *a, **k: os._exit(17)
    sb.build_global_index_local(uri, "name", {"bitmap-index.compression": "zstd"})
"""


def test_killed_build_on_s3_leaves_old_state_rerun_and_gc(local_and_s3, s3_server, capsys):
    from paimon_fast.cli import main
    from paimon_fast.tables import globalindex as sb

    local, uri, bucket = local_and_s3
    ParquetDataset(uri).build(OPTIONS)
    sb.build_global_index_local(uri, "name")
    before_keys = set(s3_server.keys(bucket))
    before = _answers(ParquetDataset(uri))
    before_cat = ParquetDataset(uri).read_catalog()
    before_listing = sb.read_listing(uri, "name")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    for what in ("build", "global"):
        r = subprocess.run([sys.executable, "-c", KILL_SCRIPT, uri, what], env=env, capture_output=True, timeout=120)
        assert r.returncode == 17, r.stderr.decode()
    orphans = set(s3_server.keys(bucket)) - before_keys
    assert len(orphans) >= 3  # new index files + the killed global index file
    ds = ParquetDataset(uri)
    assert ds.read_catalog() == before_cat and _answers(ds) == before  # readers see the old state
    assert sb.read_listing(uri, "name") == before_listing

    assert main(["gc", uri, "--min-age", "0", "--json"]) == 0  # dry run: lists exactly the orphans
    rep = json.loads(capsys.readouterr().out)
    assert {o["path"].split("/", 3)[-1] for o in rep["orphans"]} == orphans
    assert set(s3_server.keys(bucket)) - before_keys == orphans  # nothing removed
    assert main(["gc", uri, "--json"]) == 0  # young files are left alone by default
    assert json.loads(capsys.readouterr().out)["too_young"] == len(orphans)

    new_opts = {"file-index.bitmap.columns": "name,status", "file-index.in-manifest-threshold": "64"}
    rerun = ParquetDataset(uri).build(new_opts)  # a re-run completes
    assert rerun.files_built == 6
    sb.build_global_index_local(uri, "name", {"bitmap-index.compression": "zstd"})
    assert main(["gc", uri, "--min-age", "0", "--delete", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["removed"] == len(rep["orphans"]) > 0
    assert main(["gc", uri, "--min-age", "0", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["orphans"] == []  # nothing left unreferenced
    lds = ParquetDataset(local)
    lds.build(OPTIONS)  # the same history: a file's statistics of columns indexed before stay
    lds.build(new_opts)
    sb.build_global_index_local(local, "name", {"bitmap-index.compression": "zstd"})
    assert _answers(ParquetDataset(uri)) == _answers(lds)


def test_gc_on_local_dataset_lists_temp_and_unreferenced(tmp_path):
    from paimon_fast.tables.gc import collect

    root = write_dataset(str(tmp_path / "d"))
    ParquetDataset(root).build(OPTIONS)
    stray = os.path.join(root, "region=eu", "part-9.parquet.index")
    open(stray, "wb").write(b"x")
    tmp = os.path.join(root, "region=us", ".part-0.parquet.index.tmp-abc")
    open(tmp, "wb").write(b"y")
    run = os.path.join(root, "_global_index", "name", ".runs-0123456789ab", "00000003.arrow")  # a killed Spark build's
    os.makedirs(os.path.dirname(run))
    open(run, "wb").write(b"z")
    rep = collect(root, min_age=0)
    assert sorted(o.path for o in rep.orphans) == sorted([stray, tmp, run]) and not rep.deleted
    assert os.path.exists(stray)
    rep = collect(root, min_age=0, delete=True)
    assert rep.removed == 3 and not os.path.exists(stray) and not os.path.exists(tmp) and not os.path.exists(run)
    assert ParquetDataset(root).scan("id = 1234")[0].num_rows == 1


# ---------------------------------------------------------------- Hudi sidecar index on S3

HUDI_TABLES = ["sample_table/cow/v9_txns_simple_nometa.zip", "quickstart_trips_table/mor/avro/v8_trips_8i3u1d.zip"]


@pytest.mark.parametrize("rel", HUDI_TABLES)
def test_hudi_sidecar_on_s3_equals_local(rel, tmp_path, s3_server):
    """A copy of a Java-written Hudi table uploaded to the S3 server: the sidecar index is built
    there (segments + a conditionally created manifest) and pruned reads equal the local run."""
    import paimon_fast.hudi as ph
    from tests.support.hudi_support import (
        battery,
        indexable,
        oracle_rows,
        require_tables,
        row_multiset,
        snapshot,
        unzip_table,
    )
    from paimon_fast.hudi import storage

    require_tables()
    pytest.importorskip("hudi", reason="the hudi package (the tables extra) reads the Hudi tables as the oracle")
    local = unzip_table(rel, str(tmp_path / "t"))
    bucket = s3_server.new_bucket()
    s3_server.upload_dir(local, bucket, "tbl")
    uri = s3_server.uri(bucket, "tbl")
    snap = snapshot(local)
    cols = indexable(snap.schema)
    lrep, srep = ph.build_index(None, local, cols), ph.build_index(None, uri, cols)
    assert (srep["slices_indexed"], srep["records_written"]) == (lrep["slices_indexed"], lrep["records_written"])
    assert srep["table"] == f"s3://{bucket}/tbl"  # no credentials in reports
    keys = s3_server.keys(bucket, "tbl/.hoodie/.aux/bitmap_index/")
    assert [k.rsplit("/", 1)[1] for k in keys if "/manifests/" in k] == [f"manifest-{srep['instant']}.json"]
    assert any("/segments/seg-" in k for k in keys)
    preds = battery(snap, cols, snap.schema, max_single=3)[:8]
    assert preds
    pruned = 0
    for p in preds:
        lr, sr = ph.read_arrow(local, p), ph.read_arrow(uri, p)
        assert (
            row_multiset(sr.table.to_pylist())
            == row_multiset(lr.table.to_pylist())
            == row_multiset(oracle_rows(snap, p))
        ), p
        assert {k: v for k, v in sr.report.items() if not k.startswith(("ms_", "bytes"))} == {
            k: v for k, v in lr.report.items() if not k.startswith(("ms_", "bytes"))
        }
        assert sr.report["bytes_read"] > 0
        pruned += sr.report["slices_pruned"]
    # a second run at the same instant publishes a new manifest name, never overwriting one
    again = ph.build_index(None, uri, cols)
    assert again["slices_carried"] == srep["slices_indexed"] and again["slices_indexed"] == 0
    assert storage.list_manifests(uri)[-1] == f"{srep['instant']}-0001"


def test_hudi_killed_build_on_s3_and_gc(tmp_path, s3_server, capsys):
    import paimon_fast.hudi as ph
    from tests.support.hudi_support import indexable, require_tables, snapshot, unzip_table
    from paimon_fast.cli import main

    require_tables()
    pytest.importorskip("hudi", reason="the hudi package (the tables extra) reads the Hudi tables as the oracle")
    local = unzip_table(HUDI_TABLES[0], str(tmp_path / "t"))
    bucket = s3_server.new_bucket()
    s3_server.upload_dir(local, bucket, "tbl")
    uri = s3_server.uri(bucket, "tbl")
    cols = indexable(snapshot(local).schema)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), PAIMON_FAST_HUDI_CRASH_BEFORE_MANIFEST="1")
    code = f"import paimon_fast.hudi as ph; ph.build_index(None, {uri!r}, {cols!r})"
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, timeout=120)
    assert r.returncode == 17, r.stderr.decode()
    from paimon_fast.hudi import storage

    assert storage.list_manifests(uri) == []  # nothing published
    segs = [k for k in s3_server.keys(bucket, "tbl/.hoodie/.aux/") if "/segments/" in k]
    assert len(segs) == 1
    assert main(["gc", uri, "--min-age", "0", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["kind"] == "hudi table" and [o["path"] for o in rep["orphans"]] == [f"s3://{bucket}/{segs[0]}"]
    rerun = ph.build_index(None, uri, cols)  # a re-run completes
    assert rerun["slices_indexed"] > 0 and len(storage.list_manifests(uri)) == 1
    assert segs[0] not in s3_server.keys(bucket)  # the run's cleanup removed the orphan


# ---------------------------------------------------------------- Paimon tables on S3 (pypaimon)


def _rows(t):
    cols = sorted(t.column_names)
    return sorted(tuple(repr(r[c]) for c in cols) for r in t.select(cols).to_pylist())


def test_paimon_tables_on_s3_read_with_index_equal_local(tmp_path, s3_server):
    """Java Paimon 0.9 tables (embedded and sidecar file indexes, a deletion vector) copied to
    the S3 server and read with read_with_index through pypaimon's S3 FileIO: the same rows
    and the same pruning as from local files, and Java's answers."""
    pytest.importorskip("pypaimon")
    from paimon_fast.paimon import read_with_index
    from tests.support.paimon_helpers import catalog, java_answers, unpack_java09

    wh = unpack_java09(tmp_path / "wh")
    bucket = s3_server.new_bucket()
    s3_server.upload_dir(wh, bucket, "wh")
    lc, sc = catalog(wh), paimon_catalog(s3_server, bucket)
    checked = 0
    for t, c, v, planned, rows in java_answers():
        pred = pf.field(c) == v
        la, lr = read_with_index(lc.get_table(f"db.{t}"), pred)
        sa, sr = read_with_index(sc.get_table(f"db.{t}"), pred)
        assert _rows(sa) == _rows(la)
        assert (sr.files_planned, sr.files_skipped, sr.rows_returned) == (
            lr.files_planned,
            lr.files_skipped,
            lr.rows_returned,
        )
        assert sr.files_planned - sr.files_skipped <= planned  # never reads more than Java plans
        checked += 1
    assert checked >= 6


def test_paimon_rewrite_and_global_index_on_s3_equal_local(tmp_path, s3_server):
    """A pypaimon table on S3: file indexes added by rewrite_file_index (sidecars written
    straight to their new names, committed by pypaimon) and a bitmap global index built and
    committed there; read_with_index answers equal the same steps on a local warehouse."""
    pytest.importorskip("pypaimon")
    from paimon_fast.paimon import create_global_index, read_with_index, rewrite_file_index
    from tests.support.paimon_helpers import catalog, create_sample_table

    opts = {"row-tracking.enabled": "true", "data-evolution.enabled": "true"}
    bucket = s3_server.new_bucket()
    lwh = str(tmp_path / "lwh")
    tables = {"local": create_sample_table(lwh, options=opts, files=3, n=500)}
    sc = paimon_catalog(s3_server, bucket)
    create_sample_table.__globals__["catalog"] = lambda wh: sc if wh == "S3" else catalog(wh)
    try:
        tables["s3"] = create_sample_table("S3", options=opts, files=3, n=500)
    finally:
        create_sample_table.__globals__["catalog"] = catalog
    out = {}
    for where, t in tables.items():
        rewrite_file_index(None, t, {"file-index.bitmap.columns": "category", "file-index.in-manifest-threshold": "1"})
        t = (catalog(lwh) if where == "local" else sc).get_table("db.t")
        added = create_global_index(t, "name")
        t = (catalog(lwh) if where == "local" else sc).get_table("db.t")
        res = {}
        for pred in (
            pf.field("category") == "red",
            pf.field("name") == "name-777",
            pf.field("name").isin(["name-3", "name-1499", "zzz"]),
        ):
            a, rep = read_with_index(t, pred)
            res[repr(pred)] = (sorted(a.column("id").to_pylist()), rep.files_skipped)
        out[where] = (added, res)
        if where == "s3":
            assert rep.global_indexes and rep.index_bytes_read > 0
    assert out["s3"] == out["local"]
    assert out["s3"][1][repr(pf.field("name") == "name-777")][0] == [777]
    keys = s3_server.keys(bucket)
    assert any(k.endswith(".index") and "/index/" in k for k in keys)  # the global index file
    assert not any(k.rsplit("/", 1)[1].startswith(".") for k in keys)  # no temporary names left
