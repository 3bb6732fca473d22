"""Never a silent wrong answer when files change under a dataset's indexes (docs/datasets.md,
"What a dataset guarantees"), on local disk and on S3 (moto):

* data files rewritten with the same byte size (and, locally, the same mtime) are caught;
* forced interleavings: at each step of a build and of a delete (tables/steps.py) another
  operation runs to completion (a rewrite, a delete, a build, gc, a read);
* SIGKILL at each step of a build and of a delete;
* long-lived dataset objects see files added, rewritten and removed;
* bit flips in index files, global index files and listings, deletion files and the catalog;
* a ``.parquet`` file that is not Parquet.

Every check compares with the oracle of trust_support.py (pyarrow reads of the files as they are,
the queries as Python functions, the ids the test deleted), never with the product.
"""

import os
import signal
import subprocess
import sys

import pytest

from paimon_fast.errors import ColumnNotFoundError, DamagedFileError, DataFileChangedError, DataFileError
from paimon_fast.tables import ParquetDataset, steps
from paimon_fast.tables.gc import collect
from tests.support.trust_support import (
    DELETE,
    OPTIONS,
    Where,
    answers,
    content,
    deleted_by,
    expected,
    make,
    queries_for,
    rewrite,
    rows_now,
)
from tests.support.paths import ROOT

BUILD_STEPS = [
    "build.snapshot",
    "build.file.read",
    "build.file.indexed",
    "build.file.stored",
    "build.commit",
    "catalog.commit",
    "build.committed",
]
DELETE_STEPS = [
    "delete.snapshot",
    "delete.planned",
    "delete.positions",
    "delete.file_written",
    "delete.commit",
    "catalog.commit",
    "delete.committed",
]
OTHER_DELETE = "id IN (233, 434)"  # rows of f1 and f2, touched by DELETE too


def other_fn(r):
    return r["id"] in (233, 434)


def _place(request, tmp_path, kind):
    if kind == "local":
        w = Where(str(tmp_path / "ds"))
    else:
        srv = request.getfixturevalue("s3_server")
        b = srv.new_bucket()
        w = Where(srv.uri(b, "ds"), srv.filesystem(), f"{b}/ds")
    w.kind = kind
    return w


@pytest.fixture(params=["local", pytest.param("s3", marks=pytest.mark.s3)])  # (s3_server asked for inside)
def where(request, tmp_path):
    return _place(request, tmp_path, request.param)


@pytest.fixture
def local(tmp_path):
    w = Where(str(tmp_path / "ds"))
    w.kind = "local"
    return w


def ready(where: Where) -> set:
    """The dataset written, indexed, and one row deleted: ``deleted``."""
    make(where)
    ds = ParquetDataset(where.uri)
    ds.build(OPTIONS)
    assert ds.delete("id = 5").rows_deleted == 1
    return {5}


def fully_indexed(where: Where) -> None:
    rep = ParquetDataset(where.uri).read("country = 'NO'").report
    assert rep.files_without_index == 0 and rep.index_errors == 0, rep


# ---------------------------------------------------------------- identity


@pytest.mark.parametrize(
    "kind,rename",
    [("local", False), ("local", True), ("s3", False)],  # an object store has no rename: a PUT rewrites in place
    ids=["local-in place", "local-renamed over", "s3"],
)
def test_same_size_same_mtime_rewrite_is_read_without_its_index(request, tmp_path, kind, rename):
    where = _place(request, tmp_path, kind)
    deleted = ready(where)
    rewrite(where, "p=a/f1.parquet", rename=rename)
    assert answers(where.uri) == expected(where, deleted)
    r = ParquetDataset(where.uri).read("country = 'NO'")
    assert r.report.unindexed == {"p=a/f1.parquet": "changed since the build"}
    assert not next(p for p in r.source.plan().files if p.file.path == "p=a/f1.parquet").exact
    assert "changed since the build" in str(r.explain())
    # the next build indexes the file again (not "already current")
    rep = ParquetDataset(where.uri).build(OPTIONS)
    assert rep.built == ["p=a/f1.parquet"]
    fully_indexed(where)
    assert answers(where.uri) == expected(where, deleted)


