"""How a planned answer becomes a Spark DataFrame: read on the driver and handed to Spark as a
local relation, or read on the executors, one task per group of files.

A plan that selects few rows (an index answered with exact rows, or pruned to a file or two) is
cheaper to read in this process than to schedule: a Spark job costs 0.1-0.2 s before it reads a
byte, while the page-level reader (:mod:`paimon_fast.io.parquet`) reads a few thousand rows in a few
milliseconds.  :func:`driver_max_bytes` says how much a driver-local read may hold (the option
``paimon-fast.read.driver-max-bytes``, default 32 MB); :func:`local_frame` turns the Arrow table
into a DataFrame without a job and without pandas (Spark keeps Arrow input up to
``spark.sql.execution.arrow.localRelationThreshold``, 48 MB by default, as a local relation,
which ``collect()`` returns without a job).

:func:`planned` marks a DataFrame with its read report and the cheapest way to count it, and
:func:`lazy` makes one whose rows are read only when Spark first needs them: ``count()`` of either
reads only the predicate's columns at the selected rows (the ``mapInArrow`` reads cannot learn
which columns a query needs, and a local relation would hold every column).  Every other operation
is Spark's own (the first one reads the rows of a lazy frame and builds its relation); a DataFrame
derived from it (``df.where(...)``, ``df.select(...)``) counts as any other.
"""

from __future__ import annotations

from typing import Callable, Optional

from ..fileindex.options import parse_memory_size
from .env import arrow_only

DRIVER_MAX_BYTES = "paimon-fast.read.driver-max-bytes"
DEFAULT_DRIVER_MAX_BYTES = 32 << 20


def driver_max_bytes(spark, value=None) -> int:
    """The most a driver-local read may hold, in bytes: ``value`` when given (an int or a size such
    as ``"64mb"``; 0 turns driver-local reads off), else the Spark conf
    ``paimon-fast.read.driver-max-bytes`` (also ``spark.paimon-fast.read.driver-max-bytes``),
    else 32 MB."""
    if value is None and spark is not None:
        for key in (DRIVER_MAX_BYTES, "spark." + DRIVER_MAX_BYTES):
            value = spark.conf.get(key, None)
            if value is not None:
                break
    if value is None:
        return DEFAULT_DRIVER_MAX_BYTES
    if isinstance(value, bool):
        raise ValueError(f"{DRIVER_MAX_BYTES} is a size in bytes (e.g. 32mb), got {value!r}")
    try:
        n = int(value) if isinstance(value, int) else parse_memory_size(str(value))
    except (TypeError, ValueError) as e:
        raise ValueError(f"{DRIVER_MAX_BYTES} is a size in bytes (e.g. 32mb), got {value!r}") from e
    if n < 0:
        raise ValueError(f"{DRIVER_MAX_BYTES} must not be negative, got {value!r}")
    return n


def arrow_schema(schema):
    """The Arrow schema of a Spark ``schema`` as Spark's Arrow paths exchange it (timestamps with a
    time zone in UTC)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    try:
        return to_arrow_schema(schema, timezone="UTC")
    except TypeError:  # pragma: no cover - a pyspark whose to_arrow_schema takes no time zone
        return to_arrow_schema(schema)


def local_frame(spark, table, schema):
    """``table`` (a ``pyarrow.Table``) as a DataFrame of the Spark ``schema``: sent to the JVM as
    Arrow batches (no pandas), a local relation when it is under Spark's Arrow local-relation
    threshold."""
    import pyarrow as pa

    table = table.select([f.name for f in schema.fields])
    # pyspark (4.3) drops every row after an empty record batch: send only batches with rows
    batches = [b for b in table.to_batches() if b.num_rows]
    if len(batches) != len(table.to_batches()):
        table = pa.Table.from_batches(batches, schema=table.schema)
    with arrow_only():
        return spark.createDataFrame(table, schema=schema)


def task_frame(spark, n_tasks: int, run: Callable, schema, parallelism: Optional[int] = None):
    """``mapInArrow(run)`` over ``spark.range(n_tasks)``: ``run`` receives batches of task numbers
    (one column) and yields Arrow record batches of ``schema``.  ``parallelism``: Spark tasks
    (default: one per task number, at most twice the default parallelism)."""
    sc = spark.sparkContext
    parts = max(1, min(n_tasks, parallelism or max(1, sc.defaultParallelism) * 2))
    with arrow_only():
        return spark.range(0, n_tasks, 1, parts).mapInArrow(run, schema)


def task_numbers(batches):
    """The task numbers in the batches :func:`task_frame`'s function receives."""
    for b in batches:
        yield from b.column(0).to_numpy(zero_copy_only=False).tolist()


_CLASSES: dict = {}


def _planned_class(base):
    cls = _CLASSES.get(base)
    if cls is None:

        def count(self) -> int:
            """The number of rows (a driver-local answer: the rows held; an executor read: only
            the predicate's columns read at the selected rows)."""
            counter = self.__dict__.get("_pf_count")
            return counter() if counter is not None else base.count(self)

        def collect(self):
            """The rows as Spark's collect() gives them, fetched as Arrow batches (``toArrow()``) and
            made Python rows in bulk (:func:`arrow_rows`) when every column is of a flat type; else
            Spark's collect(), which pickles row by row."""
            if flat_schema(self.schema):
                rows = arrow_rows(base.toArrow(self), self.schema)
                if rows is not None:
                    return rows
            return base.collect(self)

        cls = _CLASSES[base] = type(
            "Planned" + base.__name__,
            (base,),
            {
                "count": count,
                "collect": collect,
                "__module__": __name__,
                "__doc__": "A DataFrame of a pruned read: Spark's own, with ``report`` (what the plan did), "
                "a ``count()`` that reads no more than the predicate needs and a ``collect()`` "
                "that fetches Arrow.",
            },
        )
    return cls


