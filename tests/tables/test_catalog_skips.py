"""Plans settle the files the catalog's statistics exclude with arrays, all files at once
(paimon_fast.tables.stats.stats_arrays / leaf_skips / tree_skips): a file is marked only where
the file-by-file answer (leaf_answer of its one ChunkStats, combined as evaluate_tree combines) is
SKIP; and a dataset's plans and rows are the same with the arrays and without them."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

from paimon_fast.fileindex.base import evaluate_tree
from paimon_fast.core.predicate import And, Leaf, Or
from paimon_fast.core.result import REMAIN, SKIP, BitmapResult
from paimon_fast.tables import ParquetDataset
from paimon_fast.tables import dataset_plan
from paimon_fast.tables.stats import (
    ChunkStats,
    stats_arrays,
    leaf_answer,
    leaf_prepared,
    leaf_skips,
    stat_kind,
    tree_skips,
)

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
BIG = 1 << 70  # past int64: left to the file-by-file answer
VALUES = st.one_of(
    st.integers(-5, 5),
    st.sampled_from([BIG, -BIG, (1 << 63) - 1, -(1 << 63), (1 << 53) + 1]),
    st.floats(-6, 6, allow_nan=False).map(lambda v: round(v, 1)),
    st.sampled_from([math.nan, math.inf, -math.inf, -0.0]),
)
OPS = [
    "equal",
    "less_than",
    "less_or_equal",
    "greater_than",
    "greater_or_equal",
    "between",
    "in",
    "is_null",
    "is_not_null",
]


@st.composite
def chunk(draw):
    if draw(st.integers(0, 9)) == 0:
        return None  # no statistics of the column
    rows = draw(st.integers(0, 4))
    nulls = draw(st.one_of(st.none(), st.integers(0, rows)))
    lo, hi = draw(st.one_of(st.none(), VALUES)), draw(st.one_of(st.none(), VALUES))
    if isinstance(lo, (int, float)) and isinstance(hi, (int, float)) and lo == lo and hi == hi and lo > hi:
        lo, hi = hi, lo
    return ChunkStats(rows, nulls, lo, hi)


@st.composite
def leaf(draw):
    op = draw(st.sampled_from(OPS))
    n = {"between": 2, "in": draw(st.integers(1, 3)), "is_null": 0, "is_not_null": 0}.get(op, 1)
    lits = tuple(draw(st.one_of(st.integers(-6, 6), st.floats(-6, 6, allow_nan=False), st.just(BIG))) for _ in range(n))
    return Leaf(op, "c", lits)


EDGES = [ChunkStats(3, 0, 2, 4), ChunkStats(3, 1, 2.0, 4.0), ChunkStats(2, 2, 2, 4), ChunkStats(0, 0, 9, 9)]


@SETTINGS
@given(st.lists(chunk(), min_size=1, max_size=12), leaf(), st.sampled_from([pa.int64(), pa.float64()]))
@example(EDGES, Leaf("less_than", "c", (2,)), pa.int64())  # the bounds themselves decide
@example(EDGES, Leaf("less_or_equal", "c", (1,)), pa.float64())
@example(EDGES, Leaf("greater_than", "c", (4,)), pa.float64())
@example(EDGES, Leaf("greater_or_equal", "c", (5,)), pa.int64())
@example(EDGES, Leaf("greater_or_equal", "c", (4,)), pa.float64())  # a bound that holds: kept
@example(EDGES, Leaf("less_or_equal", "c", (2,)), pa.int64())
@example(EDGES, Leaf("equal", "c", (1,)), pa.int64())
@example(EDGES, Leaf("between", "c", (5, 6)), pa.float64())
@example(EDGES, Leaf("between", "c", (3, 2)), pa.int64())  # an empty range
@example(EDGES, Leaf("in", "c", (0, 5)), pa.int64())
@example(EDGES, Leaf("is_null", "c", ()), pa.int64())
@example(EDGES, Leaf("is_not_null", "c", ()), pa.float64())
def test_a_file_is_marked_only_where_its_own_answer_is_skip(stats, lf, t):
    prep = leaf_prepared(lf, t)
    mask = leaf_skips(prep, stats_arrays(stats, stat_kind(t)))
    for c, m in zip(stats, mask.tolist()):
        said = None if c is None else leaf_answer(lf, [c], t, prep)
        assert not m or said == "skip", (c, lf, said)
        # and nothing is left to the file-by-file answer that the arrays could decide
        simple = c is not None and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and v == v and abs(v) < 1 << 53
            for v in (c.min, c.max)
        )
        if said == "skip" and prep is not None and simple and all(abs(v) < 1 << 53 for v in prep[1]):
            if t == pa.int64() and not all(isinstance(v, int) for v in (c.min, c.max)):
                continue  # (a float bound of an integer column: left to the file)
            assert m, (c, lf)


@SETTINGS
@given(
    st.lists(st.lists(st.sampled_from(["skip", "all", "remain"]), min_size=4, max_size=4), min_size=1, max_size=4),
    st.integers(0, 2**32 - 1),
)
def test_tree_skips_combine_as_evaluate_tree(answers, seed):
    # leaves l0..l3 with, per file, a SKIP / every row / REMAIN answer; random AND / OR trees of them
    rng = np.random.default_rng(seed)
    leaves = [Leaf("equal", f"l{i}", (i,)) for i in range(4)]

    def tree(depth):
        if depth == 0 or rng.random() < 0.3:
            return leaves[int(rng.integers(0, 4))]
        kids = tuple(tree(depth - 1) for _ in range(int(rng.integers(1, 4))))
        return And(kids) if rng.random() < 0.5 else Or(kids)

    for _ in range(5):
        pred = tree(3)
        got = tree_skips(pred, lambda lf: np.array([a[int(lf.name[1:])] == "skip" for a in answers]), len(answers))
        for f, a in enumerate(answers):
            res = {"skip": SKIP, "all": BitmapResult(pa_range(3)), "remain": REMAIN}
            want = evaluate_tree(pred, lambda lf: res[a[int(lf.name[1:])]]) is SKIP
            assert bool(got[f]) == want, (pred, a)


def pa_range(n):
    from pyroaring import BitMap

    return BitMap(range(n))


@pytest.fixture
def clustered(tmp_path):
    rng = np.random.default_rng(4)
    root = tmp_path / "ds"
    root.mkdir()
    for k in range(4):
        n = 600
        x = rng.uniform(0, 1000, n)
        pq.write_table(
            pa.table(
                {
                    "id": pa.array(np.arange(k * n, (k + 1) * n)),
                    "x": pa.array(x, mask=rng.random(n) < 0.05),
                    "q": pa.array(rng.integers(-50, 50, n).astype(np.int32)),
                    "s": pa.array([f"s{v:03d}" for v in rng.integers(0, 300, n)]),
                }
            ),
            root / f"f{k}.parquet",
        )
    ds = ParquetDataset(str(root))
    ds.build({"file-index.range-bitmap.columns": "x", "file-index.bsi.columns": "q"})
    ds.optimize(["x"], target_file_size=3_000, row_group_rows=128, page_rows=64)
    return str(root)


QUERIES = [
    ("x < 40", lambda t: pc.less(t["x"], 40)),
    ("x >= 500 AND x < 520", lambda t: pc.and_(pc.greater_equal(t["x"], 500), pc.less(t["x"], 520))),
    ("x < 10 OR x > 990", lambda t: pc.or_(pc.less(t["x"], 10), pc.greater(t["x"], 990))),
    (
        "x BETWEEN 300 AND 310 AND q > 0",
        lambda t: pc.and_(pc.and_(pc.greater_equal(t["x"], 300), pc.less_equal(t["x"], 310)), pc.greater(t["q"], 0)),
    ),
    ("x IN (1.5, 700.25) OR id = 7", lambda t: pc.or_(pc.is_in(t["x"], pa.array([1.5, 700.25])), pc.equal(t["id"], 7))),
    ("x IS NULL", lambda t: pc.is_null(t["x"])),
    ("x < -1", lambda t: pc.less(t["x"], -1)),
    ("s = 's005' AND x > 900", lambda t: pc.and_(pc.equal(t["s"], "s005"), pc.greater(t["x"], 900))),
]


@pytest.mark.parametrize("query,fn", QUERIES, ids=[q for q, _ in QUERIES])
def test_plans_and_rows_are_the_same_with_and_without_the_arrays(clustered, monkeypatch, query, fn):
    ds = ParquetDataset(clustered)
    assert len(ds.files()) >= 8 and all("stats" in e for e in ds.read_catalog()["files"].values())
    plans = {}
    for on in (False, True):
        monkeypatch.setattr(dataset_plan, "_CATALOG_VECTORS", on)
        p = ds.plan(query)
        plans[on] = (
            sorted((k.file.path, len(k.bitmap) if k.bitmap is not None else -1) for k in p.kept),
            p.report.files_skipped,
            _counts(p.report),
        )
        got = ds.read(query).to_arrow()
        table = pq.read_table(clustered)  # the oracle: every row, filtered by hand
        want = table.filter(fn(table))
        assert sorted(got.column("id").to_pylist()) == sorted(want.column("id").to_pylist())
        assert ds.read(query).count() == want.num_rows
    assert plans[True] == plans[False]
    if query in ("x < 40", "x < -1", "x >= 500 AND x < 520"):
        assert plans[True][1] >= len(ds.files()) // 2  # most files settled by the statistics


def _counts(report) -> dict:
    """What a plan's report counts (not its times and bytes)."""
    return {k: v for k, v in report.as_dict().items() if k not in ("eval_seconds", "bytes_read", "decoded")}