def test_exact_only_where_identity_and_checksum_were_verified(where, s3_server):
    """A verified file's exact plan skips the filter; on a store whose listing gives no ETag (S3
    through pyarrow alone) the same index answers but is filtered again."""
    deleted = ready(where)
    r = ParquetDataset(where.uri).read("country = 'NO'")
    plans = {p.file.path: p for p in r.source.plan().files}
    assert all(p.exact and p.bitmap is not None for p in plans.values())
    if where.kind == "s3":
        ds = ParquetDataset(where.uri)
        ds.store._boto = False  # as without boto3: sizes and seconds only
        with pytest.warns(RuntimeWarning, match="check-then-write"):
            ds.store._warn_weak()
        weak = ds.snapshot()
        assert all(f.identity.etag is None for f in weak.files())
        plan = weak.plan("country = 'NO'")
        assert all(not p.exact and p.indexed for p in plan.files)
        got = sorted(
            id_ for p in plan.kept for id_ in weak.read_kept(p, ["id"], plan.predicate).column("id").to_pylist()
        )
        assert got == expected(where, deleted)["country = 'NO'"]


def test_legacy_catalog_without_identity_is_not_trusted_then_rebuilt(local):
    """A catalog of an earlier version (the plain file, sizes and mtimes only): its indexes are not
    used until rebuilt (report and explain say why), its deletion vectors still apply."""
    import json
    import shutil

    from paimon_fast.tables import CATALOG_NAME

    deleted = ready(local)
    strong = ("ctime_ns", "ino", "file_xxh3", "file_size")
    cat = dict(ParquetDataset(local.uri).read_catalog())
    files = {}
    for rel, e in cat["files"].items():
        e = {k: v for k, v in e.items() if k not in strong}
        if "deletion_vector" in e:
            e["deletion_vector"] = {k: v for k, v in e["deletion_vector"].items() if k not in strong}
        files[rel] = e
    cat.update(files=files, version=1)
    shutil.rmtree(os.path.join(local.path, "_commits"))
    with open(os.path.join(local.path, CATALOG_NAME), "w") as fh:
        json.dump(cat, fh)
    r = ParquetDataset(local.uri).read("country = 'NO'")
    assert len(r.report.unindexed) == 3
    assert all("identity not recorded" in w for w in r.report.unindexed.values())
    assert "identity not recorded" in str(r.explain())
    assert answers(local.uri) == expected(local, deleted)  # the deletion vector of the old catalog applies
    rep = ParquetDataset(local.uri).build(OPTIONS)
    assert rep.files_built == 3
    fully_indexed(local)
    assert answers(local.uri) == expected(local, deleted)
    with open(os.path.join(local.path, CATALOG_NAME)) as fh:
        assert "stub" in json.load(fh)  # earlier versions refuse the dataset now, instead of misreading it


@pytest.mark.parametrize("keep_times", [True, False], ids=["cp -a", "cp -r"])
def test_a_copied_dataset_keeps_its_deletes_and_is_filtered_until_rebuilt(tmp_path, keep_times):
    """A copy has new inodes and change times (and, without -a, new mtimes): its bytes are the same,
    which the recorded witness (a checksum of each file's tail) tells.  Its deletion vectors apply,
    its indexes answer but never as exact, and the next build makes them exact again."""
    import shutil

    src = Where(str(tmp_path / "ds"))
    deleted = ready(src)
    dst = Where(str(tmp_path / "copy"))
    shutil.copytree(src.path, dst.path, copy_function=shutil.copy2 if keep_times else shutil.copyfile)
    assert answers(dst.uri) == expected(dst, deleted)  # the deleted row stays deleted
    r = ParquetDataset(dst.uri).read("country = 'NO'")
    plans = r.source.plan().files
    assert all(p.indexed and p.bitmap is not None and not p.exact for p in plans)  # used, filtered again
    assert "copied or restored since the build" in str(r.explain())
    assert ParquetDataset(dst.uri).build(OPTIONS).files_built == 3
    assert all(p.exact for p in ParquetDataset(dst.uri).read("country = 'NO'").source.plan().files)
    assert answers(dst.uri) == expected(dst, deleted)
    rewrite(dst, "p=a/f0.parquet")  # a rewrite of a copy: another witness, the vector no longer applies
    assert answers(dst.uri) == expected(dst, set())


