"""Table-level top-N on Parquet datasets, against a plain-Python oracle over every row.

The oracle reads every file whole with pyarrow (no index, no product filter),
evaluates the ``where`` predicate in Python with SQL's three-valued logic,
drops deleted rows, and sorts by (value, file order, row position) with SQL's
ordering (NaN above every float, -0.0 equal to 0.0, nulls last unless asked).
"""

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import paimon_fast as pf
from paimon_fast.tables.parquet import ParquetDataset
from paimon_fast.read.topn import TopNReport
from tests.support.sql_oracle import holds, order_key

RANGE = {"file-index.range-bitmap.columns": "v,d,s"}


def write_files(root, tables, part=False):
    for i, t in enumerate(tables):
        d = root / (f"p={'ab'[i % 2]}" if part else "")
        os.makedirs(d, exist_ok=True)
        pq.write_table(t, d / f"f{i:02d}.parquet", row_group_size=37)
    return ParquetDataset(str(root))


def random_tables(rng, nfiles, rows, nulls=0.1, distinct=30):
    out, rid = [], 0
    for _ in range(nfiles):
        n = int(rng.integers(0, rows + 1))
        v = rng.integers(-distinct, distinct, n)
        vmask = rng.random(n) < nulls
        d = rng.choice([-1.5, -0.0, 0.0, 0.5, 2.0, 7.25, float("nan"), float("inf")], n)
        dmask = rng.random(n) < nulls
        s = rng.choice([f"s{j:02d}" for j in range(12)], n)
        smask = rng.random(n) < nulls
        out.append(
            pa.table(
                {
                    "id": pa.array(np.arange(rid, rid + n), pa.int64()),
                    "v": pa.array(v.astype(np.int32), pa.int32(), mask=vmask),
                    "d": pa.array(d, pa.float64(), mask=dmask),
                    "s": pa.array(s.astype(object), pa.string(), mask=smask),
                    "w": pa.array(rng.integers(0, 4, n).astype(np.int64)),
                }
            )
        )
        rid += n
    return out


# ---------------------------------------------------------------- the oracle


def oracle(ds, column, k, desc=True, where=None, nulls_first=False):
    dvs = ds.deletion_vectors()
    rows = []
    for fi, f in enumerate(ds.files()):
        t = ds.read_file(f)  # partition columns added, no filter
        dv = dvs.get(f.path)
        for pos, r in enumerate(t.to_pylist()):
            if dv is not None and dv.is_deleted(pos):
                continue
            if where is not None and not holds(where, r):
                continue
            rows.append((order_key(r[column], desc, nulls_first), fi, pos, r["id"]))
    rows.sort(key=lambda x: x[:3])
    return [r[3] for r in rows[:k]]


# ---------------------------------------------------------------- tests


@pytest.fixture
def ds(tmp_path):
    rng = np.random.default_rng(7)
    d = write_files(tmp_path, random_tables(rng, 6, 300))
    d.build(RANGE)
    return d


@pytest.mark.parametrize("column", ["v", "d", "s", "w"])
@pytest.mark.parametrize("desc", [True, False])
@pytest.mark.parametrize("k", [1, 10, 1000, 5000])
def test_top_n_matches_oracle(ds, column, desc, k):
    got = ds.top_n(column, k, desc=desc, columns=["id"]).column("id").to_pylist()
    assert got == oracle(ds, column, k, desc)


@pytest.mark.parametrize("nulls_first", [True, False])
def test_nulls_first_and_last(ds, nulls_first):
    import warnings

    for col in ("v", "d"):
        with warnings.catch_warnings():
            # no deprecation of the sort options (pyarrow 25+ wants the null placement per sort key)
            warnings.simplefilter("error")
            got = ds.top_n(col, 25, nulls_first=nulls_first, columns=["id"]).column("id").to_pylist()
        assert got == oracle(ds, col, 25, True, None, nulls_first)


