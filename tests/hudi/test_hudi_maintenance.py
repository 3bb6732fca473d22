"""Index maintenance over commit sequences on copy-on-write tables written by the
test writer (and read back by the ``hudi`` package): insert, update, delete, a
commit the index has not seen, an in-flight commit, an interrupted index run."""

import json
import os
import shutil
import subprocess
import sys

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import paimon_fast as pf
import paimon_fast.hudi as ph
from paimon_fast.hudi import storage

from tests.support.hudi_support import battery, oracle_rows, row_multiset, snapshot
from tests.support.hudi_writer import CowTable
from tests.support.paths import ROOT

pytest.importorskip("hudi")

SCHEMA = pa.schema(
    [("id", pa.int64()), ("city", pa.string()), ("kind", pa.string()), ("n", pa.int32()), ("day", pa.date32())]
)
COLS = ["city", "kind", "n", "day"]


def _data(n=40):
    import datetime as dt

    return pa.table(
        {
            "id": list(range(n)),
            "city": [["berlin", "paris", "a$b%c"][i % 3] for i in range(n)],
            "kind": [["x", "y", "z", "w$"][i % 4] if i % 7 else None for i in range(n)],
            "n": [i % 5 for i in range(n)],
            "day": [dt.date(2024, 1, 1 + i % 3) for i in range(n)],
        },
        schema=SCHEMA,
    )


def _check(path, extra=()):
    snap = snapshot(path)
    schema = pa.schema(list(SCHEMA))
    preds = battery(snap, COLS, schema) + list(extra)
    for pred in preds:
        res = ph.read_arrow(path, pred)
        got, rep = res.table, res.report
        assert row_multiset(got.to_pylist(), SCHEMA.names) == row_multiset(oracle_rows(snap, pred), SCHEMA.names), (
            pred,
            rep,
        )
    return snap


def _records(path, column=None):
    m = storage.read_manifest(path)
    out = []
    for seg in m["segments"]:
        live = {(e["partition"], e["file_id"]) for e in m["slices"] if e["segment"] == seg}
        for r in storage.read_segment(path, seg).to_pylist():
            if (r["partition"], r["file_id"]) in live and (column is None or r["column"] == column):
                out.append(r)
    return out


@pytest.fixture
def table(tmp_path):
    t = CowTable(str(tmp_path / "cow"), SCHEMA, partition_field="city")
    t.insert(_data(), groups=2)
    return t


def test_insert_update_delete_unseen(table):
    path = table.path
    r = ph.build_index(None, path, COLS)
    assert r["slices_indexed"] == 6 and r["slices_carried"] == 0
    _check(path, [pf.field("kind") == "w$", pf.field("city") == "a$b%c", pf.field("city") != "a$b%c"])
    assert any(x["key"].startswith("city$a%24b%25c$city=a%24b%25c$") for x in _records(path, "city"))

    # update: one file group's kind values all become "q"
    g0 = sorted(table.groups)[0]
    table.update(lambda tb: tb.set_column(2, "kind", pa.array(["q"] * tb.num_rows)), groups=[g0])
    r = ph.build_index(None, path)
    assert r["slices_indexed"] == 1 and r["slices_carried"] == 5 and len(r["new_instants"]) == 1
    recs = [x for x in _records(path, "kind") if (x["partition"], x["file_id"]) == g0]
    by_val = {x["value"]: x["cardinality"] for x in recs}
    assert by_val["q"] == table.groups[g0].num_rows
    # values the file group no longer holds keep their records, with empty bitmaps (RFC)
    assert {"x", "y", "z", "w$"} & set(by_val) and all(by_val[v] == 0 for v in ("x", "y", "z", "w$") if v in by_val)
    _check(path, [pf.field("kind") == "q", pf.field("kind") == "x"])

    # delete: rows with kind == "y" leave every file group
    table.update(lambda tb: tb.filter(pc.fill_null(pc.not_equal(tb.column("kind"), "y"), True)))
    r = ph.build_index(None, path)
    assert r["slices_indexed"] == 6 and r["slices_dropped"] == 6
    assert sum(x["cardinality"] for x in _records(path, "kind") if x["value"] == "y") == 0
    _check(path, [pf.field("kind") == "y", pf.field("kind").notin(["y"])])

    # a commit the index has not seen: the changed slice is a candidate, answers stay exact
    g1 = sorted(table.groups)[1]
    table.update(lambda tb: tb.set_column(2, "kind", pa.array(["new"] * tb.num_rows)), groups=[g1])
    pr = ph.prune(path, pf.field("kind") == "new")
    assert pr.report["stale"] and pr.report["slices_not_indexed"] == 1
    assert [c.slice.group for c in pr.candidates if not c.covered] == [g1]
    _check(path, [pf.field("kind") == "new"])
    # an in-flight commit (base files written, no completed instant) is invisible to both
    table.update(lambda tb: tb.set_column(2, "kind", pa.array(["ghost"] * tb.num_rows)), complete=False)
    got = ph.read_arrow(path, pf.field("kind") == "ghost").table
    assert got.num_rows == 0
    r = ph.build_index(None, path)
    assert r["slices_indexed"] == 1 and r["slices_carried"] == 5
    m = storage.read_manifest(path)
    assert m["pending"] and "listing" not in m  # listed during a pending instant: not reused
    pr = ph.prune(path, None)
    assert not pr.report["slices_not_indexed"] and pr.report["listing"] == "hudi"
    _check(path, [pf.field("kind") == "new", pf.field("kind") == "ghost"])