# ---------------------------------------------------------------- long-lived objects


def test_a_long_lived_dataset_object_sees_every_change(where):
    deleted = ready(where)
    ds = ParquetDataset(where.uri)
    assert answers(where.uri) == expected(where, deleted)
    assert (
        sorted(ds.read("country = 'NO'").to_arrow().column("id").to_pylist())
        == expected(where, deleted)["country = 'NO'"]
    )
    where.write("p=b/f7.parquet", content(7))  # added
    rewrite(where, "p=a/f1.parquet")  # rewritten, same size and time
    if where.fs is None:
        os.unlink(where.join("p=a/f2.parquet"))  # removed
    else:
        where.fs.delete_file(where.join("p=a/f2.parquet"))
    for q in queries_for(where.uri):
        t = ds.read(q).to_arrow()
        assert sorted(t.column("id").to_pylist()) == expected(where, deleted)[q], q
    assert [f.path for f in ds.files()] == ["p=a/f0.parquet", "p=a/f1.parquet", "p=b/f7.parquet"]
    gone = deleted_by(where, deleted)
    rep = ds.delete(DELETE)  # through the same object: every matching row, the added file's too
    assert rep.rows_deleted == len(gone)
    deleted |= gone
    assert answers(where.uri) == expected(where, deleted)
    top = ds.top_n("amount", 3, columns=["id", "amount"])
    want = sorted((r for r in rows_now(where) if r["id"] not in deleted), key=lambda r: -r["amount"])
    assert top.column("amount").to_pylist() == [r["amount"] for r in want[:3]]


def test_a_long_lived_dataset_object_reuses_only_what_is_unchanged(where):
    """Snapshots of one object reuse the parsed listing and catalog only while their bytes and
    entries are the same: a flipped bit in the catalog is still found, a commit is still seen."""
    deleted = ready(where)
    ds = ParquetDataset(where.uri)
    a, b = ds.snapshot(), ds.snapshot()
    assert b.read_catalog() is a.read_catalog() and b.files() == a.files()
    assert b.files() is not a.files()  # (each snapshot its own list)
    rep = ds.delete(OTHER_DELETE)
    assert rep.rows_deleted == 2
    c = ds.snapshot()
    assert c.snapshot_version == a.snapshot_version + 1 and c.read_catalog() is not a.read_catalog()
    assert sorted(ds.read("id IN (233, 434)").to_arrow().column("id").to_pylist()) == []
    v = c.snapshot_version
    _flip(where, f"_commits/_paimon_fast_catalog.json.{v:010d}", 200)  # same size, other bytes
    with pytest.raises(DamagedFileError, match=f"{v:010d}"):
        ds.read("country = 'NO'").to_arrow()
    assert len(deleted) >= 1


def test_a_settled_catalog_version_is_stated_not_read_until_its_file_changes(local, monkeypatch):
    """Locally, snapshots of an unchanged dataset take the current catalog version's stat, not its
    bytes, once the file has been unchanged for SETTLE_NS; a version changed in place (its
    modification time put back, its change time moved on) is read again and its damage found."""
    import time

    from paimon_fast.io.fs import CommitFile
    from paimon_fast.tables.identity import SETTLE_NS

    ready(local)
    ds = ParquetDataset(local.uri)
    v = ds.read_catalog().commit_version
    time.sleep(SETTLE_NS / 1e9 + 0.05)
    reads = []
    real = CommitFile.read
    monkeypatch.setattr(CommitFile, "read", lambda self, *a, **k: (reads.append(1), real(self, *a, **k))[1])
    first = ds.snapshot().read_catalog()
    assert ds.snapshot().read_catalog() is first and ds.snapshot().read_catalog() is first
    assert len(reads) == 1
    rel = f"_commits/_paimon_fast_catalog.json.{v:010d}"
    st = os.stat(local.join(rel))
    _flip(local, rel, 200)  # same size, other bytes
    os.utime(local.join(rel), ns=(st.st_atime_ns, st.st_mtime_ns))
    with pytest.raises(DamagedFileError, match=f"{v:010d}"):
        ds.snapshot()
    assert len(reads) == 2
    # a version changed less than SETTLE_NS before it was read is read again each time
    _flip(local, rel, 200)  # (back to its bytes)
    from paimon_fast.tables import catalog

    monkeypatch.setattr(catalog, "SETTLE_NS", 10**18)
    assert ds.snapshot().read_catalog() == first and ds.snapshot().read_catalog() == first
    assert len(reads) == 4


