"""``optimize`` on Spark's executors, and the ``paimon-fast optimize`` command.

:func:`optimize` runs :func:`paimon_fast.tables.optimize.optimize` with its step 2 (read, order,
write) on Spark: the driver takes the snapshot and makes every commit as the in-process run does;
the executors

1. read the files to rewrite (``mapInArrow`` tasks over ``spark.range``, one file a task, the
   native Parquet reader, deletion vectors applied, each file checked to be the version listed),
   adding the partition's number and, for ``zorder`` / ``hilbert``, the key (Paimon's bytes, the
   kernels of :mod:`paimon_fast.tables.order`);
2. cluster them as Paimon's Spark sorters do: ``repartitionByRange`` then ``sortWithinPartitions``
   by the partition and the columns (``order``) or the key;
3. write each Spark partition's rows of each dataset partition as one new file (``mapInArrow``:
   the in-process run's per-file step, :func:`paimon_fast.tables.optimize.write_rows`: page index,
   row-capped pages, file index, statistics), staged under the run's directory; only the catalog
   entries travel back.

Types Spark cannot carry unchanged (unsigned integers, nanosecond timestamps, time of day) are
refused with a clear error: the in-process run takes them.  A local dataset path must be one every
executor sees at the same path; datasets on object stores are read and written through pyarrow's
filesystems as the other jobs do (:mod:`paimon_fast.spark.remote`).
"""

from __future__ import annotations

import json
import math
import sys
import time
from typing import Callable, Optional

from ..cli import command
from ..errors import UnsupportedTypeError

PART = "__pf_part"
KEY = "__pf_key"


def _check_spark_types(schema) -> None:
    import pyarrow as pa

    for f in schema:
        t = f.type
        bad = (
            pa.types.is_unsigned_integer(t)
            or (pa.types.is_timestamp(t) and t.unit == "ns")
            or pa.types.is_time(t)
            or pa.types.is_dictionary(t)
        )
        if bad:
            raise UnsupportedTypeError(
                f"column {f.name!r} of type {t} does not pass through Spark unchanged: optimize it in-process "
                "(ParquetDataset.optimize, or paimon-fast optimize without --spark)"
            )


def _rewrite_on_spark(spark, parallelism: Optional[int] = None):
    """The ``rewrite`` hook of :func:`paimon_fast.tables.optimize.optimize`: step 2 on Spark."""

    def rewrite(view, todo, plan):
        import pyarrow as pa

        from ..tables.optimize import _NewFile
        from .frames import arrow_schema, task_frame, task_numbers
        from .remote import spark_schema

        schema = plan["schema"]
        _check_spark_types(schema)
        parts = list(todo)
        files = [(pi, f) for pi, part in enumerate(parts) for f in todo[part]]
        names = schema.names
        by = plan["cluster_by"]
        strategy = plan["strategy"]
        counts, vectors = plan["counts"], plan["vectors"]
        store, root = view.store, view.root
        data_spark = spark_schema(view)
        from pyspark.sql.types import BinaryType, IntegerType, StructField, StructType

        fields = [f for f in data_spark.fields if f.name in names]
        read_schema = StructType(
            fields
            + [StructField(PART, IntegerType(), False)]
            + ([StructField(KEY, BinaryType())] if strategy != "order" else [])
        )
        read_arrow = arrow_schema(read_schema)
        shipped = {k: v for k, v in plan.items() if k not in ("progress", "phases", "vectors", "counts")}

        def read(batches):
            from ..parquet.native import read_files
            from ..result import REMAIN
            from ..tables.order import cluster_keys
            from ..tables.plan import FilePlan

            for i in task_numbers(batches):
                pi, f = files[i]
                p = FilePlan(f, REMAIN, counts[f.path], False, deletion_vector=vectors.get(f.path))
                t, _ = read_files([(view._input(f), view._kept_positions(p, None))], names, schema=schema)
                view._read_done(f)
                cols = [t.column(c) for c in names] + [pa.array([pi] * t.num_rows, pa.int32())]
                if strategy != "order":
                    words = cluster_keys(t, by, strategy)
                    be = words.T.astype(">u8").copy().view(f"S{8 * words.shape[0]}").ravel()
                    cols.append(pa.array(be.tolist() if t.num_rows else [], pa.binary()))
                out = pa.Table.from_arrays(cols, schema=read_arrow)
                for b in out.to_batches(max_chunksize=1 << 16):
                    yield b

        t0 = time.perf_counter()
        src_bytes = sum(f.size for _, f in files)
        n_out = max(1, math.ceil(src_bytes / max(1, plan["opts"].target_file_size)))
        df = task_frame(spark, len(files), read, read_schema, parallelism or len(files))
        order_cols = [PART, *(by if strategy == "order" else [KEY])]
        df = df.repartitionByRange(n_out, *order_cols).sortWithinPartitions(*order_cols)
        rels_dir = {pi: "/".join(todo[part][0].path.split("/")[:-1]) for pi, part in enumerate(parts)}
        out_schema = "rel string, staged string, rows long, size long, entry string"

        def write(batches):
            from pyspark import TaskContext

            from ..tables.optimize import write_rows

            task = TaskContext.get().partitionId()
            cur, held = None, []

            def flush(pi, held):
                t = pa.Table.from_batches(held).select(names).cast(schema)
                d = rels_dir[pi]
                rel = f"{d + '/' if d else ''}part-{shipped['oid']}-{task:05d}-{pi:04d}.parquet"
                nf = write_rows(store, root, rel, t, dict(shipped, gi_cols=[]))
                return pa.RecordBatch.from_pydict(
                    {
                        "rel": [nf.rel],
                        "staged": [nf.staged],
                        "rows": [nf.rows],
                        "size": [nf.size],
                        "entry": [json.dumps(nf.entry)],
                    }
                )

            for b in batches:
                if b.num_rows == 0:
                    continue
                pcol = b.column(b.schema.get_field_index(PART)).to_numpy()
                # a Spark partition holds one dataset partition's rows after another
                starts = [0] + [k for k in range(1, len(pcol)) if pcol[k] != pcol[k - 1]] + [len(pcol)]
                for a, z in zip(starts, starts[1:]):
                    pi = int(pcol[a])
                    if cur is not None and pi != cur:
                        yield flush(cur, held)
                        held = []
                    cur = pi
                    held.append(b.slice(a, z - a))
            if held:
                yield flush(cur, held)

        from .env import arrow_only

        with arrow_only():
            rows = df.mapInArrow(write, out_schema).collect()
        plan["phases"]["spark"] = time.perf_counter() - t0
        out = [_NewFile(r["rel"], r["staged"], r["rows"], r["size"], json.loads(r["entry"]), {}) for r in rows]
        return sorted(out, key=lambda n: n.rel)

    return rewrite


