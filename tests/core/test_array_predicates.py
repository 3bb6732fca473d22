"""array_contains / arrays_overlap / array_contains_all without an index: the exact Arrow filter,
SQL text, Parquet datasets, Paimon tables and Spark columns, against a plain-Python oracle."""

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import paimon_fast as pf
from paimon_fast.core.predicate import Leaf
from paimon_fast.core.sqlpredicate import parse_predicate
from paimon_fast.read.arrow_filter import filter_table, to_arrow_expression
from tests.support.paimon_helpers import commit_arrow


def truth(p, row):
    """True / False / None for one leaf or an AND / OR of leaves (plain Python)."""
    from paimon_fast.core.predicate import And, Or

    if isinstance(p, And):
        vs = [truth(c, row) for c in p.children]
        return False if False in vs else (None if None in vs else True)
    if isinstance(p, Or):
        vs = [truth(c, row) for c in p.children]
        return True if True in vs else (None if None in vs else False)
    v = row[p.name]
    if p.op in ("array_contains", "arrays_overlap", "array_contains_all"):
        if v is None:
            return None
        have = [e for e in v if e is not None]
        lits = p.literals
        if p.op == "array_contains":
            return None if lits[0] is None else lits[0] in have
        if p.op == "arrays_overlap":
            return any(l is not None and l in have for l in lits)
        return all(l is not None and l in have for l in lits)
    if v is None:
        return None
    return {"equal": lambda: v == p.literal, "greater_than": lambda: v > p.literal}[p.op]()


def oracle_ids(rows, p):
    return sorted(r["id"] for r in rows if truth(p, r) is True)


def make_table(n=300, seed=1, kind="int"):
    rng = np.random.default_rng(seed)
    arrays = []
    for i in range(n):
        if rng.random() < 0.1:
            arrays.append(None)
            continue
        k = int(rng.integers(0, 5))
        a = [int(x) for x in rng.integers(0, 20, k)]
        if k and rng.random() < 0.2:
            a.append(a[0])  # duplicates
        if rng.random() < 0.15:
            a.insert(int(rng.integers(0, len(a) + 1)), None)  # null elements
        arrays.append(a if kind == "int" else [None if x is None else f"t{x}" for x in a])
    et = pa.int32() if kind == "int" else pa.string()
    return pa.table({"id": pa.array(range(n), pa.int64()), "tags": pa.array(arrays, pa.list_(et))})


def predicates(kind="int"):
    conv = (lambda x: x) if kind == "int" else (lambda x: None if x is None else f"t{x}")
    f = pf.field("tags")
    out = []
    for lits in ([3], [99], [None], [3, 3], [1, 2, 3], [4, None], [99, 98], [], [None, None]):
        ls = [conv(x) for x in lits]
        out += [f.arrays_overlap(ls), f.array_contains_all(ls)]
        if len(ls) == 1:
            out.append(f.array_contains(ls[0]))
    out += [f.array_contains(conv(5)) & (pf.field("id") > 100), f.array_contains(conv(5)) | (pf.field("id") == 7)]
    return out


@pytest.mark.parametrize("kind", ["int", "string"])
def test_arrow_filter_against_oracle(kind):
    t = make_table(kind=kind)
    rows = t.to_pylist()
    for p in predicates(kind):
        got = filter_table(t, p).column("id").to_pylist()
        assert got == oracle_ids(rows, p), p
    # large lists and chunked columns give the same rows
    big = t.cast(pa.schema([("id", pa.int64()), ("tags", pa.large_list(t.schema.field("tags").type.value_type))]))
    big = pa.Table.from_batches(big.to_batches(max_chunksize=70))
    for p in predicates(kind)[:6]:
        assert filter_table(big, p).column("id").to_pylist() == oracle_ids(rows, p), p


def test_literals_of_another_type_are_refused():
    """A string against an ARRAY<INT> is a LiteralTypeError naming column, type and literal, as
    for a scalar INT column (issue 23's rule), not a silent empty answer."""
    from paimon_fast.errors import LiteralTypeError

    t = make_table()
    f = pf.field("tags")
    for p in (f.array_contains("x"), f.array_contains_all([3, "x"]), f.arrays_overlap([3, "x"])):
        with pytest.raises(LiteralTypeError, match="tags"):
            filter_table(t, p)


def test_array_predicates_need_a_list_column():
    t = make_table()
    with pytest.raises(TypeError, match="ARRAY"):
        to_arrow_expression(pf.field("id").array_contains(3), t.schema)
    with pytest.raises(TypeError):
        ~pf.field("tags").array_contains(3)