def test_snapshots_of_the_same_files_and_catalog_share_what_those_alone_give(where):
    """Row counts, schemas and identity verdicts are computed once for every snapshot that lists the
    very same files and catalog version, and again after either changes."""
    deleted = ready(where)
    ds = ParquetDataset(where.uri)
    a = ds.snapshot()
    counts = a.row_counts()
    b = ds.snapshot()
    assert b._snap.stable is a._snap.stable and b.row_counts() is a.row_counts()
    assert b._snap.derived is not a._snap.derived  # (global index listings: read again)
    where.write("p=b/f7.parquet", content(7))  # a file added
    c = ds.snapshot()
    assert c._snap.stable is not a._snap.stable
    assert c.row_counts() == {**counts, "p=b/f7.parquet": c.row_counts()["p=b/f7.parquet"]}
    c.row_counts()
    assert ds.snapshot()._snap.stable is c._snap.stable
    # a commit through another object: the same files listed, another catalog version
    assert ParquetDataset(where.uri).delete("id = 7").rows_deleted == 1
    d = ds.snapshot()
    assert d.files() == c.files() and d.files()[0] is c.files()[0]
    assert d._snap.stable is not c._snap.stable and d.snapshot_version == c.snapshot_version + 1
    assert answers(where.uri) == expected(where, deleted | {7})


def test_a_where_text_is_bound_once_for_the_same_files_and_catalog(where, monkeypatch):
    """SQL text is parsed and bound to the schema once for every read of an unchanged dataset (the
    read's early check and its plan alike), again after a commit; a text that does not bind raises
    on every read."""
    import paimon_fast.core.sqlpredicate as sp

    deleted = ready(where)
    parsed = []
    real = sp.parse_predicate
    monkeypatch.setattr(sp, "parse_predicate", lambda p, *a, **k: (parsed.append(p), real(p, *a, **k))[1])
    ds = ParquetDataset(where.uri)
    q = "country = 'NO'"
    first = sorted(ds.read(q).to_arrow().column("id").to_pylist())
    assert sorted(ds.read(q).to_arrow().column("id").to_pylist()) == first and ds.read(q).count() == len(first)
    assert parsed.count(q) == 1
    assert ParquetDataset(where.uri).delete("id = 7").rows_deleted == 1
    assert sorted(ds.read(q).to_arrow().column("id").to_pylist()) == expected(where, deleted | {7})[q]
    assert parsed.count(q) == 2
    for _ in range(2):
        with pytest.raises(ColumnNotFoundError):
            ds.read("nope = 1")
    assert parsed.count("nope = 1") == 2


def test_a_verdict_that_read_the_witness_is_not_shared(tmp_path):
    """A copied file's verdict rests on its tail's bytes (the witness), which a weak identity
    would not see change: it is judged again by every snapshot."""
    import shutil

    src = Where(str(tmp_path / "ds"))
    ready(src)
    dst = str(tmp_path / "copy")
    shutil.copytree(src.path, dst)
    ds = ParquetDataset(dst)
    a = ds.snapshot()
    entries = a.read_catalog()["files"]
    assert {a.trust(f, entries[f.path]) for f in a.files()} == {"copied"}
    assert not a._snap.stable.get("trust")
    b = ds.snapshot()
    assert b._snap.stable is a._snap.stable
    assert {b.trust(f, entries[f.path]) for f in b.files()} == {"copied"}


