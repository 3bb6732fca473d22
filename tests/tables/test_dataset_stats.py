"""A plan answers leaves from the files' own Parquet statistics before any index
(paimon_fast/tables/stats.py): files outside a range are skipped without opening their
index, files wholly inside it are taken whole, and nothing the statistics cannot prove is
claimed (NaN, nulls, unsigned integers, legacy statistics).  The oracle is an SQL evaluator
of the tests' own over the rows (tests/support/sql_oracle.py)."""

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimon_fast.core.predicate import Leaf
from paimon_fast.core.sqlpredicate import parse_predicate
from paimon_fast.tables import ParquetDataset
from paimon_fast.tables.stats import ChunkStats, file_stats, leaf_answer
from tests.support.sql_oracle import holds


def _dataset(tmp_path, build=True):
    """Six files clustered by ``k`` (ints), with a string, a double holding NaNs and nulls, a
    uint64 beyond the int64 range, and a column of nulls only in one file."""
    rng = np.random.default_rng(5)
    rows = []
    for i in range(6):
        n = 400
        k = np.arange(i * 1000, i * 1000 + n, dtype=np.int64)
        d = rng.random(n) * 100 + i * 100
        d[rng.random(n) < 0.05] = np.nan
        t = pa.table(
            {
                "k": k,
                "s": pa.array([f"s{i}-{j:04d}" for j in range(n)]),
                "d": pa.array(d, mask=rng.random(n) < 0.1),
                "u": pa.array((np.arange(n, dtype=np.uint64) + np.uint64(2**63) * np.uint64(i % 2)), pa.uint64()),
                "z": pa.array([None if i == 3 else j for j in range(n)], pa.int32()),
            }
        )
        pq.write_table(t, tmp_path / f"part-{i}.parquet", row_group_size=150)
        rows.extend(t.to_pylist())
    ds = ParquetDataset(str(tmp_path))
    if build:
        ds.build({"file-index.bloom-filter.columns": "s", "file-index.bsi.columns": "k"})
    return ds, rows


PREDICATES = [
    "k < 1000",
    "k >= 5000",
    "k BETWEEN 1100 AND 2300",
    "k = 4399",
    "k > 4399 AND k < 5000",
    "k IN (3, 5005, 99999)",
    "s = 's2-0007'",
    "s >= 's4'",
    "s < 's1'",
    "d < 100",
    "d > 450",
    "d >= 0",
    "d BETWEEN 200 AND 300",
    "d IS NULL",
    "d IS NOT NULL",
    "u > 5",
    "u < 9223372036854775809",
    "z IS NULL",
    "z IS NOT NULL AND k < 4000",
    "k < 2000 OR s = 's5-0001'",
]


@pytest.mark.parametrize("build", [True, False])
def test_reads_match_the_oracle_with_statistics(tmp_path, build):
    ds, rows = _dataset(tmp_path, build)
    for q in PREDICATES:
        pred = parse_predicate(q)
        want = sorted(r["k"] for r in rows if holds(pred, r))
        got = ds.read(q, columns=["k"]).to_arrow().column("k").to_pylist()
        assert sorted(got) == want, q
        assert ds.read(q).count() == len(want), q
        # every file the plan skipped holds no match, every file it took whole holds nothing else
        plan = ds.plan(pred)
        for p in plan.files:
            in_file = [r for r in rows if p.file.path.endswith(f"part-{r['k'] // 1000}.parquet")]
            n_match = sum(holds(pred, r) for r in in_file)
            if p.skipped:
                assert n_match == 0, (q, p.file.path)
            elif p.exact and p.bitmap is not None:
                assert len(p.bitmap) == n_match, (q, p.file.path)


def test_files_outside_a_range_never_open_their_index(tmp_path, monkeypatch):
    ds, rows = _dataset(tmp_path)
    opened = []
    real = ParquetDataset.open_index

    def spy(self, f, entry=None, **kw):
        opened.append(f.path)
        return real(self, f, entry, **kw)

    monkeypatch.setattr(ParquetDataset, "open_index", spy)
    plan = ds.plan(parse_predicate("k BETWEEN 1100 AND 2300"))
    assert sorted(p.file.path for p in plan.kept) == ["part-1.parquet", "part-2.parquet"]
    # row groups of 150 rows: part-1's first (1000..1149) and part-2's last (2300..2399) are partly
    # inside, so those two files ask their index; the other four are skipped unopened
    assert sorted(opened) == ["part-1.parquet", "part-2.parquet"]
    assert all(p.exact for p in plan.kept)
    opened.clear()
    plan = ds.plan(parse_predicate("k BETWEEN 1150 AND 2299"))  # row groups wholly in or out
    assert opened == [] and [len(p.bitmap) for p in plan.kept] == [250, 300]
    opened.clear()
    plan = ds.plan(parse_predicate("k < 3000"))
    assert opened == [] and [p.file.path for p in plan.kept] == ["part-0.parquet", "part-1.parquet", "part-2.parquet"]
    assert ds.read("k < 3000").count() == 1200 and opened == []
    # a leaf the statistics cannot answer for a file asks its index
    opened.clear()
    plan = ds.plan(parse_predicate("k = 1234"))
    assert opened == ["part-1.parquet"] and len(plan.kept) == 1


