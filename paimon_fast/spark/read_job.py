"""Reads of a Parquet dataset on Spark, pruned by its indexes: :func:`read`, the planned frame it
(and :func:`paimon_fast.spark.delete`) starts from, and :func:`top_n`.

The driver plans (which files, which rows: :meth:`ParquetDataset.plan`), then reads in one of
two ways (:mod:`paimon_fast.spark.frames`):

* **on the driver**, when the rows the plan selects are few (estimated bytes of the needed
  columns at those rows at most ``paimon-fast.read.driver-max-bytes``, 32 MB by default): when
  Spark first needs the rows, every kept file is read here with
  :meth:`ParquetDataset.read_kept` (the predicate's columns at the selected rows, then the other
  columns only where it holds) and handed to Spark as a local relation, so ``collect()`` runs no
  Spark job, and ``count()`` reads only the predicate's columns;
* **on the executors** otherwise: files an index answered with rows (or with a deletion vector)
  are read by the same :meth:`~ParquetDataset.read_kept` in ``mapInArrow`` tasks, so only the
  selected rows of the projected and predicate columns cross from Python into the JVM; files kept
  whole are read by Spark's own Parquet reader with its push-down (local datasets; on object
  stores the executors read them with pyarrow, no Hadoop connector needed).

The report (:class:`ReadReport`) says which way ran and why.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import List, Optional

from ..tables.parquet import FilePlan, ParquetDataset, ScanPlan, ScanReport, local_path  # noqa: F401  (local_path handed on)
from .columns import to_spark_column
from .frames import arrow_rows, arrow_schema, driver_max_bytes, lazy, local_frame, planned, task_frame, task_numbers

DRIVER, EXECUTORS, NOTHING = "driver", "executors", "nothing to read"


@dataclass
class ReadReport(ScanReport):
    """:class:`ScanReport` of one :func:`read` and where its rows were read (``str()`` gives a
    one-line summary).

    ``read_on``: ``"driver"`` (a local relation), ``"executors"`` or ``"nothing to read"``;
    ``why``: the reason; ``estimated_bytes``: what reading the kept rows' needed columns was
    estimated to hold; ``driver_max_bytes``: the threshold it was compared with;
    ``files_at_rows``: files read at their selected rows only (page-level reads);
    ``files_whole``: files read whole (Spark's reader on the executors, or pyarrow)."""

    read_on: str = ""
    why: str = ""
    estimated_bytes: int = 0
    driver_max_bytes: int = 0
    files_at_rows: int = 0
    files_whole: int = 0

    def __str__(self):
        return (
            super().__str__() + f"; read on the {self.read_on}"
            if self.read_on in (DRIVER, EXECUTORS)
            else super().__str__() + f"; {self.read_on or 'not read'}"
        ) + (f" ({self.why})" if self.why else "")


_SCHEMAS: dict = {}


def spark_schema(spark, ds: ParquetDataset):
    """The dataset's Spark schema as Spark infers it (data columns, then partition columns);
    cached while the dataset's files are the same versions."""
    key = (id(spark), ds.uri, tuple((f.path, f.identity or (f.size, f.mtime_ns)) for f in ds.files()))
    s = _SCHEMAS.get(key)
    if s is None and not ds.store.local:
        from .remote import spark_schema as remote_schema

        s = _SCHEMAS[key] = remote_schema(ds)
    if s is None:
        # the glob keeps the old layout's <file>.parquet.index files out (the _file_index/ layout needs none)
        s = spark.read.option("pathGlobFilter", "*.parquet").parquet(ds.root).schema
        if len(_SCHEMAS) > 64:
            _SCHEMAS.clear()
        _SCHEMAS[key] = s
    return s


def _mb(n: int) -> str:
    return f"{n / (1 << 20):.1f} MB"


def _struct(schema, names):
    from pyspark.sql.types import StructType

    by = {f.name: f for f in schema.fields}
    return StructType([by[n] for n in names])


def _read_on_driver(ds: ParquetDataset, plan: ScanPlan, columns: List[str], limit: int):
    """The plan's answer read here (by the native reader, several files a call on every thread),
    or None when the rows read pass ``limit`` bytes after all (the estimate was low, or left out
    what the predicate keeps of files kept whole): the caller reads on the executors instead.
    What is held never passes ``limit`` by more than one batch of files."""
    import pyarrow as pa

    schema = ds.schema()
    held, parts = 0, []
    for batch in _driver_batches(plan.kept):
        t, _ = ds.read_kept_many([(p, None) for p in batch], columns, plan.predicate, schema)
        held += t.nbytes
        if held > limit:
            return None  # given up: the tables read so far go with the frame
        parts.append(t)
    return pa.concat_tables(parts) if parts else schema.empty_table().select(columns)


def _driver_batches(kept, rows: int = 1 << 18):
    """The kept files in order, in lists of about ``rows`` selected rows (at least one file)."""
    batch, n = [], 0
    for p in kept:
        batch.append(p)
        n += p.rows_to_read
        if n >= rows:
            yield batch
            batch, n = [], 0
    if batch:
        yield batch


def planned_read(
    spark,
    ds: ParquetDataset,
    plan: ScanPlan,
    columns: Optional[List[str]] = None,
    *,
    use_index: bool = True,
    max_bytes=None,
):
    """The DataFrame of ``plan``'s answer (the kept rows where its predicate holds) with
    ``columns`` (default: every column), read on the driver or on the executors (see the module
    docstring); ``max_bytes`` overrides ``paimon-fast.read.driver-max-bytes``.  Carries
    ``report`` (a :class:`ReadReport`)."""
    from ..errors import ColumnNotFoundError

    sschema = spark_schema(spark, ds)
    names = [f.name for f in sschema.fields]
    columns = list(names if columns is None else columns)
    for c in columns:
        if c not in names:
            raise ColumnNotFoundError(c, names)
    if len(set(columns)) < len(columns):  # a column asked for twice: read once, then as Spark selects
        once = planned_read(spark, ds, plan, list(dict.fromkeys(columns)), use_index=use_index, max_bytes=max_bytes)
        df = once.select(*[once[c] for c in columns])
        df.report = once.report
        return df
    out = _struct(sschema, columns)
    rep = ReadReport(**plan.report.__dict__)
    limit = driver_max_bytes(spark, max_bytes)
    rep.driver_max_bytes = limit
    kept = plan.kept
    if not kept:
        rep.read_on, rep.why = NOTHING, "the indexes skipped every file"
        return lazy(
            spark, out, lambda: local_frame(spark, ds.schema().empty_table().select(columns), out), rep, lambda: 0
        )
    if use_index and limit > 0:
        rep.estimated_bytes = est = ds.read_cost(plan, columns)
        if est <= limit:
            rep.read_on = DRIVER
            rep.why = f"the selected rows' columns are about {_mb(est)}, at most {_mb(limit)}"
            rep.files_at_rows = sum(p.bitmap is not None or p.deletion_vector is not None for p in kept)
            rep.files_whole = len(kept) - rep.files_at_rows

            held = []  # the rows read here, kept for the frame's next use (at most the threshold)
            lock = threading.Lock()

            def table():
                with lock:
                    if not held:
                        held.append(_read_on_driver(ds, plan, columns, limit))
                    return held[0]

            def count():
                return held[0].num_rows if held and held[0] is not None else _count_on_driver(ds, plan)

            def materialize():
                t = table()
                if t is not None:
                    return local_frame(spark, t, out)
                rep.read_on = EXECUTORS
                rep.why = f"the rows read on the driver passed {_mb(limit)} (estimated {_mb(est)})"
                return _executor_frame(spark, ds, plan, columns, sschema, rep)[0]

            def rows():
                t = table()
                return None if t is None else arrow_rows(t, out)

            return lazy(spark, out, materialize, rep, count, rows)
        rep.why = f"the selected rows' columns are about {_mb(est)}, more than {_mb(limit)}"
    elif not use_index:
        rep.why = "use_index=False: every file is read"
    else:
        rep.why = "driver-local reads are off (paimon-fast.read.driver-max-bytes = 0)"
    rep.read_on = EXECUTORS
    df, count = _executor_frame(spark, ds, plan, columns, sschema, rep)
    return planned(df, rep, count)


def _count_on_driver(ds: ParquetDataset, plan: ScanPlan) -> int:
    """Rows of the plan's answer, reading only the predicate's columns at the selected rows (none
    without a predicate, or where the plan is exact: it knows how many rows each such file
    selects)."""
    if plan.predicate is None:
        return sum(p.rows_to_read for p in plan.kept)
    schema = ds.schema()
    exact = sum(p.rows_to_read for p in plan.kept if p.exact)
    todo = [p for p in plan.kept if not p.exact]
    n = 0
    for batch in _driver_batches(todo):
        t, _ = ds.read_kept_many([(p, None) for p in batch], [], plan.predicate, schema)
        n += t.num_rows
    return exact + n


# On the executors a file an index answered with rows is read by Spark's reader anyway (the
# predicate re-applied, the bitmap only an optimisation) when the rows are more than this share of
# it: rows spread over so much of a file touch nearly every page, and Spark's vectorised reader
# with its push-down reads whole files faster than Python tasks read most of their rows.
WHOLE_SHARE = 0.25


def ship(p: FilePlan) -> tuple:
    """What an executor needs of a kept file's plan: its file, rows, row bitmap and deletion
    vector as bytes (a plan's results may hold open index readers; bytes travel anywhere)."""
    return (
        p.file,
        p.rows,
        None if p.bitmap is None else p.bitmap.serialize(),
        None if p.deletion_vector is None else p.deletion_vector.serialize(),
        p.exact,
    )


def unship(t: tuple) -> FilePlan:
    """The :class:`FilePlan` :func:`ship` sent."""
    from pyroaring import BitMap

    from ..core.result import REMAIN, BitmapResult
    from ..tableindex import DeletionVector

    f, rows, bm, dv, exact = t
    res = REMAIN if bm is None else BitmapResult(BitMap.deserialize(bm))
    return FilePlan(
        f, res, rows, True, deletion_vector=None if dv is None else DeletionVector.deserialize(dv), exact=exact
    )


def split_kept(ds: ParquetDataset, plan: ScanPlan):
    """``(whole, at_rows)``: the kept files Spark's own reader reads on the executors (local
    datasets; no deletion vector; no row bitmap or one selecting more than :data:`WHOLE_SHARE`
    of the file) and those the page-level reader reads at their selected rows in Arrow tasks."""
    whole, at_rows = [], []
    for p in plan.kept:
        spark_reads = (
            ds.store.local and p.deletion_vector is None and (p.bitmap is None or p.rows_to_read > WHOLE_SHARE * p.rows)
        )
        (whole if spark_reads else at_rows).append(p)
    return whole, at_rows


def _executor_frame(spark, ds: ParquetDataset, plan: ScanPlan, columns: List[str], sschema, rep: ReadReport):
    """``(DataFrame, count function)`` of the plan's answer read on the executors."""
    from pyspark.sql import functions as F

    pred = plan.predicate
    out = _struct(sschema, columns)
    whole, tasks = split_kept(ds, plan)
    rep.files_whole, rep.files_at_rows = len(whole), len(tasks)
    where = to_spark_column(pred, ds.schema()) if pred is not None else None
    spark_whole = None
    if whole:
        reader = spark.read.schema(sschema).option("basePath", ds.root)
        spark_whole = reader.parquet(*[p.file.abs_path for p in whole])
        if where is not None:
            spark_whole = spark_whole.where(where)
    arrow_out = arrow_schema(out)
    schema = ds.schema()
    shipped = [ship(p) for p in tasks]

    def run(batches):
        for i in task_numbers(batches):
            t = ds.read_kept(unship(shipped[i]), columns, pred, schema)
            if t.num_rows:
                yield from t.cast(arrow_out).to_batches(max_chunksize=1 << 16)

    parts = []
    if spark_whole is not None:
        parts.append(spark_whole.select(*[F.col(f"`{c}`") for c in columns]))
    if tasks:
        parts.append(task_frame(spark, len(tasks), run, out))
    df = parts[0]
    for p in parts[1:]:
        df = df.unionByName(p)

    # files planned exactly are counted without a read; the others read their predicate's columns
    exact_rows = sum(p.rows_to_read for p in plan.kept if p.exact)
    count_whole = [p.file.abs_path for p in whole if not p.exact]
    count_tasks = [s for s, p in zip(shipped, tasks) if not p.exact]

    def run_count(batches):
        import pyarrow as pa

        for i in task_numbers(batches):
            n = ds.read_kept(unship(count_tasks[i]), [], pred, schema).num_rows
            yield pa.RecordBatch.from_pydict({"__pf_n": [n]}, schema=pa.schema([("__pf_n", pa.int64())]))

    def count() -> int:
        counts = []
        if count_whole:
            d = spark.read.schema(sschema).option("basePath", ds.root).parquet(*count_whole)
            counts.append((d.where(where) if where is not None else d).select(F.lit(1).cast("long").alias("__pf_n")))
        if count_tasks:
            counts.append(task_frame(spark, len(count_tasks), run_count, "__pf_n long"))
        if not counts:
            return exact_rows
        c = counts[0]
        for x in counts[1:]:
            c = c.unionByName(x)
        return exact_rows + int(c.agg(F.sum("__pf_n")).collect()[0][0] or 0)

    return df, count


def top_n(spark, path: str, column: str, k: int, **kw):
    """Exact top-N of a dataset, per-file work on executors: see :func:`paimon_fast.spark.topn.top_n`."""
    from .topn import top_n as _impl

    return _impl(spark, path, column, k, **kw)


def read(spark, path: str, where=None, columns=None, use_index: bool = True, filesystem=None, driver_max_bytes=None):
    """Rows of the dataset at ``path`` where ``where`` holds, pruned by the file indexes.

    ``where`` is a predicate object or SQL-like text (``"country = 'DE' AND
    (score > 90 OR id IN (1, 2))"``); ``columns`` the columns to return (default: all, data
    columns then partition columns, as Spark reads them).  The DataFrame's answer equals a plain
    Spark scan with the same filter.  Few selected rows are read on the driver and handed to
    Spark as a local relation (``driver_max_bytes``, default the Spark conf
    ``paimon-fast.read.driver-max-bytes`` or 32 MB; 0: never), more on the executors, each kept
    file at only its selected rows where an index answered with rows; its ``report`` attribute
    (:class:`ReadReport`) says files total / skipped, rows skipped by whole files and by row
    bitmaps, the index evaluation time, and where the rows were read and why.
    ``use_index=False`` reads every file on the executors (the baseline).  Rows deleted with
    :func:`delete` never come back (the dataset's deletion vectors apply with or without the
    index).
    """
    from ..core.sqlpredicate import parse_predicate

    ds = ParquetDataset(path, filesystem).snapshot()  # one listing and catalog version for the whole read
    pred = None if where is None else parse_predicate(where)
    plan = ds.plan(pred if use_index else None)
    if pred is not None and not use_index:
        plan.predicate = pred  # every row of every file is read and filtered: no plan is exact
        for p in plan.files:
            p.exact = False
    return planned_read(spark, ds, plan, columns, use_index=use_index, max_bytes=driver_max_bytes)
