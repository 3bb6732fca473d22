"""NULL literals with SQL's meaning through every path: ``field == None`` is an ``equal(null)``
leaf that no row satisfies (Java Paimon, SQL, PySpark and pyarrow agree); ``.is_null()`` asks for
the null rows.  Oracle: a plain-Python three-valued evaluator (None = unknown)."""

import datetime as dt
import decimal

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyroaring import BitMap64

import paimon_fast as pf
from paimon_fast import globalindex as gi
from paimon_fast.core.predicate import STRING_OPS, And, Leaf, Or
from paimon_fast.core.sqlpredicate import parse_predicate
from paimon_fast.read.arrow_filter import to_arrow_expression
from tests.support.paimon_helpers import commit_arrow


# ---------------------------------------------------------------- oracle


def ev(p, row):
    """SQL three-valued logic in plain Python: True / False / None (unknown)."""
    if isinstance(p, And):
        vs = [ev(c, row) for c in p.children]
        return False if False in vs else (None if None in vs else True)
    if isinstance(p, Or):
        vs = [ev(c, row) for c in p.children]
        return True if True in vs else (None if None in vs else False)
    v, op, lits = row[p.name], p.op, p.literals
    if op == "is_null":
        return v is None
    if op == "is_not_null":
        return v is not None
    if v is None:
        return None
    if op in ("in", "not_in"):
        if any(l is not None and v == l for l in lits):
            r = True
        elif any(l is None for l in lits):
            r = None
        else:
            r = False
        return r if op == "in" or r is None else not r
    if op in ("between", "not_between"):
        lo, hi = lits
        a = None if lo is None else lo <= v
        b = None if hi is None else v <= hi
        if op == "between":
            return False if False in (a, b) else (None if None in (a, b) else True)
        na, nb = (None if a is None else not a), (None if b is None else not b)
        return True if True in (na, nb) else (None if None in (na, nb) else False)
    lit = lits[0]
    if lit is None:
        return None
    if op in STRING_OPS:
        raise AssertionError(f"the oracle knows string predicates with a NULL pattern only: {p!r}")
    return {
        "equal": v == lit,
        "not_equal": v != lit,
        "less_than": v < lit,
        "less_or_equal": v <= lit,
        "greater_than": v > lit,
        "greater_or_equal": v >= lit,
    }[op]


def oracle(rows, p):
    return [i for i, r in enumerate(rows) if ev(p, r) is True]


def null_leaves(col, lit):
    """Every predicate with a NULL literal (and a few mixed ones) on column ``col``."""
    f = pf.field(col)
    return [
        f == None,
        f != None,
        f.equal(None),
        f.not_equal(None),  # noqa: E711
        f < None,
        f <= None,
        f > None,
        f >= None,
        f.isin([None]),
        f.isin([lit, None]),
        f.notin([lit, None]),
        f.notin([None]),
        f.between(None, lit),
        f.between(lit, None),
        f.between(None, None),
        f.not_between(None, lit),
        f.not_between(lit, None),
        (f == None) | (f == lit),
        ~(f == None),
        (f != None) | f.is_null(),  # noqa: E711
        f.is_null(),
        f.is_not_null(),
    ] + (
        # a NULL pattern: no row in SQL, no index answers it (Java's "unsupported")
        [f.startswith(None), f.endswith(None), f.contains(None), f.like(None), f.like(None) | (f == lit)]
        if isinstance(lit, str)
        else []
    )


# ---------------------------------------------------------------- builder and SQL text


def test_eq_none_is_an_equal_null_leaf_not_is_null():
    f = pf.field("x")
    assert (f == None) == Leaf("equal", "x", (None,))  # noqa: E711
    assert (f != None) == Leaf("not_equal", "x", (None,))  # noqa: E711
    assert (f == None) != f.is_null() and (f != None) != f.is_not_null()  # noqa: E711
    assert (f == None) == f.equal(None)  # noqa: E711
    assert ~(f == None) == (f != None)  # noqa: E711


@pytest.mark.parametrize(
    "text, want",
    [
        ("x = NULL", Leaf("equal", "x", (None,))),
        ("NULL = x", Leaf("equal", "x", (None,))),
        ("x <> NULL", Leaf("not_equal", "x", (None,))),
        ("x < NULL", Leaf("less_than", "x", (None,))),
        ("NULL < x", Leaf("greater_than", "x", (None,))),
        ("x IN (1, NULL)", Leaf("in", "x", (1, None))),
        ("x NOT IN (NULL)", Leaf("not_in", "x", (None,))),
        ("x BETWEEN NULL AND 3", Leaf("between", "x", (None, 3))),
        ("NOT x = NULL", Leaf("not_equal", "x", (None,))),
        ("x IS NULL", Leaf("is_null", "x")),
        ("x IS NOT NULL", Leaf("is_not_null", "x")),
        ("x LIKE NULL", Leaf("like", "x", (None,))),
    ],
)
def test_sql_null_literal(text, want):
    assert parse_predicate(text) == want