def test_settled_files_without_an_index_are_reported_as_file_by_file(tmp_path, monkeypatch):
    # files an optimize wrote (catalog statistics) with no file index built: the plans the
    # statistics settle are reported in bulk, as the file-by-file plan reports them
    root = tmp_path / "ds"
    root.mkdir()
    rng = np.random.default_rng(8)
    for k in range(3):
        pq.write_table(
            pa.table({"id": np.arange(k * 400, (k + 1) * 400), "x": rng.uniform(0, 100, 400)}), root / f"f{k}.parquet"
        )
    ParquetDataset(str(root)).optimize(["x"], target_file_size=2_000, row_group_rows=100, page_rows=50)
    ds = ParquetDataset(str(root))
    assert len(ds.files()) >= 4 and not any("file_index" in e for e in ds.read_catalog()["files"].values())
    for query in ("x < -1", "x < 10", "x > 50 OR id = 3"):
        got = {}
        for on in (False, True):
            monkeypatch.setattr(dataset_plan, "_CATALOG_VECTORS", on)
            got[on] = _counts(ds.plan(query).report)
        assert got[True] == got[False], query
        if query == "x < -1":
            assert got[True]["files_skipped"] == len(ds.files()) == len(got[True]["unindexed"])


def test_a_float_comparison_is_answered_by_its_exact_index_without_the_pages(tmp_path, monkeypatch):
    # files of one row group clustered by x: the pages of a floating-point comparison are never
    # sure of their rows (NaN), so x's range bitmap answers exactly and the page index is not read
    # for it; q (an integer, sorted in no file) is answered by its index as before
    root = tmp_path / "ds"
    root.mkdir()
    rng = np.random.default_rng(9)
    n = 3000
    x = rng.uniform(0, 1000, n)
    x[rng.random(n) < 0.01] = np.nan
    pq.write_table(
        pa.table({"id": np.arange(n), "x": pa.array(x, mask=rng.random(n) < 0.05), "q": rng.integers(-9, 9, n)}),
        root / "f.parquet",
    )
    ds = ParquetDataset(str(root))
    ds.build({"file-index.range-bitmap.columns": "x,q"})
    ds.optimize(["x"], target_file_size=12_000, row_group_rows=1 << 20, page_rows=64)
    asked = []
    real = dataset_plan._PlanMixin._page_answer
    monkeypatch.setattr(
        dataset_plan._PlanMixin,
        "_page_answer",
        lambda self, f, leaf, *a: asked.append(leaf.name) or real(self, f, leaf, *a),
    )
    ds = ParquetDataset(str(root))
    assert len(ds.files()) >= 3 and all(e.get("row_groups") == 1 for e in ds.read_catalog()["files"].values())
    table = pq.read_table(str(root))
    for query, fn, exact in (
        ("x < 400", lambda t: pc.less(t["x"], 400), True),
        ("x BETWEEN 500 AND 520", lambda t: pc.and_(pc.greater_equal(t["x"], 500), pc.less_equal(t["x"], 520)), True),
        ("x < 300 AND q = 3", lambda t: pc.and_(pc.less(t["x"], 300), pc.equal(t["q"], 3)), True),
        # the file holding the NaNs: its range bitmap answers inexactly, its pages are read
        ("x > 900", lambda t: pc.greater(t["x"], 900), False),
    ):
        asked.clear()
        p = ds.plan(query)
        want = table.filter(fn(table))
        assert sorted(ds.read(query).to_arrow().column("id").to_pylist()) == sorted(want.column("id").to_pylist())
        if exact:
            assert p.kept and all(k.exact for k in p.kept), query
            assert sum(len(k.bitmap) for k in p.kept) == want.num_rows, query
            assert "x" not in asked, query
        else:
            assert not all(k.exact for k in p.kept) and "x" in asked