def _lazy_class(base):
    key = ("lazy", base)
    cls = _CLASSES.get(key)
    if cls is None:
        planned_base = _planned_class(base)

        def get_jdf(self):
            d = self.__dict__
            jdf = d.get("_pf_jdf")
            if jdf is None:
                with d["_pf_lock"]:
                    jdf = d.get("_pf_jdf")
                    if jdf is None:
                        jdf = d["_pf_jdf"] = d["_pf_materialize"]()._jdf
            return jdf

        def set_jdf(self, value):
            self.__dict__["_pf_jdf"] = value

        def collect(self):
            """The rows, built here from the Arrow rows read on the driver as Spark's own collect()
            builds them (``schema.fromInternal`` of each row's internal values) when the relation
            has not been built yet and every column is of a flat type; else Spark's collect()."""
            d = self.__dict__
            rows = d.get("_pf_rows")
            if rows is not None and d.get("_pf_jdf") is None:
                got = rows()
                if got is not None:
                    return got
            return planned_base.collect(self)

        cls = _CLASSES[key] = type(
            "Lazy" + base.__name__,
            (planned_base,),
            {
                "_jdf": property(get_jdf, set_jdf),
                "collect": collect,
                "__module__": __name__,
                "__doc__": "A DataFrame of a pruned read whose rows are read when Spark first needs them.",
            },
        )
    return cls


def flat_schema(schema) -> bool:
    """Are all of a Spark schema's columns of the flat types :func:`arrow_rows` builds?"""
    from pyspark.sql import types as T

    flat = (
        T.BooleanType,
        T.ByteType,
        T.ShortType,
        T.IntegerType,
        T.LongType,
        T.FloatType,
        T.DoubleType,
        T.StringType,
        T.DateType,
        T.TimestampType,
        T.TimestampNTZType,
        T.DecimalType,
    )
    return all(type(f.dataType) in flat for f in schema.fields)


def arrow_rows(table, schema):
    """``table``'s rows as the ``Row`` objects Spark's ``collect()`` returns for the Spark
    ``schema``, or None when a column is of a type this does not build (binary, nested,
    intervals...) or does not cast: Spark then collects.

    Spark's JVM pickles each row's internal values (dates as days, timestamps as microseconds)
    and Python makes ``schema.fromInternal(values)`` of them, a ``Row`` with the schema's field
    names; here each column becomes Python values in one step (numpy), the columns that need it
    are converted by their type's ``fromInternal``, and the rows are made as ``Row`` makes them
    (a tuple with ``__fields__``).  A 133,653-row answer of seven columns: 1.5 -> 0.6 s with its read."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyspark.sql import types as T

    if not flat_schema(schema):
        return None
    try:
        table = table.select([f.name for f in schema.fields]).cast(arrow_schema(schema))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None
    cols = []
    for f, col in zip(schema.fields, table.columns):
        t = f.dataType
        if isinstance(t, (T.TimestampType, T.TimestampNTZType)):
            col = col.cast(pa.timestamp("us", tz=col.type.tz)).cast(pa.int64())
        elif isinstance(t, T.DateType):
            col = col.cast(pa.int32())
        if col.null_count and (pa.types.is_integer(col.type) or pa.types.is_floating(col.type)):
            # numpy would make the nulls NaN (and the ints floats): fill them, then put None back
            values = pc.fill_null(col, pa.scalar(0, col.type)).to_numpy().tolist()
            for i in np.flatnonzero(col.is_null().to_numpy(zero_copy_only=False)).tolist():
                values[i] = None
        else:
            values = col.to_numpy(zero_copy_only=False).tolist()
        if t.needConversion():
            values = list(map(t.fromInternal, values))  # fromInternal(None) is None
        cols.append(values)
    names = schema.names
    row, new = T.Row, tuple.__new__
    out = []
    for values in zip(*cols) if cols else [()] * table.num_rows:
        r = new(row, values)
        r.__dict__["__fields__"] = names  # what Row.__setattr__ does for __fields__
        out.append(r)
    return out


def lazy(
    spark,
    schema,
    materialize: Callable[[], object],
    report,
    count: Callable[[], int],
    rows: Optional[Callable[[], Optional[list]]] = None,
):
    """A DataFrame of Spark ``schema`` whose plan is ``materialize()``'s DataFrame, built on first
    use (``where()``, ``show()``, ``toPandas()``...): ``schema``, ``report`` and ``count()`` need
    none of it, nor does ``collect()`` when ``rows()`` gives the rows (None: Spark collects).
    Falls back to building it at once where the session's DataFrame class does not take this
    (Spark Connect)."""
    import threading

    if not hasattr(spark, "_jsparkSession"):  # Spark Connect: no JVM plan to defer
        return planned(materialize(), report, count)
    from pyspark.sql.classic.dataframe import DataFrame

    cls = _lazy_class(DataFrame)
    df = cls.__new__(cls)
    df.__dict__.update(
        _pf_lock=threading.Lock(),
        _pf_materialize=materialize,
        _pf_count=count,
        _pf_rows=rows,
        schema=schema,
        report=report,
    )
    DataFrame.__init__(df, None, spark)
    return df


def planned(df, report, count: Optional[Callable[[], int]] = None):
    """``df`` with ``report`` as its ``report`` attribute and ``count`` (when given) answering
    ``df.count()``; returns ``df``."""
    try:
        df.__class__ = _planned_class(type(df))
        df._pf_count = count
    except TypeError:  # pragma: no cover - a DataFrame class whose instances cannot change class
        pass
    try:
        df.report = report
    except AttributeError:  # pragma: no cover - a DataFrame class that refuses attributes
        pass
    return df
