"""Predicates as Spark Columns, and Spark's pushed-down filters as predicates."""
from __future__ import annotations

from typing import Optional

from ..predicate import And, Leaf, Or, Predicate


def _col(name: str):
    from pyspark.sql import functions as F

    return F.col("`" + name.replace("`", "``") + "`")


def to_spark_column(predicate: Predicate, schema=None):
    """A Spark Column that is true exactly where ``predicate`` is (SQL three-valued logic).

    ``schema`` (a pyarrow Schema or ``{column: Arrow or Paimon type}``) first
    normalises the literals to the column types (:func:`paimon_fast.literals.normalize`:
    ``x < 5.5`` on INT is ``x <= 5``, ``x < 2**70`` on BIGINT every non-null row, a
    string against a number a clear error), as every other consumer does.
    """
    from pyspark.sql import functions as F

    if schema is not None:
        from ..literals import normalize

        predicate = normalize(predicate, schema, missing="error")

    if isinstance(predicate, And):
        c = to_spark_column(predicate.children[0])
        for ch in predicate.children[1:]:
            c = c & to_spark_column(ch)
        return c
    if isinstance(predicate, Or):
        c = to_spark_column(predicate.children[0])
        for ch in predicate.children[1:]:
            c = c | to_spark_column(ch)
        return c
    if not isinstance(predicate, Leaf):
        raise TypeError(f"not a predicate: {predicate!r}")
    c = _col(predicate.name)
    op, lits = predicate.op, predicate.literals
    if op == "is_null":
        return c.isNull()
    if op == "is_not_null":
        return c.isNotNull()
    if op == "in":
        return c.isin(list(lits))
    if op == "not_in":
        return ~c.isin(list(lits))
    if op == "between":
        return (c >= F.lit(lits[0])) & (c <= F.lit(lits[1]))
    if op == "not_between":
        return (c < F.lit(lits[0])) | (c > F.lit(lits[1]))
    if op == "starts_with":
        return c.startswith(lits[0])
    if op == "ends_with":
        return c.endswith(lits[0])
    if op == "contains":
        return c.contains(lits[0])
    if op == "like":
        return c.like(lits[0])
    if op == "array_contains":
        # a NULL literal: Spark's array_contains is NULL, i.e. no row
        return F.lit(None).cast("boolean") if lits[0] is None else F.array_contains(c, F.lit(lits[0]))
    if op == "arrays_overlap":
        vals = [v for v in lits if v is not None]
        if not vals:
            return F.lit(False)
        return F.arrays_overlap(c, F.array(*[F.lit(v) for v in vals]))
    if op == "array_contains_all":
        if any(v is None for v in lits):
            return F.lit(False)
        if not lits:
            return c.isNotNull()
        out = F.array_contains(c, F.lit(lits[0]))
        for v in lits[1:]:
            out = out & F.array_contains(c, F.lit(v))
        return out
    v = F.lit(lits[0])
    return {
        "equal": lambda: c == v,
        "not_equal": lambda: c != v,
        "less_than": lambda: c < v,
        "less_or_equal": lambda: c <= v,
        "greater_than": lambda: c > v,
        "greater_or_equal": lambda: c >= v,
    }[op]()


def filter_to_predicate(f) -> Optional[Predicate]:
    """One of Spark's pushed Data Source filters (``pyspark.sql.datasource``) as a
    predicate, or None when it has no equivalent (nested columns, ``<=>``...)."""
    from pyspark.sql import datasource as ds

    attr = getattr(f, "attribute", None)
    if attr is None or len(attr) != 1:
        return None
    name = attr[0]
    if isinstance(f, ds.EqualTo):
        return None if f.value is None else Leaf("equal", name, (f.value,))
    if isinstance(f, ds.GreaterThan):
        return Leaf("greater_than", name, (f.value,))
    if isinstance(f, ds.GreaterThanOrEqual):
        return Leaf("greater_or_equal", name, (f.value,))
    if isinstance(f, ds.LessThan):
        return Leaf("less_than", name, (f.value,))
    if isinstance(f, ds.LessThanOrEqual):
        return Leaf("less_or_equal", name, (f.value,))
    if isinstance(f, ds.In):
        return Leaf("in", name, tuple(f.value))
    if isinstance(f, ds.IsNull):
        return Leaf("is_null", name)
    if isinstance(f, ds.IsNotNull):
        return Leaf("is_not_null", name)
    if isinstance(f, ds.StringStartsWith):
        return Leaf("starts_with", name, (f.value,))
    if isinstance(f, ds.StringEndsWith):
        return Leaf("ends_with", name, (f.value,))
    if isinstance(f, ds.StringContains):
        return Leaf("contains", name, (f.value,))
    if isinstance(f, ds.Not):
        inner = filter_to_predicate(f.child)
        if isinstance(inner, Leaf) and inner.op in ("equal", "in"):
            return inner.negate()
        return None
    return None
