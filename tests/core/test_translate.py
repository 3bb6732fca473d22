"""The one predicate translator (``paimon_fast/core/translate.py``) and its back ends, checked against
the independent SQL oracle (``tests/support/sql_oracle.py``) on a table with nulls, NaN and -0.0: the exact
Arrow filter and Spark columns (given the schema, so NaN compares as IEEE there too);
pypaimon's predicates by structure."""

from __future__ import annotations

import pyarrow as pa
import pytest

import paimon_fast as pf
from paimon_fast.core.predicate import Leaf
from paimon_fast.read.arrow_filter import to_arrow_expression
from paimon_fast.core.translate import Translator
from tests.support.sql_oracle import matching_rows

X = [None, -3, 0, 1, 2, 5, 7, 7, 10, None, 4]
F = [0.5, float("nan"), -0.0, 0.0, None, 2.5, 1e300, -1.5, float("nan"), 3.0, 2.0]
S = ["apple", "banana", None, "apricot", "a_c", "a%c", "", "cherry", "abc", "Apple", "b"]
A = [["a", "b"], None, [], ["c", None], ["b"], ["a"], ["d", "a"], None, ["b", "c"], [None], ["e"]]


def _table(floats=F):
    return pa.table(
        {
            "x": pa.array(X, pa.int32()),
            "f": pa.array(floats, pa.float64()),
            "s": pa.array(S),
            "tags": pa.array(A, pa.list_(pa.string())),
        }
    )


def _predicates():
    x, f, s, tags = pf.field("x"), pf.field("f"), pf.field("s"), pf.field("tags")
    leaves = [
        x == 7,
        x != 7,
        x < 5,
        x <= 5,
        x > 5,
        x >= 5,
        x == None,
        x != None,
        x < None,  # noqa: E711
        x.isin([1, 7]),
        x.isin([1, None]),
        x.isin([None]),
        x.notin([1, 7]),
        x.notin([1, None]),
        x.notin([]),
        x.between(1, 7),
        x.between(None, 7),
        x.between(7, 1),
        x.not_between(1, 7),
        x.not_between(None, 5),
        x.not_between(5, None),
        x.not_between(None, None),
        x.is_null(),
        x.is_not_null(),
        f == 0.0,
        f != 0.0,
        f < 1.0,
        f >= 2.0,
        f.between(-1.0, 2.5),
        f.not_between(-1.0, 2.5),
        f.isin([0.0, 3.0]),
        f.notin([2.5]),
        f.is_null(),
        s == "apple",
        s != "apple",
        s < "b",
        s.startswith("ap"),
        s.endswith("c"),
        s.contains("an"),
        s.like("a_c"),
        s.like("a\\%c"),
        s.like("%an%"),
        s.like("A%"),
        s.isin(["b", "", None]),
        tags.array_contains("a"),
        tags.array_contains(None),
        tags.arrays_overlap(["a", "c"]),
        tags.arrays_overlap([None]),
        tags.array_contains_all(["a", "b"]),
        tags.array_contains_all([]),
        tags.array_contains_all(["a", None]),
        tags.is_null(),
    ]
    out = list(leaves)
    for i in range(0, len(leaves) - 1, 3):
        a, b = leaves[i], leaves[(i * 7 + 5) % len(leaves)]
        out += [a & b, a | b, (a | b) & (leaves[(i + 11) % len(leaves)] | x.is_null())]
    return out


PREDICATES = _predicates()


@pytest.mark.parametrize("pred", PREDICATES, ids=[repr(p)[:60] for p in PREDICATES])
def test_arrow_back_end_equals_oracle(pred):
    t = _table()
    expr = to_arrow_expression(pred, t.schema)
    got = t.append_column("__i", pa.array(range(t.num_rows))).filter(expr).column("__i").to_pylist()
    assert got == matching_rows(pred, t.to_pylist())


@pytest.mark.spark
def test_spark_back_end_equals_oracle(spark):
    from paimon_fast.spark.columns import to_spark_column
    from tests.support.spark_support import kept_in_one_job  # one Spark job for every predicate

    t = _table().append_column("__i", pa.array(range(len(X))))
    df = spark.createDataFrame(t)  # from Arrow: NaN stays NaN (through pandas it would become NULL)
    rows = t.to_pylist()
    got = kept_in_one_job(df, "__i", [to_spark_column(pred, t.schema) for pred in PREDICATES])
    for pred, ids in zip(PREDICATES, got):
        assert ids == matching_rows(pred, rows), pred


def test_pypaimon_back_end_keeps_the_tree():
    pytest.importorskip("pypaimon")
    from paimon_fast.paimon.predicates import from_pypaimon, to_pypaimon

    names = ["x", "f", "s", "tags"]
    for pred in PREDICATES:
        if any(leaf.op.startswith("array") for leaf in pred.leaves()):
            with pytest.raises(TypeError, match="pypaimon has no array"):
                to_pypaimon(pred, names)
            continue
        back = from_pypaimon(to_pypaimon(pred, names))
        assert repr(back) == repr(pred)
    with pytest.raises(ValueError, match="not in the table"):
        to_pypaimon(pf.field("nope") == 1, names)


def test_a_back_end_without_a_leaf_says_which():
    class OnlyComparisons(Translator):
        def compare(self, op, p, value):
            return (op, p.name, value)

        def all_of(self, exprs):
            return ("and", *exprs)

    assert OnlyComparisons().translate((pf.field("a") > 1) & (pf.field("b") == 2)) == (
        "and",
        ("greater_than", "a", 1),
        ("equal", "b", 2),
    )
    with pytest.raises(TypeError, match="cannot translate the like predicate"):
        OnlyComparisons().translate(Leaf("like", "a", ("x%",)))