def test_a_read_object_answers_for_its_snapshot_or_says_it_cannot(where):
    """A read planned before a data file changed never mixes the two versions: it fails clearly
    (locally the file's identity is checked after each read; on S3 each GET is conditional)."""
    deleted = ready(where)
    r = ParquetDataset(where.uri).read("country = 'NO' OR amount > 900")
    r.report  # planned now
    rewrite(where, "p=a/f1.parquet")
    with pytest.raises(DataFileChangedError, match="f1.parquet"):
        r.to_arrow()
    assert answers(where.uri) == expected(where, deleted)  # a new read is exact


# ---------------------------------------------------------------- forced interleavings


def _interfere(where, what, ctx, state):
    if what == "all":  # each of them, one after the other, at the same step
        for w in ("read", "rewrite", "delete", "build", "gc"):
            _interfere(where, w, ctx, state)
    elif what == "rewrite":
        rel = ctx.get("path") or "p=a/f1.parquet"
        rewrite(where, rel)
        state["rewritten"] = rel
    elif what == "delete":
        state["inner"] = deleted_by(where, state["deleted"], other_fn)
        ParquetDataset(where.uri).delete(OTHER_DELETE)
    elif what == "build":
        ParquetDataset(where.uri).build(OPTIONS, force=True)
    elif what == "gc":
        collect(where.uri, delete=True)  # the default grace period: a running writer's files stay
    elif what == "read":  # a reader in the middle of the writer: the state before its commit, or after
        state["read"] = answers(where.uri)


def _interleaved(where, op, at, what):
    """Run ``op`` (a build or a delete) and, when it reaches step ``at``, ``what`` to completion;
    then the answers must be those of one order of the two (deletes commute; a delete and a rewrite
    of its file in either order), and a later gc and build must leave them so."""
    deleted = ready(where)
    state = {"deleted": deleted}
    before = expected(where, deleted)
    pre = deleted_by(where, deleted)  # what the outer delete deletes of the files as they are now
    fired = []

    def hook(name, ctx):
        if name == at and not fired:
            fired.append(name)
            _interfere(where, what, ctx, state)

    with steps.hook(hook):
        if op == "build":
            rep = ParquetDataset(where.uri).build(OPTIONS, force=True)
        else:
            rep = ParquetDataset(where.uri).delete(DELETE)
    assert fired, f"step {at} was not reached"
    inner = state.get("inner", set())
    if op == "build":
        candidates = [deleted | inner]
    else:  # the delete read the old version of a rewritten file, or started over on the new one
        candidates = [deleted | inner | pre, deleted | inner | pre | deleted_by(where, deleted | inner | pre)]
    got = answers(where.uri)
    assert any(got == expected(where, c) for c in candidates), (op, at, what)
    if "read" in state:  # the reader saw the state before the writer's commit, or after it
        if op == "build" or at != "delete.committed":
            assert state["read"] == before
        else:
            assert state["read"] == expected(where, deleted | pre) or "rewritten" in state
    if op == "build" and "rewritten" in state and at in ("build.snapshot", "build.file.read", "build.file.indexed"):
        assert rep.changed == [state["rewritten"]], rep  # read after it changed: not indexed
    # nothing a live version names was removed, nothing is left to mend by hand
    collect(where.uri, delete=True, min_age=0)
    ParquetDataset(where.uri).build(OPTIONS)
    fully_indexed(where)
    assert answers(where.uri) == got


@pytest.mark.parametrize("at", BUILD_STEPS)
def test_build_interleaved(local, at):
    _interleaved(local, "build", at, "all")


@pytest.mark.parametrize("at", DELETE_STEPS)
def test_delete_interleaved(local, at):
    _interleaved(local, "delete", at, "all")


@pytest.mark.parametrize("what", ["rewrite", "delete"])
@pytest.mark.parametrize(
    "op,at", [("build", "build.file.read"), ("delete", "delete.positions"), ("delete", "catalog.commit")]
)
def test_interleaved_alone(local, op, at, what):
    """One interference at a time, where it matters most."""
    _interleaved(local, op, at, what)


@pytest.mark.parametrize("op,at", [("build", "build.file.read"), ("delete", "catalog.commit")])
def test_interleaved_on_s3(s3_server, op, at):
    b = s3_server.new_bucket()
    w = Where(s3_server.uri(b, "ds"), s3_server.filesystem(), f"{b}/ds")
    w.kind = "s3"
    _interleaved(w, op, at, "all")


