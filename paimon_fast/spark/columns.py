"""Predicates as Spark Columns, and Spark's pushed-down filters as predicates."""

from __future__ import annotations

from typing import Optional

import pyarrow as pa

from ..core.predicate import Leaf, Predicate
from ..core.translate import COMPARISONS, Translator


def _col(name: str):
    from pyspark.sql import functions as F

    return F.col("`" + name.replace("`", "``") + "`")


class SparkTranslator(Translator):
    """Predicates as Spark Columns (SQL's three-valued logic).

    Spark orders NaN above every number, so on its own ``x > 1`` holds for a NaN ``x``; every
    other paimon-fast path compares as IEEE (``pyarrow.compute``: NaN compares false). With the
    column types known, ``>`` and ``>=`` on FLOAT / DOUBLE columns exclude NaN rows, which makes
    the answers the IEEE ones (Spark's ``<``, ``<=``, ``=``, ``!=`` and ``IN`` already agree;
    ``NOT BETWEEN`` is a negation, so a NaN is NOT BETWEEN any bounds; NaN literals are rewritten
    by :func:`paimon_fast.core.literals.normalize` beforehand)."""

    def __init__(self, types=None):
        self.types = dict(types or {})

    def compare(self, op, p, value):
        from pyspark.sql import functions as F

        c = _col(p.name)
        out = COMPARISONS[op](c, F.lit(value))
        if op in ("greater_than", "greater_or_equal") and _is_floating(self.types.get(p.name)):
            out = out & ~F.isnan(c)
        return out

    def is_null(self, p):
        return _col(p.name).isNull()

    def is_not_null(self, p):
        return _col(p.name).isNotNull()

    def isin(self, p, values):
        return _col(p.name).isin(list(values))

    def never(self, p):
        from pyspark.sql import functions as F

        return F.lit(False)

    def unknown(self, p):
        from pyspark.sql import functions as F

        return F.lit(None).cast("boolean")

    def op_starts_with(self, p):
        return _col(p.name).startswith(p.literal)

    def op_ends_with(self, p):
        return _col(p.name).endswith(p.literal)

    def op_contains(self, p):
        return _col(p.name).contains(p.literal)

    def op_like(self, p):
        return _col(p.name).like(p.literal)

    def op_array_contains(self, p):
        from pyspark.sql import functions as F

        # a NULL literal: Spark's array_contains is NULL, i.e. no row
        return self.never(p) if p.literal is None else F.array_contains(_col(p.name), F.lit(p.literal))

    def op_arrays_overlap(self, p):
        from pyspark.sql import functions as F

        vals = [v for v in p.literals if v is not None]
        if not vals:
            return self.never(p)
        return F.arrays_overlap(_col(p.name), F.array(*[F.lit(v) for v in vals]))

    def op_array_contains_all(self, p):
        from pyspark.sql import functions as F

        if any(v is None for v in p.literals):
            return self.never(p)
        if not p.literals:
            return self.is_not_null(p)
        return self.all_of([F.array_contains(_col(p.name), F.lit(v)) for v in p.literals])


def to_spark_column(predicate: Predicate, schema=None):
    """A Spark Column that is true exactly where ``predicate`` is (SQL three-valued logic).

    ``schema`` (a pyarrow Schema or ``{column: Arrow or Paimon type}``) first
    makes NaN compare as IEEE (see :class:`SparkTranslator`) and binds the predicate
    (:func:`paimon_fast.core.bind.bind`, nothing to do for one bound to the same types:
    ``x < 5.5`` on INT is ``x <= 5``, ``x < 2**70`` on BIGINT every non-null row, a
    string against a number a clear error), as every other back end does.
    """
    types = {}
    if schema is not None:
        from ..core.bind import bind

        predicate = bind(predicate, schema)
        types = {f.name: f.type for f in schema} if isinstance(schema, pa.Schema) else dict(schema)
    return SparkTranslator(types).translate(predicate)


def _is_floating(t) -> bool:
    if t is None:
        return False
    if isinstance(t, str):
        return t.strip().upper().split("(")[0] in ("FLOAT", "DOUBLE", "REAL")
    return pa.types.is_floating(t)


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