WHERES = [
    pf.field("w") == 2,
    (pf.field("w") == 1) | (pf.field("v") < -10),
    (pf.field("s") == "s03") & pf.field("v").is_not_null(),
    pf.field("v") >= 1000,  # nothing
]


@pytest.mark.parametrize("where", range(len(WHERES)))
@pytest.mark.parametrize("k", [1, 10, 1000])
def test_where_applied_first(ds, where, k):
    p = WHERES[where]
    got = ds.top_n("v", k, where=p, columns=["id"]).column("id").to_pylist()
    assert got == oracle(ds, "v", k, True, p)


def test_deleted_rows_never_count(ds):
    before = ds.top_n("v", 10, columns=["id"]).column("id").to_pylist()
    ds.delete(pf.field("id").isin(before[:5]))
    got = ds.top_n("v", 10, columns=["id"]).column("id").to_pylist()
    assert not set(got) & set(before[:5])
    assert got == oracle(ds, "v", 10)


def test_index_prunes_files_and_reads_candidates_only(tmp_path):
    # disjoint value ranges per file: only the file holding the largest values is read
    tables = [
        pa.table(
            {
                "id": pa.array(np.arange(i * 1000, (i + 1) * 1000), pa.int64()),
                "v": pa.array(np.arange(1000, dtype=np.int32) + i * 1000),
            }
        )
        for i in range(5)
    ]
    d = write_files(tmp_path, tables)
    d.build({"file-index.range-bitmap.columns": "v"})
    rep = TopNReport()
    got = d.top_n("v", 10, columns=["id", "v"], report=rep)
    assert got.column("v").to_pylist() == list(range(4999, 4989, -1))
    assert rep.files_skipped == 4 and rep.files_without_index == 0
    assert rep.candidate_rows == 10
    # without an index every file reads its column
    d2 = write_files(tmp_path / "plain", tables)
    rep2 = TopNReport()
    assert d2.top_n("v", 10, columns=["v"], report=rep2).equals(got.select(["v"]))
    assert rep2.files_without_index == 5 and rep2.rows_read >= 5000


def test_partitions_columns_and_errors(tmp_path):
    rng = np.random.default_rng(3)
    d = write_files(tmp_path, random_tables(rng, 4, 120), part=True)
    d.build(RANGE)
    p = pf.field("p") == "b"
    got = d.top_n("v", 7, where=p, columns=["id", "p"])
    assert got.column("id").to_pylist() == oracle(d, "v", 7, True, p)
    assert set(got.column("p").to_pylist()) <= {"b"}
    assert got.schema.names == ["id", "p"]
    assert d.top_n("v", 0).num_rows == 0
    with pytest.raises(KeyError, match="nope"):
        d.top_n("nope", 3)
    with pytest.raises(ValueError, match="non-negative"):
        d.top_n("v", -1)
    sql = d.top_n("v", 5, where="w = 3", columns=["id"]).column("id").to_pylist()
    assert sql == oracle(d, "v", 5, True, pf.field("w") == 3)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seed=st.integers(0, 2**32 - 1),
    k=st.sampled_from([1, 3, 10, 1000]),
    desc=st.booleans(),
    column=st.sampled_from(["v", "d", "s"]),
    nulls_first=st.booleans(),
    nulls=st.sampled_from([0.0, 0.3, 1.0]),
    distinct=st.sampled_from([1, 3, 50]),
    where=st.sampled_from([None, 0, 1, 2]),
    delete=st.booleans(),
)
def test_top_n_property(tmp_path_factory, seed, k, desc, column, nulls_first, nulls, distinct, where, delete):
    rng = np.random.default_rng(seed)
    d = write_files(tmp_path_factory.mktemp("t"), random_tables(rng, int(rng.integers(1, 5)), 80, nulls, distinct))
    if rng.random() < 0.8:
        d.build(RANGE)
    if delete:
        d.delete(pf.field("w") == 0)
    p = None if where is None else WHERES[where]
    got = d.top_n(column, k, desc=desc, where=p, nulls_first=nulls_first, columns=["id"]).column("id").to_pylist()
    assert got == oracle(d, column, k, desc, p, nulls_first)