# ---------------------------------------------------------------- exact Arrow filter

TABLE = pa.table(
    {
        "x": pa.array([1, None, 3, 4, None, 6, 3], pa.int64()),
        "s": pa.array(["a", "b", None, "a", "c", None, "b"]),
    }
)


@pytest.mark.parametrize("col, lit", [("x", 3), ("s", "a")])
def test_arrow_filter_null_literals(col, lit):
    rows = TABLE.to_pylist()
    for p in null_leaves(col, lit):
        got = TABLE.filter(to_arrow_expression(p, TABLE.schema)).to_pylist()
        assert got == [rows[i] for i in oracle(rows, p)], p
    # the SQL text path gives the same leaves
    for text in (
        f"{col} = NULL",
        f"{col} != NULL",
        f"{col} >= NULL",
        f"{col} NOT IN ({lit!r}, NULL)",
        f"{col} IN ({lit!r}, NULL)",
        f"{col} BETWEEN NULL AND {lit!r}",
        f"{col} LIKE NULL OR {col} = {lit!r}",
    ):
        p = parse_predicate(text)
        assert TABLE.filter(to_arrow_expression(p, TABLE.schema)).to_pylist() == [rows[i] for i in oracle(rows, p)]
    assert TABLE.filter(to_arrow_expression(pf.field(col) == None, TABLE.schema)).num_rows == 0  # noqa: E711
    assert TABLE.filter(to_arrow_expression(pf.field(col).is_null(), TABLE.schema)).num_rows == 2


# ---------------------------------------------------------------- bitmap global index (Java master's answers)

GI_COLUMNS = [
    ("INT", pa.int32(), [5, None, -3, 5, 7, None, 0, -3], 5),
    ("BIGINT", pa.int64(), [2**40, None, -1, 2**40, None, 3], -1),
    ("DOUBLE", pa.float64(), [1.5, None, -0.0, 2.5, 1.5], 1.5),
    ("STRING", pa.string(), ["b", None, "a", "b", "", None], "b"),
    ("DATE", pa.date32(), [dt.date(2020, 1, 1), None, dt.date(1969, 12, 31)], dt.date(2020, 1, 1)),
    (
        "DECIMAL(10, 2)",
        pa.decimal128(10, 2),
        [decimal.Decimal("1.25"), None, decimal.Decimal("-3.00")],
        decimal.Decimal("1.25"),
    ),
    ("BOOLEAN", pa.bool_(), [True, None, False, True], True),
]


def _java_index_answer(p, rows, col):
    """What Java master's SortedFileGlobalIndexReader + BitmapIndexReader answer for a leaf:
    no rows for = / != NULL and NOT IN with a NULL, IN ignores NULLs, ranges and between
    with a NULL decline (None here = not answered)."""
    op, lits = p.op, p.literals
    if op in ("equal", "not_equal") and lits[0] is None:
        return BitMap64()
    if op == "not_in" and any(v is None for v in lits):
        return BitMap64()
    if op == "in":
        return BitMap64(
            i for i, r in enumerate(rows) if r[col] is not None and r[col] in [v for v in lits if v is not None]
        )
    if op in ("less_than", "less_or_equal", "greater_than", "greater_or_equal") and lits[0] is None:
        return None
    if op in ("between", "not_between") and None in lits:
        return None
    if op in STRING_OPS and lits[0] is None:
        return None
    return "any"


@pytest.mark.parametrize("index_type", ["bitmap", "btree"])
@pytest.mark.parametrize("dtype, atype, values, lit", GI_COLUMNS, ids=[c[0] for c in GI_COLUMNS])
def test_global_index_null_literals(dtype, atype, values, lit, index_type):
    arr = pa.array(values, atype)
    w = gi.writer(dtype, index_type=index_type)
    w.write_batch(arr, np.arange(len(arr)))
    data, meta = w.finish()
    kind = gi.BTreeGlobalIndex if index_type == "btree" else gi.GlobalIndex
    idx = kind([(data, meta)], dtype, {}, total_row_count=len(arr))
    t = pa.table({"c": arr})
    rows = t.to_pylist()
    for p in null_leaves("c", lit):
        got = idx.evaluate(p)
        if isinstance(p, Leaf):
            want = _java_index_answer(p, rows, "c")
            if want is None:
                assert got is pf.UNSUPPORTED, p
            elif want != "any":
                assert got == want, p
        # the final answer: the index's candidates (all rows when it declines), filtered exactly
        cand = range(len(rows)) if got is pf.UNSUPPORTED else sorted(got)
        kept = t.take(pa.array(list(cand), pa.int64())).filter(to_arrow_expression(p, t.schema))
        want_rows = [rows[i] for i in oracle(rows, p)]
        assert kept.to_pylist() == want_rows, p
        # the index never drops a matching row
        if got is not pf.UNSUPPORTED:
            assert set(oracle(rows, p)) <= set(got), p