def test_temporary_files_belong_to_their_writer(local):
    ready(local)
    tmp = os.path.join(local.path, "_file_index", "p=a", ".f0.parquet.abc.index.tmp-0123")
    with open(tmp, "wb") as fh:
        fh.write(b"half of a container another writer is writing")
    ParquetDataset(local.uri).build(OPTIONS, force=True)
    ParquetDataset(local.uri).delete("id = 6")
    assert collect(local.uri, delete=True).too_young >= 1
    assert os.path.exists(tmp)  # young: its writer may still be running
    old = os.stat(tmp).st_mtime - 7200
    os.utime(tmp, (old, old))
    assert ParquetDataset(local.uri).clean_temp_files() == 1 and not os.path.exists(tmp)


# ---------------------------------------------------------------- SIGKILL at each step

KILL = r"""
import os, signal, sys
sys.path.insert(0, sys.argv[4])
from paimon_fast.tables import ParquetDataset, steps
from tests.support.trust_support import DELETE, OPTIONS
uri, op, at = sys.argv[1:4]

def hook(name, ctx):
    if name == at:
        os.kill(os.getpid(), signal.SIGKILL)

with steps.hook(hook):
    if op == "build":
        ParquetDataset(uri).build(OPTIONS, force=True)
    else:
        ParquetDataset(uri).delete(DELETE)
sys.exit(3)
"""


def _killed(where, op, at):
    deleted = ready(where)
    pre = deleted_by(where, deleted)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    root = str(ROOT)
    r = subprocess.run([sys.executable, "-c", KILL, where.uri, op, at, root], env=env, capture_output=True, timeout=300)
    assert r.returncode == -signal.SIGKILL, r.stderr.decode()[-2000:]
    done = op == "delete" and at == "delete.committed"
    want = expected(where, deleted | pre if done else deleted)
    assert answers(where.uri) == want  # the previous state, or the committed one: nothing between
    collect(where.uri, delete=True, min_age=0)  # the killed writer's files go, the live ones stay
    if op == "build":
        ParquetDataset(where.uri).build(OPTIONS, force=True)  # a re-run completes
        fully_indexed(where)
    else:
        rep = ParquetDataset(where.uri).delete(DELETE)
        assert rep.rows_deleted == (0 if done else len(pre))
    assert answers(where.uri) == expected(where, deleted | (pre if op == "delete" else set()))


@pytest.mark.parametrize("at", BUILD_STEPS)
def test_build_killed(local, at):
    _killed(local, "build", at)


@pytest.mark.parametrize("at", DELETE_STEPS)
def test_delete_killed(local, at):
    _killed(local, "delete", at)


@pytest.mark.parametrize("op,at", [("build", "build.file.stored"), ("delete", "delete.file_written")])
def test_killed_on_s3(s3_server, op, at):
    b = s3_server.new_bucket()
    w = Where(s3_server.uri(b, "ds"), s3_server.filesystem(), f"{b}/ds")
    _killed(w, op, at)


# ---------------------------------------------------------------- bit flips


def _flip(where, rel, offset, truncate=False):
    if where.fs is None:
        p = where.join(rel)
        data = bytearray(open(p, "rb").read())
        data = data[:offset] if truncate else data
        if not truncate:
            data[offset % len(data)] ^= 0x10
        with open(p, "wb") as fh:
            fh.write(bytes(data))
        return
    with where.fs.open_input_file(where.join(rel)) as f:
        data = bytearray(f.read())
    data = data[:offset] if truncate else data
    if not truncate:
        data[offset % len(data)] ^= 0x10
    with where.fs.open_output_stream(where.join(rel)) as out:
        out.write(bytes(data))