@pytest.mark.parametrize("desc", [True, False])
def test_signed_zeros_tie_by_position(tmp_path, desc):
    # the index orders -0.0 below 0.0; SQL ties them and the lower position wins
    first, second = (-0.0, 0.0) if desc else (0.0, -0.0)
    t = pa.table(
        {"id": pa.array([0, 1, 2, 3], pa.int64()), "d": pa.array([first, second, 1.0 if desc else -1.0, float("nan")])}
    )
    d = write_files(tmp_path, [t])
    d.build({"file-index.range-bitmap.columns": "d"})
    k = 3 if desc else 2
    got = d.top_n("d", k, desc=desc, columns=["id"]).column("id").to_pylist()
    assert got == oracle(d, "d", k, desc)
    assert got == ([3, 2, 0] if desc else [2, 0])


def test_cli_top_and_bottom(tmp_path, capsys):
    from paimon_fast.cli import main

    tables = [
        pa.table(
            {
                "id": pa.array(np.arange(i * 50, (i + 1) * 50), pa.int64()),
                "v": pa.array((np.arange(50) * 7 + i) % 101, pa.int32()),
            }
        )
        for i in range(3)
    ]
    d = write_files(tmp_path, tables)
    d.build({"file-index.range-bitmap.columns": "v"})
    assert main(["query", str(tmp_path), "--top", "v:3", "--where", "id < 100", "--show", "3"]) in (0, None)
    out = capsys.readouterr().out
    # the third file (ids 100..149) is skipped by its Parquet statistics: id < 100 holds nowhere there
    assert "3 rows" in out and "top-N: 2 files" in out
    want = oracle(d, "v", 3, True, pf.field("id") < 100)
    shown = [int(line.split()[0]) for line in out.strip().splitlines()[-3:]]
    assert shown == want
    main(["query", str(tmp_path), "--bottom", "v:2", "--show", "0"])
    assert "2 rows" in capsys.readouterr().out
    assert main(["query", str(tmp_path), "--top", "v"]) == 2  # a user's mistake: one line, exit 2
    assert "--top / --bottom take COLUMN:K" in capsys.readouterr().err


@pytest.mark.spark
def test_spark_top_n_same_answer(spark, tmp_path):
    from paimon_fast import spark as pfs

    rng = np.random.default_rng(11)
    d = write_files(tmp_path, random_tables(rng, 5, 200), part=True)
    d.build(RANGE)
    d.delete(pf.field("w") == 3)
    for column, k, desc, where in [
        ("v", 10, True, None),
        ("d", 7, False, pf.field("w") == 1),
        ("s", 1000, True, (pf.field("p") == "a") | (pf.field("v") < 0)),
    ]:
        for limit, on in ((0, "executors"), (None, "driver")):  # executor tasks; small: no job at all
            rep = TopNReport()
            got = pfs.top_n(
                spark,
                str(tmp_path),
                column,
                k,
                desc=desc,
                where=where,
                columns=["id", column],
                report=rep,
                driver_max_bytes=limit,
            )
            assert rep.read_on == on
            assert got.column("id").to_pylist() == oracle(d, column, k, desc, where)
            assert got.equals(d.top_n(column, k, desc=desc, where=where, columns=["id", column]))
            assert rep.files_without_index == 0
    assert pfs.top_n(spark, str(tmp_path), "v", 5, where=pf.field("v") > 10**6, driver_max_bytes=0).num_rows == 0


def test_unorderable_column_refused(tmp_path):
    from paimon_fast.errors import ColumnNotFoundError, UnsupportedTypeError

    t = pa.table({"id": pa.array([1, 2], pa.int64()), "tags": pa.array([[1], [2, 3]], pa.list_(pa.int32()))})
    d = write_files(tmp_path, [t])
    with pytest.raises(UnsupportedTypeError, match="tags"):
        d.top_n("tags", 1)
    with pytest.raises(ColumnNotFoundError):
        d.top_n("id", 1, columns=["nope"])