# ---------------------------------------------------------------- Parquet datasets (file + global indexes)


def test_parquet_dataset_null_literals(tmp_path):
    from paimon_fast.tables import ParquetDataset

    t = pa.table(
        {"x": pa.array([1, 2, None, 3, None, 5] * 40, pa.int64()), "s": pa.array(["a", None, "b", "c", "a", None] * 40)}
    )
    pq.write_table(t, tmp_path / "f.parquet", row_group_size=60)
    ds = ParquetDataset(str(tmp_path))
    ds.build(
        {
            "file-index.bsi.columns": "x",
            "file-index.range-bitmap.columns": "x",
            "file-index.bitmap.columns": "s",
            "file-index.bloom-filter.columns": "s",
        }
    )
    rows = t.to_pylist()
    for col, lit in (("x", 3), ("s", "a")):
        for p in null_leaves(col, lit):
            got, rep = ds.scan(p)
            assert sorted(map(str, got.to_pylist())) == sorted(map(str, (rows[i] for i in oracle(rows, p)))), p
            # a NULL literal in a BSI / range-bitmap comparison is not a broken index
            assert rep.index_errors == 0, p
        got, _ = ds.scan(f"{col} = NULL")
        assert got.num_rows == 0


# ---------------------------------------------------------------- Paimon tables


def test_paimon_table_null_literals(tmp_path):
    pytest.importorskip("pypaimon")
    from tests.support.paimon_helpers import catalog
    from pypaimon import Schema

    from paimon_fast.paimon import read_with_index

    cat = catalog(tmp_path)
    cat.create_database("db", True)
    schema = pa.schema([("x", pa.int64()), ("s", pa.string())])
    opts = {"bucket": "-1", "file-index.bitmap.columns": "s", "file-index.bsi.columns": "x"}
    cat.create_table("db.t", Schema.from_pyarrow_schema(schema, options=opts), False)
    tb = cat.get_table("db.t")
    data = []
    for k in range(2):
        part = pa.table({"x": pa.array([1, None, 3, k], pa.int64()), "s": pa.array(["a", None, "b", None])})
        data += part.to_pylist()
        commit_arrow(tb, part)
    tb = cat.get_table("db.t")
    for col, lit in (("x", 3), ("s", "a")):
        for p in null_leaves(col, lit):
            want = sorted(map(str, (data[i] for i in oracle(data, p))))
            for fast in (True, False):
                got, _ = read_with_index(tb, p, fast=fast)
                assert sorted(map(str, got.to_pylist())) == want, (p, fast)


# ---------------------------------------------------------------- Hudi tables


def test_hudi_null_literals(tmp_path):
    pytest.importorskip("hudi")
    from tests.support.hudi_writer import CowTable

    import paimon_fast.hudi as ph

    schema = pa.schema([("id", pa.int64()), ("x", pa.int64()), ("s", pa.string())])
    t = CowTable(str(tmp_path / "cow"), schema)
    data = pa.table(
        {
            "id": pa.array(range(12), pa.int64()),
            "x": pa.array([1, None, 3, 4, None, 6] * 2, pa.int64()),
            "s": pa.array(["a", "b", None, "a", "c", None] * 2),
        },
        schema=schema,
    )
    t.insert(data, groups=2)
    ph.build_index(None, t.path, ["x", "s"])
    rows = data.to_pylist()
    for col, lit in (("x", 3), ("s", "a")):
        for p in null_leaves(col, lit):
            got = ph.read_arrow(t.path, p).table
            assert sorted(got.column("id").to_pylist()) == [rows[i]["id"] for i in oracle(rows, p)], p


# ---------------------------------------------------------------- Spark


@pytest.mark.spark
def test_spark_column_null_literals(spark):
    pytest.importorskip("pyspark")
    from paimon_fast.spark.columns import to_spark_column

    rows = TABLE.to_pylist()
    from tests.support.spark_support import kept_in_one_job

    df = spark.createDataFrame([(i, r["x"], r["s"]) for i, r in enumerate(rows)], "i long, x long, s string")
    preds = [
        p for col, lit in (("x", 3), ("s", "a")) for p in null_leaves(col, lit) + [parse_predicate(f"{col} = NULL")]
    ]
    got = kept_in_one_job(df, "i", [to_spark_column(p) for p in preds])  # one Spark job
    for p, ids in zip(preds, got):
        assert ids == oracle(rows, p), p