def optimize(
    spark,
    path: str,
    cluster_by,
    strategy: str = "order",
    *,
    filesystem=None,
    parallelism: Optional[int] = None,
    **options,
):
    """:meth:`ParquetDataset.optimize <paimon_fast.tables.ParquetDataset.optimize>` of the dataset at
    ``path`` with the rows read, ordered and written on Spark's executors (module docstring): the
    same options, the same commit and the same report (``report.phases["spark"]``: the Spark jobs'
    time).  ``parallelism``: the read job's tasks (default: one a file)."""
    from ..tables.parquet import FileIndexBuilder, ParquetDataset, ensure_index_types, store_index
    from ..tables.optimize import optimize as run

    ds = ParquetDataset(path, filesystem)
    tools = {"builder": FileIndexBuilder, "store_index": store_index, "ensure_types": ensure_index_types}
    return run(ds, cluster_by, strategy, index_tools=tools, rewrite=_rewrite_on_spark(spark, parallelism), **options)


# ---------------------------------------------------------------- the command


def _size(text: str) -> int:
    from ..fileindex.options import parse_memory_size

    return parse_memory_size(text)


def optimize_setup(p):
    p.add_argument("path", help="dataset directory or URI (s3://, gs://, abfs://, hdfs://, file://)")
    p.add_argument("--cluster-by", required=True, help="the columns to cluster by, comma-separated: a,b")
    p.add_argument("--strategy", default="order", choices=["order", "zorder", "hilbert"], help="default: order")
    p.add_argument("--full", action="store_true", help="rewrite files clustered this way already too")
    p.add_argument(
        "--target-file-size",
        type=_size,
        default=None,
        help="e.g. 64mb (default: the mean size of the files rewritten, within 8mb and 128mb)",
    )
    p.add_argument("--row-group-rows", type=int, default=None, help="rows a row group (default 1048576)")
    p.add_argument("--page-rows", type=int, default=None, help="rows a page at most (default 4096)")
    p.add_argument("--compression", default="snappy", choices=["snappy", "zstd"], help="default: snappy")
    p.add_argument("--spark", action="store_true", help="read, order and write on Spark (local[*] or --master)")
    p.add_argument("--master", default=None, help="Spark master for --spark (default local[*] or $SPARK_MASTER)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")


@command("optimize", "cluster a dataset's rows by columns (order, z-order, Hilbert), rewritten in one commit")
def optimize_main(args):
    by = [c.strip() for c in args.cluster_by.split(",") if c.strip()]
    opts = {
        k: v
        for k, v in {
            "target_file_size": args.target_file_size,
            "row_group_rows": args.row_group_rows,
            "page_rows": args.page_rows,
        }.items()
        if v is not None
    }
    progress = None if args.json else _progress()
    if args.spark:
        from .session import session

        rep = optimize(
            session(args.master), args.path, by, args.strategy, full=args.full, compression=args.compression, **opts
        )
    else:
        from ..tables import ParquetDataset

        rep = ParquetDataset(args.path).optimize(
            by, args.strategy, full=args.full, compression=args.compression, progress=progress, **opts
        )
    if progress is not None:
        progress.done()
    print(json.dumps(rep.as_dict(), indent=1, default=str) if args.json else rep)
    return 0


def _progress() -> Callable:
    """A progress line on stderr: partitions read and ordered, files written."""
    state = {"files": 0, "parts": (0, 0), "shown": False}

    def show(phase: str, done: int, total: int) -> None:
        if phase == "partitions":
            state["parts"] = (done, total)
        else:
            state["files"] = done
        d, t = state["parts"]
        sys.stderr.write(f"\r  optimizing: {d}/{t} partitions, {state['files']} files written")
        sys.stderr.flush()
        state["shown"] = True

    def done() -> None:
        if state["shown"]:
            sys.stderr.write("\n")

    show.done = done
    return show


optimize_main.setup = optimize_setup
optimize_main.examples = """
paimon-fast optimize events --cluster-by amount
paimon-fast optimize events --cluster-by user_id,amount --strategy zorder --compression zstd
paimon-fast optimize s3://bucket/events --cluster-by amount --spark --full
"""