def test_interrupted_index_run(table):
    path = table.path
    ph.build_index(None, path, COLS)
    before = storage.read_manifest(path)
    g0 = sorted(table.groups)[0]
    table.update(lambda tb: tb.set_column(2, "kind", pa.array(["after"] * tb.num_rows)), groups=[g0])
    env = dict(
        os.environ,
        PAIMON_FAST_HUDI_CRASH_BEFORE_MANIFEST="1",
        PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    )
    code = "import paimon_fast.hudi as ph, sys; ph.build_index(None, sys.argv[1])"
    p = subprocess.run([sys.executable, "-c", code, path], env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 17, p.stderr  # killed after writing its segment, before the manifest
    segs = os.listdir(os.path.join(path, storage.INDEX_DIR, "segments"))
    assert len(segs) == len(before["segments"]) + 1  # the orphan is there but not referenced
    assert storage.read_manifest(path) == before  # previous state still the visible one
    _check(path, [pf.field("kind") == "after"])  # stale-safe meanwhile
    r = ph.build_index(None, path)  # re-run completes
    assert r["previous_instant"] == before["instant"] and r["slices_indexed"] == 1
    m = storage.read_manifest(path)
    assert m["instant"] != before["instant"]
    left = set(os.listdir(os.path.join(path, storage.INDEX_DIR, "segments")))
    assert left == set(m["segments"]) | set(before["segments"])  # orphan removed, old kept for readers
    _check(path, [pf.field("kind") == "after"])


def test_segments_compact(table):
    path = table.path
    ph.build_index(None, path, COLS, max_segments=2)
    for i in range(4):
        g = sorted(table.groups)[i % 4]
        table.update(lambda tb, i=i: tb.set_column(3, "n", pa.array([100 + i] * tb.num_rows, pa.int32())), groups=[g])
        r = ph.build_index(None, path, max_segments=2)
        assert r["segments"] <= 2
    assert any(True for _ in _records(path))
    _check(path, [pf.field("n") == 103, pf.field("n").isin([100, 101])])


def test_columns_change_rebuilds_and_errors(table):
    path = table.path
    ph.build_index(None, path, ["city"])
    r = ph.build_index(None, path, ["city", "kind"])
    assert r["slices_indexed"] == 6 and r["previous_instant"] is None
    with pytest.raises(KeyError):
        ph.build_index(None, path, ["nope"])
    with pytest.raises(pf.UnsupportedTypeError):
        ph.model.check_indexable("d", pa.float64())
    with pytest.raises(TypeError):
        ph.prune(path, pf.field("city") == 3)


def test_cli_build_query_inspect(table, capsys):
    import json

    from paimon_fast.cli import main

    assert main(["hudi", "build", table.path, "--columns", "city,kind,n"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["slices_indexed"] == 6
    assert main(["hudi", "query", table.path, "--eq", "kind=x", "--eq", "n=1", "--read", "--candidates"]) == 0
    out = json.loads(capsys.readouterr().out)
    snap = snapshot(table.path)
    pred = (pf.field("kind") == "x") & (pf.field("n") == 1)
    assert out["rows_returned"] == len(oracle_rows(snap, pred))
    assert out["slices_candidate"] + out["slices_pruned"] == 6
    assert main(["hudi", "inspect", table.path]) == 0
    ins = json.loads(capsys.readouterr().out)
    assert (
        ins["slices"] == 6 and ins["current_slices_not_indexed"] == 0 and set(ins["columns"]) == {"city", "kind", "n"}
    )


def test_unreadable_slice_stays_unindexed(table, monkeypatch):
    from paimon_fast.hudi import build as B

    bad = sorted(table.groups)[2][1]
    real = B._read_slice_columns

    def flaky(path, ref, columns):
        if ref.file_id == bad:
            raise OSError("simulated unreadable slice")
        return real(path, ref, columns)

    monkeypatch.setattr(B, "_read_slice_columns", flaky)
    r = ph.build_index(None, table.path, COLS)
    assert r["slices_indexed"] == 5 and r["slices_unindexable"][0]["file_id"] == bad
    pr = ph.prune(table.path, pf.field("kind") == "zzz")
    assert [c.slice.file_id for c in pr.candidates] == [bad]  # never pruned, never trusted
    _check(table.path)


def test_build_without_columns_indexes_every_indexable_column(tmp_path):
    schema = pa.schema(
        [("id", pa.int64()), ("city", pa.string()), ("score", pa.float64()), ("ok", pa.bool_()), ("day", pa.date32())]
    )
    t = CowTable(str(tmp_path / "cow"), schema)
    t.insert(
        pa.table(
            {
                "id": [1, 2, 3],
                "city": ["a", "b", None],
                "score": [0.5, 1.5, 2.5],
                "ok": [True, False, True],
                "day": [None] * 3,
            },
            schema=schema,
        )
    )
    r = ph.build_index(None, t.path)  # no index yet, no columns: every column a bitmap index can hold
    assert r["columns"] == ["id", "city", "ok", "day"]
    skipped = r["columns_skipped"]
    assert skipped["score"].startswith("floating point (double)")
    assert set(skipped) == {"score"} | {c for c in skipped if c.startswith("_hoodie_")}
    assert all(skipped[c] == "Hudi metadata column" for c in skipped if c != "score")
    got = ph.read_arrow(t.path, pf.field("city") == "b").table
    assert got.column("id").to_pylist() == [2]
    # a later build without columns keeps the index's columns and skips nothing
    r = ph.build_index(None, t.path)
    assert r["columns"] == ["id", "city", "ok", "day"] and r["columns_skipped"] == {}


def test_indexable_columns_reasons():
    from paimon_fast.hudi.model import indexable_columns

    schema = pa.schema(
        [
            ("s", pa.string()),
            ("f", pa.float32()),
            ("b", pa.binary()),
            ("l", pa.list_(pa.int32())),
            ("st", pa.struct([("x", pa.int32())])),
            ("dict", pa.dictionary(pa.int32(), pa.string())),
            ("dec", pa.decimal128(10, 2)),
            ("_hoodie_record_key", pa.string()),
        ]
    )
    cols, skipped = indexable_columns(schema)
    assert cols == ["s", "dict", "dec"]
    assert {c: r.split(" (")[0] for c, r in skipped.items()} == {
        "f": "floating point",
        "b": "binary",
        "l": "nested",
        "st": "nested",
        "_hoodie_record_key": "Hudi metadata column",
    }


def test_read_arrow_result_and_the_deprecated_tuple(table):
    ph.build_index(None, table.path, COLS)
    res = ph.read_arrow(table.path, pf.field("city") == "paris")
    assert isinstance(res, ph.ArrowRead) and isinstance(res.table, pa.Table)
    assert res.table.column("city").to_pylist() == ["paris"] * res.table.num_rows and res.table.num_rows > 0
    assert res.report["rows_returned"] == res.table.num_rows
    with pytest.warns(DeprecationWarning, match=r"\.table and \.report"):
        tbl, rep = res  # the former (table, report) form
    assert tbl is res.table and rep is res.report
    with pytest.warns(DeprecationWarning):
        assert res[1] is res.report


def test_index_outside_a_read_only_table(table, tmp_path, monkeypatch):
    root = tmp_path / "indexes"
    monkeypatch.setenv(storage.INDEX_ROOT_ENV, str(root))
    monkeypatch.setattr(storage, "_VERIFIED", {})
    before = sorted(os.path.join(dp, f) for dp, _, fs in os.walk(table.path) for f in fs)
    # the table is read-only (root ignores the mode: the file listing below is the check)
    for dp, _, fs in os.walk(table.path):
        os.chmod(dp, 0o555)
    try:
        r = ph.build_index(None, table.path, COLS)
        assert r["slices_indexed"] == 6
        _check(table.path, [pf.field("city") == "paris"])
    finally:
        for dp, _, fs in os.walk(table.path):
            os.chmod(dp, 0o755)
    assert sorted(os.path.join(dp, f) for dp, _, fs in os.walk(table.path) for f in fs) == before
    (d,) = [root / n for n in os.listdir(root)]
    assert (d / "manifests").is_dir() and (d / "segments").is_dir()
    assert list(storage.read_manifest(table.path)["columns"]) == COLS
    assert json.loads((d / storage.IDENTITY_FILE).read_text())["table_path"] == table.path
    # an index copied to another table's slot is refused, not used
    other = CowTable(str(tmp_path / "other"), SCHEMA, partition_field="city", name="other_table")
    other.insert(_data(10))
    monkeypatch.setattr(storage, "_VERIFIED", {})
    slot = storage.index_dir(other.path)  # creates the other table's slot with its identity
    shutil.rmtree(slot)
    shutil.copytree(d, slot)
    monkeypatch.setattr(storage, "_VERIFIED", {})
    with pytest.raises(pf.IndexFormatError, match="belongs to table"):
        storage.read_manifest(other.path)


def test_damage_and_same_size_rewrites_in_the_sidecar_are_caught(table):
    """The review of docs/hudi.md "What can go stale": a timeline file rewritten with the same
    size and mtime changes the fingerprint (its ctime does); a damaged segment page or manifest
    fails the read naming the file, never answering from other bytes."""
    import pyarrow.parquet as pq

    from paimon_fast.errors import DamagedFileError, IndexFormatError
    from paimon_fast.hudi.table import timeline_fingerprint

    path = table.path
    ph.build_index(None, path, ["city", "kind"])
    want = sorted(ph.read(path, "kind = 'x'").to_arrow().column("id").to_pylist())
    fp = timeline_fingerprint(path).digest
    hoodie = os.path.join(path, ".hoodie")
    inst = sorted(n for n in os.listdir(hoodie) if n.endswith(".commit"))[-1]
    p = os.path.join(hoodie, inst)
    st = os.stat(p)
    data = open(p, "rb").read()
    with open(p, "wb") as fh:  # the same bytes, the same time: only the ctime tells
        fh.write(data)
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert timeline_fingerprint(path).digest != fp
    assert sorted(ph.read(path, "kind = 'x'").to_arrow().column("id").to_pylist()) == want

    key, manifest = storage.latest_manifest(path)
    seg = storage.segment_path(path, manifest["slices"][0]["segment"])
    original = open(seg, "rb").read()
    md = pq.ParquetFile(seg).metadata
    chunk = md.row_group(0).column(md.schema.names.index("key"))
    at = chunk.data_page_offset + chunk.total_compressed_size - 8  # inside the key column's page data
    damaged = bytearray(original)
    damaged[at] ^= 0x04
    open(seg, "wb").write(bytes(damaged))  # a new ctime: the parsed-footer cache does not answer for it
    with pytest.raises(IndexFormatError, match="segment"):
        ph.read(path, "kind = 'x'").to_arrow()
    open(seg, "wb").write(original)
    assert sorted(ph.read(path, "kind = 'x'").to_arrow().column("id").to_pylist()) == want

    mp = storage.manifest_path(path, key)
    raw = bytearray(open(mp, "rb").read())
    raw[len(raw) // 2] ^= 0x01
    open(mp, "wb").write(bytes(raw))
    with pytest.raises(DamagedFileError, match="manifest"):
        storage.read_manifest(path, key)
