"""The registry of global index types (paimon_fast.globalindex.registry): a toy type registered
here, with a writer / reader pair of its own (a sorted list of (value, row id) pairs as JSON),
is built and queried through the same entry points as the built-in bitmap / btree / multivalue
types: ``globalindex.writer`` / ``reader``, a Parquet dataset's global index built in this
process and used by its scan, and a Paimon table's ``create_global_index`` read back by
``read_with_index``.  Each check tells a toy answer from a built-in one (the toy's file
bytes, its classes), so a path that bypasses the registry fails here."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyroaring import BitMap64

import paimon_fast as pf
from paimon_fast import globalindex as gi
from paimon_fast.core.predicate import And, Leaf, Or
from paimon_fast.core.result import UNSUPPORTED
from paimon_fast.errors import UnknownGlobalIndexTypeError, UnknownIndexTypeError
from paimon_fast.globalindex import factory, registry
from paimon_fast.globalindex.registry import GlobalIndexType
from paimon_fast.io.source import as_source
from tests.support.paimon_helpers import commit_arrow

MAGIC = b"TOY1"
BUILDS = []  # (dtype, options) of every toy writer made: proof the toy's own writer ran


class ToyWriter:
    """Keeps (value, row id) pairs; the file is MAGIC + JSON of them sorted (nulls left out)."""

    def __init__(self, dtype, options=None):
        self.dtype, self.options = str(dtype), dict(options or {})
        self.pairs = []
        self.row_count = 0
        BUILDS.append((self.dtype, self.options))

    def write_batch(self, values, row_ids=None):
        vals = values.to_pylist() if hasattr(values, "to_pylist") else list(values)
        rids = np.asarray(row_ids).astype(np.int64).tolist()
        self.row_count += len(vals)
        self.pairs += [(v, r) for v, r in zip(vals, rids) if v is not None]

    def finish(self):
        if not self.row_count:
            return None, None
        data = MAGIC + json.dumps(sorted(self.pairs)).encode()
        return data, f"toy:{len(self.pairs)}".encode()


class ToyIndex:
    """Many toy files of one row range (the shape of GlobalIndex): equal and IN only."""

    exact_ops = frozenset({"equal", "in"})

    def __init__(self, files, dtype, options=None, total_row_count=None, max_workers=None):
        self.pairs = []
        for where, meta in files:
            raw = bytes(as_source(where).read_all())
            assert raw.startswith(MAGIC) and bytes(meta).startswith(b"toy:"), raw[:8]
            self.pairs += [tuple(p) for p in json.loads(raw[len(MAGIC) :])]
        self.pairs.sort()

    def _rows(self, values):
        return BitMap64([r for v, r in self.pairs if v in values])

    def visit(self, leaf: Leaf):
        if leaf.op == "equal":
            return self._rows({leaf.literal})
        if leaf.op == "in":
            return self._rows(set(leaf.literals))
        return UNSUPPORTED

    def evaluate(self, pred):
        if isinstance(pred, Leaf):
            return self.visit(pred)
        parts = [self.evaluate(c) for c in pred.children]
        if isinstance(pred, And):
            parts = [p for p in parts if p is not UNSUPPORTED]
            return BitMap64.intersection(*parts) if parts else UNSUPPORTED
        if isinstance(pred, Or) and all(p is not UNSUPPORTED for p in parts):
            return BitMap64.union(*parts)
        return UNSUPPORTED

    def answers_exactly(self, leaf):
        return leaf.op in self.exact_ops

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class ToyReader(ToyIndex):
    """One toy file (bytes or a path), as ``globalindex.reader`` gives it."""

    def __init__(self, dtype, data_or_path, options=None, total_row_count=None):
        raw = bytes(as_source(data_or_path).read_all())
        super().__init__([(raw, b"toy:")], dtype, options, total_row_count)


TOY = GlobalIndexType(
    "toy",
    writer=ToyWriter,
    reader=ToyReader,
    index=f"{__name__}:ToyIndex",  # a lazily loaded "module:attr", as a higher layer's class is given
    option_prefix="toy-index.",
    column="scalar",
    scalar=True,
    detect=lambda path: open(path, "rb").read(4) == MAGIC,
)


@pytest.fixture
def toy():
    BUILDS.clear()
    with registry.registered(TOY) as t:
        yield t
    assert "toy" not in registry.names()


def test_builtins_registered_and_public_names_derived():
    assert registry.names()[:3] == ("bitmap", "multivalue", "btree")
    assert gi.INDEX_TYPES == factory.INDEX_TYPES == ("bitmap", "multivalue", "btree")
    from paimon_fast.paimon import globalindex as pgi
    from paimon_fast.paimon import globalindex_build as pgb

    assert pgi.SUPPORTED_INDEX_TYPES == ("bitmap", "btree", "multivalue")
    assert pgi.SCALAR_INDEX_TYPES == ("bitmap", "btree", "multivalue")
    assert pgb.SORTED_TYPES == ("bitmap", "btree")
    assert pgb.OPTION_PREFIXES == {
        "bitmap": "bitmap-index.",
        "btree": "btree-index.",
        "multivalue": "multivalue-index.",
    }
    assert registry.get("btree").index_class() is gi.BTreeGlobalIndex
    assert registry.get("multivalue").accepts("ARRAY<INT>") and not registry.get("bitmap").accepts("ARRAY<INT>")


def test_unknown_type_is_a_clear_error():
    for call in (
        lambda: registry.get("nope"),
        lambda: gi.writer("INT", index_type="nope"),
        lambda: gi.reader("INT", b"", index_type="nope"),
    ):
        with pytest.raises(UnknownGlobalIndexTypeError, match=r"unknown global index type 'nope' \(known: bitmap"):
            call()
    # the package's unknown-type error, and the ValueError the factory always raised
    assert issubclass(UnknownGlobalIndexTypeError, UnknownIndexTypeError)
    assert issubclass(UnknownGlobalIndexTypeError, ValueError)
    with pytest.raises(ValueError, match="already registered"):
        registry.register(GlobalIndexType("bitmap", writer=ToyWriter, reader=ToyReader, index=ToyIndex))
    assert registry.get("bitmap").writer is gi.BitmapGlobalIndexWriter


def test_toy_writer_and_reader_through_the_factory(toy, tmp_path):
    assert "toy" in registry.names() and "toy" in factory._check_type("toy").name
    w = gi.writer("INT", {"toy-index.x": "1"}, index_type="toy")
    assert isinstance(w, ToyWriter)
    w.write_batch(pa.array([5, None, 3, 5], pa.int32()), np.array([0, 1, 2, 3]))
    data, meta = w.finish()
    assert data.startswith(MAGIC) and meta == b"toy:3"
    r = factory.reader("INT", data, {}, 4, index_type="toy")
    assert isinstance(r, ToyReader)
    assert sorted(r.evaluate(pf.field("x") == 5)) == [0, 3]
    assert sorted(r.evaluate(pf.field("x").isin([3, 7]))) == [2]
    assert r.evaluate(pf.field("x") > 1) is UNSUPPORTED
    p = tmp_path / "toy.index"
    p.write_bytes(data)
    assert sorted(gi.reader("INT", str(p), index_type="toy").evaluate(pf.field("x") == 3)) == [2]
    assert registry.detect(str(p)) == "toy"
    # the built-in default is untouched
    assert isinstance(gi.writer("INT"), gi.BitmapGlobalIndexWriter)


def _dataset(root):
    for i, (lo, hi) in enumerate([(0, 300), (300, 700)]):
        ids = np.arange(lo, hi)
        pq.write_table(
            pa.table({"id": ids.astype(np.int64), "k": pa.array((ids % 13).astype(np.int32))}),
            str(root / f"part-{i}.parquet"),
            row_group_size=64,
        )
    return str(root)


def test_toy_dataset_index_built_in_process_and_used_by_scans(toy, tmp_path):
    from paimon_fast.tables import ParquetDataset
    from paimon_fast.tables.globalindex import build_global_index_local, load_global_index, read_listing

    root = _dataset(tmp_path)
    listing = build_global_index_local(root, "k", {"toy-index.opt": "v", "bitmap-index.x": "y"}, index_type="toy")
    assert listing["index_type"] == "toy" and listing["files"][0]["file"].startswith("toy-")
    assert BUILDS == [("INT", {"toy-index.opt": "v"})]  # the toy's writer, given its own options
    assert read_listing(root, "k")["index_type"] == "toy"
    idx = load_global_index(root, "k")
    assert isinstance(idx, ToyIndex)
    assert sorted(idx.visit(Leaf("equal", "k", (4,)))) == [i for i in range(700) if i % 13 == 4]
    t, rep = ParquetDataset(root).scan("k = 4 OR k = 11")
    want = [i for i in range(700) if i % 13 in (4, 11)]
    assert sorted(t.column("id").to_pylist()) == want
    assert rep.global_index_used == ["k"] and rep.index_errors == 0
    assert rep.rows_read == len(want)  # the toy's answer is exact: only the matching rows are read
    u = ParquetDataset(root).read("k = 4").explain().index("toy", "k", "global")
    assert u.used


def test_toy_index_inside_a_paimon_table(toy, tmp_path):
    pytest.importorskip("pypaimon")
    from pypaimon import Schema

    from paimon_fast.paimon import read_with_index
    from paimon_fast.paimon.globalindex import GlobalIndexAnswer, create_global_index
    from tests.support.paimon_helpers import catalog

    cat = catalog(str(tmp_path / "wh"))
    cat.create_database("db", True)
    schema = pa.schema([("id", pa.int64()), ("k", pa.int32())])
    opts = {"bucket": "-1", "row-tracking.enabled": "true", "data-evolution.enabled": "true"}
    cat.create_table("db.t", Schema.from_pyarrow_schema(schema, options=opts), False)
    for lo in (0, 250):
        ids = np.arange(lo, lo + 250)
        t = pa.table({"id": ids.astype(np.int64), "k": pa.array((ids % 7).astype(np.int32))}, schema=schema)
        commit_arrow(cat.get_table("db.t"), t)
    t = cat.get_table("db.t")
    added = create_global_index(t, "k", index_type="toy", options={"toy-index.opt": "1", "btree-index.x": "2"})
    assert added >= 1 and BUILDS and all(o == {"toy-index.opt": "1"} for _, o in BUILDS)
    t = cat.get_table("db.t")
    ans = GlobalIndexAnswer(t, pf.field("k") == 3)
    assert ans.fields["k"].index_type == "toy" and ans.foreign_types == []
    part = ans.evaluate()
    want = [i for i in range(500) if i % 7 == 3]
    assert sorted(part.rows) == want and len(part.cover) == 500
    got, report = read_with_index(t, pf.field("k") == 3)
    assert sorted(got.column("id").to_pylist()) == want
    assert report.global_indexes and "toy" in report.global_indexes[0]
    # a second build finds every row range covered by a toy index already
    assert create_global_index(cat.get_table("db.t"), "k", index_type="toy") == 0