def test_a_build_records_the_indexed_columns_statistics(tmp_path, monkeypatch):
    # the catalog keeps each indexed column's bounds and null count and the row groups: plans skip
    # files by them on every store, without the footers (statistics=False, as on object stores)
    ds, rows = _dataset(tmp_path)
    entries = ds.read_catalog()["files"]
    for i in range(6):
        e = entries[f"part-{i}.parquet"]
        mine = [r for r in rows if r["k"] // 1000 == i]
        assert e["row_groups"] == 3 and set(e["stats"]) == {"k", "s"}
        assert e["stats"]["k"] == {"nulls": 0, "min": min(r["k"] for r in mine), "max": max(r["k"] for r in mine)}
        assert e["stats"]["s"] == {"nulls": 0, "min": min(r["s"] for r in mine), "max": max(r["s"] for r in mine)}
    opened, looked = [], []
    real, real_current = ParquetDataset.open_index, ParquetDataset._index_current
    monkeypatch.setattr(
        ParquetDataset, "open_index", lambda self, f, e=None, **kw: opened.append(f.path) or real(self, f, e, **kw)
    )
    monkeypatch.setattr(
        ParquetDataset, "_index_current", lambda self, f, *a: looked.append(f.path) or real_current(self, f, *a)
    )
    no_footers = ParquetDataset(str(tmp_path), statistics=False)
    plan = no_footers.plan(parse_predicate("k BETWEEN 1100 AND 2300"))
    assert sorted(opened) == ["part-1.parquet", "part-2.parquet"]
    assert set(looked) == {"part-1.parquet", "part-2.parquet"}  # the others settled before their index is looked for
    assert plan.report.files_skipped == 4 and plan.report.files_without_index == 0
    assert sorted(p.file.path for p in plan.kept) == ["part-1.parquet", "part-2.parquet"]
    assert no_footers.read("k BETWEEN 1100 AND 2300").count() == sum(1100 <= r["k"] <= 2300 for r in rows)


def test_leaf_answers_claim_only_what_statistics_prove():
    ints = [ChunkStats(100, 0, 10, 20), ChunkStats(50, 0, 21, 30)]
    t = pa.int64()
    assert leaf_answer(Leaf("less_than", "x", (10,)), ints, t) == "skip"
    assert leaf_answer(Leaf("less_than", "x", (31,)), ints, t) == "all"
    assert leaf_answer(Leaf("less_than", "x", (25,)), ints, t) is None
    assert leaf_answer(Leaf("between", "x", (5, 40)), ints, t) == "all"
    assert leaf_answer(Leaf("equal", "x", (99,)), ints, t) == "skip"
    # nulls: a comparison is never all; is_null from the counts
    with_nulls = [ChunkStats(100, 3, 10, 20)]
    assert leaf_answer(Leaf("less_than", "x", (31,)), with_nulls, t) is None
    assert leaf_answer(Leaf("is_null", "x", ()), ints, t) == "skip"
    assert leaf_answer(Leaf("is_not_null", "x", ()), ints, t) == "all"
    assert leaf_answer(Leaf("is_null", "x", ()), [ChunkStats(10, None, 1, 2)], t) is None
    # floating point: skip only (NaNs are not in the statistics), never all
    fl = [ChunkStats(100, 0, 1.0, 2.0)]
    assert leaf_answer(Leaf("less_than", "x", (5.0,)), fl, pa.float64()) is None
    assert leaf_answer(Leaf("greater_than", "x", (5.0,)), fl, pa.float64()) == "skip"
    assert leaf_answer(Leaf("less_than", "x", (float("nan"),)), fl, pa.float64()) is None
    assert leaf_answer(Leaf("less_than", "x", (5.0,)), [ChunkStats(100, 0, float("nan"), 2.0)], pa.float64()) is None
    # types the statistics are not used for, literals of another kind, missing statistics
    assert leaf_answer(Leaf("less_than", "x", (5,)), ints, pa.uint64()) is None
    assert leaf_answer(Leaf("less_than", "x", ("a",)), ints, t) is None
    assert leaf_answer(Leaf("less_than", "x", (5,)), [ChunkStats(100, 0, None, None)], t) is None
    assert leaf_answer(Leaf("like", "x", ("a%",)), [ChunkStats(1, 0, b"a", b"b")], pa.string()) is None
    # row groups wholly in or out: their rows
    assert leaf_answer(Leaf("less_than", "x", (21,)), ints, t) == [(0, 100)]
    assert leaf_answer(Leaf("greater_than", "x", (20,)), ints, t) == [(100, 150)]


def test_unsigned_and_nested_columns_have_no_statistics(tmp_path):
    t = pa.table({"u": pa.array([1, 2**63 + 5], pa.uint64()), "l": pa.array([[1], [2]]), "i": [1, 2]})
    pq.write_table(t, tmp_path / "f.parquet")
    from paimon_fast.io.parquet.footer import _read_footer
    from paimon_fast.io.source import FileSource

    fo = _read_footer(FileSource(str(tmp_path / "f.parquet")))
    assert file_stats(fo, "u") is None and file_stats(fo, "l") is None
    assert file_stats(fo, "i") == [ChunkStats(2, 0, 1, 2)]


def test_explain_names_what_the_statistics_removed(tmp_path):
    ds, rows = _dataset(tmp_path)
    ex = ds.read("k BETWEEN 1100 AND 2300").explain()
    st = [u for u in ex.indexes if u.index == "parquet statistics" and u.column == "k"]
    assert len(st) == 1 and st[0].used and st[0].files == 6
    assert st[0].files_removed == 4 and st[0].rows_removed == 1600  # four files and 2 row groups outside
    assert "parquet statistics" in str(ex)
    # a leaf they cannot settle (no row: they were only a try), and a dataset that does not use them
    ex = ds.read("d >= 0").explain()
    assert not [u for u in ex.indexes if u.index == "parquet statistics"]
    off = ParquetDataset(str(tmp_path), statistics=False)
    assert not [u for u in off.read("k < 10").explain().indexes if u.index == "parquet statistics"]
    assert off.read("k < 10").count() == ds.read("k < 10").count() == 10