@pytest.mark.parametrize(
    "kind,at",
    [("local", 0), ("local", 3000), ("local", -1), ("s3", 3000)],  # on S3 one place: the same code checks every block
    ids=["local-header", "local-body", "local-last byte", "s3-body"],
)
def test_bit_flip_in_an_index_file(request, tmp_path, kind, at):
    where = _place(request, tmp_path, kind)
    deleted = ready(where)
    fi = ParquetDataset(where.uri).read_catalog()["files"]["p=a/f1.parquet"]["file_index"]
    _flip(where, fi["path"], at if at >= 0 else fi["size"] - 1)
    assert answers(where.uri) == expected(where, deleted)
    r = ParquetDataset(where.uri).read("country = 'NO' OR amount > 900 OR id = 217")
    r.to_arrow()
    assert r.report.unindexed["p=a/f1.parquet"].startswith("index checksum mismatch")
    assert "index checksum mismatch" in str(r.explain())


def test_bit_flips_in_global_index_files(where):
    from paimon_fast.tables.globalindex import build_global_index_local

    deleted = ready(where)
    listing = build_global_index_local(where.uri, "country")
    assert ParquetDataset(where.uri).read("country = 'NO'").report.global_index_used == ["country"]
    _flip(where, f"_global_index/country/{listing['files'][0]['file']}", 40)
    r = ParquetDataset(where.uri).read("country = 'NO'")
    assert sorted(r.to_arrow().column("id").to_pylist()) == expected(where, deleted)["country = 'NO'"]
    assert r.report.global_index_used == [] and r.report.index_errors >= 1
    build_global_index_local(where.uri, "country")
    versions = ParquetDataset(where.uri).store.list_files(where.join("_global_index/country/_commits"))
    _flip(where, f"_global_index/country/_commits/{versions[-1].rel}", 30)
    r = ParquetDataset(where.uri).read("country = 'NO'")
    assert sorted(r.to_arrow().column("id").to_pylist()) == expected(where, deleted)["country = 'NO'"]
    assert r.report.global_index_used == [] and r.report.index_errors >= 1
    assert answers(where.uri) == expected(where, deleted)


@pytest.mark.parametrize("how", ["flip", "truncate"])
def test_a_damaged_catalog_is_named(where, how, capsys):
    from paimon_fast.cli import main

    deleted = ready(where)
    ds = ParquetDataset(where.uri)
    v = ds.read_catalog().commit_version
    rel = f"_commits/_paimon_fast_catalog.json.{v:010d}"
    _flip(where, rel, 200, truncate=how == "truncate")
    with pytest.raises(DamagedFileError, match=rf"_paimon_fast_catalog.json.{v:010d}.*go back to version {v - 1}"):
        ParquetDataset(where.uri).read("country = 'NO'").to_arrow()
    with pytest.raises(DamagedFileError):
        ParquetDataset(where.uri).build(OPTIONS)
    assert main(["query", where.uri, "--where", "country = 'NO'", "--explain"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "is damaged" in err and f"{v:010d}" in err
    # going back to the previous version, as the message says: the delete it lacks is lost, knowingly
    if where.fs is None:
        os.unlink(where.join(rel))
    else:
        where.fs.delete_file(where.join(rel))
    assert answers(where.uri) == expected(where, deleted - {5})


def test_a_damaged_deletion_file_is_a_clear_error(where, capsys):
    from paimon_fast.cli import main

    ready(where)
    dv = ParquetDataset(where.uri).read_catalog()["files"]["p=a/f0.parquet"]["deletion_vector"]
    _flip(where, f"_deletion_vectors/{dv['file']}", 7)
    with pytest.raises(DamagedFileError, match=dv["file"]):
        ParquetDataset(where.uri).read("country = 'NO'").to_arrow()
    assert main(["query", where.uri, "--where", "country = 'NO'", "--explain"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and dv["file"] in err


def test_a_data_file_that_is_not_parquet_is_one_line(local, capsys):
    from paimon_fast.cli import main

    ready(local)
    with open(local.join("p=a/zz.parquet"), "wb") as fh:
        fh.write(b"this is not a Parquet file at all, only its name says so\n" * 3)
    with pytest.raises(DataFileError, match="zz.parquet"):
        ParquetDataset(local.uri).read("country = 'NO'").to_arrow()
    for argv in (
        ["query", local.uri, "--where", "country = 'NO'", "--explain"],
        ["query", local.uri, "--top", "amount:3"],
    ):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "zz.parquet" in err and "Traceback" not in err, err