def test_a_file_rewritten_after_its_statistics_is_not_settled_by_them(clustered):
    ds = ParquetDataset(clustered)
    entries = ds.read_catalog()["files"]
    rel, e = min(entries.items(), key=lambda kv: kv[1]["stats"]["x"]["max"])
    assert e["stats"]["x"]["max"] < 500
    path = f"{clustered}/{rel}"
    schema = pq.read_schema(path)
    pq.write_table(
        pa.table({"id": [10**7], "x": [5000.0], "q": pa.array([1], pa.int32()), "s": ["z"]}, schema=schema), path
    )
    assert ParquetDataset(clustered).read("x > 4000").to_arrow().column("id").to_pylist() == [10**7]
    assert ParquetDataset(clustered).read("x > 4000").count() == 1


def test_page_answers_are_the_same_with_and_without_the_arrays(clustered, monkeypatch):
    # a clustered file's pages are asked with arrays (pagestats._page_stats); the page-by-page
    # answer is the reference: the same row ranges, exact or not
    import paimon_fast.tables.pagestats as PS

    def one_by_one(fo, g, lf, ci, pages, physical, kind, prepared):
        stats, _ = real(fo, g, lf, ci, pages, physical, kind, prepared)
        return stats, None

    real = PS._page_stats
    ds = ParquetDataset(clustered)
    paths = [f"{clustered}/{f.path}" for f in ds.files()]
    types = {"x": pa.float64(), "q": pa.int32(), "id": pa.int64()}
    leaves = [
        Leaf("less_than", "x", (40.0,)),
        Leaf("between", "x", (500.0, 520.0)),
        Leaf("greater_or_equal", "x", (990.5,)),
        Leaf("equal", "q", (3,)),
        Leaf("in", "id", (5, 1200, 2399)),
        Leaf("is_null", "x", ()),
        Leaf("is_not_null", "x", ()),
    ]
    answered = 0
    for path in paths:
        for lf in leaves:
            monkeypatch.setattr(PS, "_page_stats", one_by_one)
            want = PS.page_answer(path, lf.name, lf, types[lf.name])
            monkeypatch.setattr(PS, "_page_stats", real)
            got = PS.page_answer(path, lf.name, lf, types[lf.name])
            assert got == want, (path, lf)
            answered += want is not None
    assert answered > len(paths)  # (the files have page indexes: the pages answered)