def test_sql_text():
    assert parse_predicate("array_contains(tags, 'a')") == Leaf("array_contains", "tags", ("a",))
    assert parse_predicate("ARRAYS_OVERLAP(tags, array(1, NULL))") == Leaf("arrays_overlap", "tags", (1, None))
    assert parse_predicate("array_contains_all(tags, array())") == Leaf("array_contains_all", "tags", ())
    assert parse_predicate('"array_contains" = 1') == Leaf("equal", "array_contains", (1,))
    t = make_table()
    rows = t.to_pylist()
    for text in (
        "array_contains(tags, 3)",
        "arrays_overlap(tags, array(1, 2)) AND id > 50",
        "array_contains_all(tags, array(1, 2)) OR array_contains(tags, NULL)",
    ):
        p = parse_predicate(text)
        assert filter_table(t, p).column("id").to_pylist() == oracle_ids(rows, p), text
    from paimon_fast.core.sqlpredicate import PredicateSyntaxError

    with pytest.raises(PredicateSyntaxError, match="array"):
        parse_predicate("arrays_overlap(tags, 3)")


def test_parquet_dataset(tmp_path):
    from paimon_fast.tables import ParquetDataset

    t = make_table(kind="string")
    pq.write_table(t.slice(0, 150), tmp_path / "a.parquet", row_group_size=50)
    pq.write_table(t.slice(150), tmp_path / "b.parquet", row_group_size=50)
    ds = ParquetDataset(str(tmp_path))
    ds.build({"file-index.bloom-filter.columns": "id"})
    rows = t.to_pylist()
    for p in predicates("string"):
        got, rep = ds.scan(p)
        assert sorted(got.column("id").to_pylist()) == oracle_ids(rows, p), p
        assert rep.index_errors == 0


def test_paimon_table(tmp_path):
    pytest.importorskip("pypaimon")
    from tests.support.paimon_helpers import catalog
    from pypaimon import Schema

    from paimon_fast.paimon import read_with_index

    t = make_table(kind="string")
    cat = catalog(tmp_path)
    cat.create_database("db", True)
    cat.create_table(
        "db.t",
        Schema.from_pyarrow_schema(t.schema, options={"bucket": "-1", "file-index.bloom-filter.columns": "id"}),
        False,
    )
    tb = cat.get_table("db.t")
    for a, b in ((0, 120), (120, 300)):
        commit_arrow(tb, t.slice(a, b - a))
    tb = cat.get_table("db.t")
    rows = t.to_pylist()
    for p in predicates("string"):
        for fast in (True, False):
            got, _ = read_with_index(tb, p, fast=fast)
            assert sorted(got.column("id").to_pylist()) == oracle_ids(rows, p), (p, fast)
    got, _ = read_with_index(tb, pf.field("tags").array_contains("t3"), projection=["id"])
    assert got.column_names == ["id"]


@pytest.mark.spark
def test_spark_columns(spark):
    pytest.importorskip("pyspark")
    from paimon_fast.spark.columns import to_spark_column

    t = make_table(n=120, kind="string")
    rows = t.to_pylist()
    from tests.support.spark_support import kept_in_one_job

    df = spark.createDataFrame([(r["id"], r["tags"]) for r in rows], "id long, tags array<string>")
    preds = predicates("string")
    got = kept_in_one_job(df, "id", [to_spark_column(p) for p in preds])  # one Spark job
    for p, ids in zip(preds, got):
        assert ids == oracle_ids(rows, p), p


@pytest.mark.parametrize(
    "make",
    [
        lambda f: f.array_contains(5.5),
        lambda f: f.array_contains(5.0),
        lambda f: f.array_contains(2**40),
        lambda f: f.array_contains(-(2**31) - 1),
        lambda f: f.arrays_overlap([5.5, 7]),
        lambda f: f.arrays_overlap([5.5]),
        lambda f: f.arrays_overlap([2**40, 6.0]),
        lambda f: f.array_contains_all([5, 6.5]),
        lambda f: f.array_contains_all([5.0, 6]),
    ],
)
def test_literals_no_element_can_equal(make):
    """A literal no INT element can equal (5.5, 2**40) matches no element, in the index and the
    exact filter alike (it used to be truncated to 5): compared numerically, as SQL does."""
    import numpy as np

    from paimon_fast import globalindex as gi
    from paimon_fast.read.arrow_filter import filter_table

    rows = [[5, 6], [7], None, [5], [], [6, None]]
    arr = pa.array(rows, pa.list_(pa.int32()))
    p = make(pf.field("t"))
    lits = p.literals

    def has(r, v):
        return r is not None and any(e is not None and e == v for e in r)

    def truth(r):
        if r is None:
            return False
        if p.op == "array_contains":
            return has(r, lits[0])
        if p.op == "arrays_overlap":
            return any(has(r, v) for v in lits)
        return all(has(r, v) for v in lits)

    want = [i for i, r in enumerate(rows) if truth(r)]
    got = filter_table(pa.table({"t": arr, "i": pa.array(range(len(rows)))}), p).column("i").to_pylist()
    assert got == want
    w = gi.writer("ARRAY<INT>", {}, index_type="multivalue")
    w.write_batch(arr, np.arange(len(rows), dtype=np.uint64))
    data, _ = w.finish()
    r = gi.reader("ARRAY<INT>", data, {}, total_row_count=len(rows), index_type="multivalue")
    assert list(r.visit(p)) == want
