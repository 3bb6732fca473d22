"""``optimize`` on Spark's executors, and the ``paimon-fast optimize`` command.

:func:`optimize` runs :func:`paimon_fast.tables.optimize.optimize` with its step 2 (read, order,
write) on Spark: the driver takes the snapshot and makes every commit as the in-process run does.
The rows never pass through Spark: they are shuffled through the run's staging directory
(``_optimize/<run id>/shuffle/``, hidden from every reader and removed with the run), and only
small results travel back to the driver.  Three ``mapInArrow`` jobs over ``spark.range``:

1. **sample**: one task a file to rewrite reads its cluster columns (the native Parquet reader,
   deletion vectors applied, the file checked to be the version listed) and returns evenly spaced
   keys of its rows in the cluster order (:func:`paimon_fast.core.order.range_keys`, bytes that
   never decrease along the order).  The driver cuts each dataset partition's keys into as many
   ranges as new files it wants (its bytes over the target file size), about equal in rows, as
   Spark's ``RangePartitioner`` does with its sample, and as Paimon's Spark sorters cluster
   (``repartitionByRange`` then ``sortWithinPartitions``);
2. **cut**: one task a file reads all its columns, gives each row the range its key falls in and
   writes the rows as one Arrow IPC file of one record batch a range;
3. **write**: one task a range reads its batch of every IPC file, orders the rows
   (:func:`paimon_fast.core.order.sort_permutation`) and writes them as a new file (cut in
   several if the range came out much larger than planned) with the in-process run's per-file
   step, :func:`paimon_fast.tables.optimize.write_rows` (page index, row-capped pages, file
   index, statistics), staged under the run's directory; the catalog entries travel back.

Every Arrow type the in-process run takes passes unchanged (no conversion to Spark rows).  The
staging directory holds the rows once more, uncompressed on local disk (LZ4 frames on remote
stores), until the write job ends.  The driver collects one small row per input file and range
that got rows (where each range's batch is): fine for thousands of files, a limit for datasets of
tens of thousands of files each spread over as many ranges.  A local dataset path must be one every executor sees at the
same path; datasets on object stores are read and written through pyarrow's filesystems as the
other jobs do (:mod:`paimon_fast.spark.remote`).
"""

from __future__ import annotations

import json
import math
import sys
import time
from typing import Callable, Optional

from ..cli import command

SAMPLE_PER_FILE = 20  # sampled keys a new file of the partition, as Spark's RangePartitioner (x3 over files)
SAMPLE_MAX = 1_000_000  # sampled keys a partition at most


def _shuffle_path(store, root: str, oid: str, i: int) -> str:
    from ..tables.optimize import OPT_DIR, rel_join

    return rel_join(store, root, f"{OPT_DIR}/{oid}/shuffle/{i:06d}.arrow")


def _open_ipc(store, path: str):
    import pyarrow as pa

    return pa.memory_map(path) if store.local else store.fs.open_input_file(path)


def _rewrite_on_spark(spark, parallelism: Optional[int] = None):
    """The ``rewrite`` hook of :func:`paimon_fast.tables.optimize.optimize`: step 2 on Spark."""

    def rewrite(view, todo, plan):
        import numpy as np
        import pyarrow as pa

        from ..tables.optimize import NewFile
        from ..core.order import range_bounds
        from .frames import task_frame, task_numbers

        schema = plan["schema"]
        parts = list(todo)
        files = [(pi, f) for pi, part in enumerate(parts) for f in todo[part]]
        names = schema.names
        by, strategy = plan["cluster_by"], plan["strategy"]
        counts, vectors = plan["counts"], plan["vectors"]
        store, root, oid = view.store, view.root, plan["oid"]
        shipped = {k: v for k, v in plan.items() if k not in ("progress", "phases", "vectors", "counts")}
        target = max(1, plan["opts"].target_file_size)
        rows_of = [counts[f.path] - (vectors[f.path].cardinality if f.path in vectors else 0) for _, f in files]
        part_rows = [0] * len(parts)
        part_bytes = [0] * len(parts)
        for (pi, f), n in zip(files, rows_of):
            part_rows[pi] += n
            part_bytes[pi] += f.size
        pieces = [max(1, math.ceil(b / target)) for b in part_bytes]
        sample = [
            min(n, max(1, math.ceil(min(SAMPLE_MAX, 3 * SAMPLE_PER_FILE * pieces[pi]) * n / max(1, part_rows[pi]))))
            for (pi, _), n in zip(files, rows_of)
        ]
        phases = plan["phases"]
        sample_schema = pa.schema(
            [("task", pa.int32()), ("rows", pa.int64()), ("width", pa.int32()), ("keys", pa.binary())]
        )
        cut_schema = pa.schema(
            [("task", pa.int32()), ("dest", pa.int32()), ("batch", pa.int32()), ("rows", pa.int64())]
        )

        def read(i, columns):
            from ..io.parquet.native import read_files
            from ..core.result import REMAIN
            from ..tables.plan import FilePlan

            _, f = files[i]
            p = FilePlan(f, REMAIN, counts[f.path], False, deletion_vector=vectors.get(f.path))
            t, _ = read_files([(view._input(f), view._kept_positions(p, None))], columns, schema=schema)
            view._read_done(f)
            return t

        def sample_task(batches):
            from ..core.order import quantile_sample, range_keys

            for i in task_numbers(batches):
                keys = range_keys(read(i, by), by, strategy)
                s = quantile_sample(keys, sample[i])
                yield pa.RecordBatch.from_pydict(
                    {"task": [i], "rows": [len(keys)], "width": [s.dtype.itemsize], "keys": [s.tobytes()]},
                    schema=sample_schema,
                )

        def cut_task(batches):
            from ..core.order import range_keys

            for i in task_numbers(batches):
                pi = files[i][0]
                t = read(i, names)
                d = np.searchsorted(bounds[pi], range_keys(t, by, strategy), side="right")
                order = np.argsort(d, kind="stable")
                sizes = np.bincount(d, minlength=len(bounds[pi]) + 1)
                t = t.take(pa.array(order, pa.int64())).combine_chunks()
                sink = pa.BufferOutputStream()
                opts = pa.ipc.IpcWriteOptions(compression=None if store.local else "lz4")
                out = {"task": [], "dest": [], "batch": [], "rows": []}
                with pa.ipc.new_file(sink, t.schema, options=opts) as w:
                    at = 0
                    for dest, n in enumerate(sizes.tolist()):
                        if n:
                            for b in t.slice(at, n).to_batches(max_chunksize=n):
                                w.write_batch(b)
                            out["task"].append(i)
                            out["dest"].append(dest)
                            out["batch"].append(len(out["batch"]))
                            out["rows"].append(n)
                        at += n
                path = _shuffle_path(store, root, oid, i)
                store.makedirs(store.dirname(path))
                store.write_atomic(path, memoryview(sink.getvalue()))
                yield pa.RecordBatch.from_pydict(out, schema=cut_schema)

        def write_task(batches):
            from ..tables.optimize import write_rows
            from ..core.order import sort_permutation

            for k in task_numbers(batches):
                pi, dest, held = outputs[k]
                got = []
                for i, b in held:
                    f = _open_ipc(store, _shuffle_path(store, root, oid, i))
                    try:
                        got.append(pa.ipc.open_file(f).get_batch(b))
                    finally:
                        f.close()
                t = pa.Table.from_batches(got, schema=got[0].schema)
                t = t.take(pa.array(sort_permutation(t, by, strategy), pa.int64()))
                per = max(1, math.ceil(part_rows[pi] / pieces[pi]))
                n_files = max(1, round(t.num_rows / per))
                cuts = [t.num_rows * j // n_files for j in range(n_files + 1)]
                for j, (a, z) in enumerate(zip(cuts, cuts[1:])):
                    d = rels_dir[pi]
                    rel = f"{d + '/' if d else ''}part-{oid}-{dest:05d}-{j:03d}.parquet"
                    nf = write_rows(store, root, rel, t.slice(a, z - a), dict(shipped, gi_cols=[]))
                    yield pa.RecordBatch.from_pydict(
                        {
                            "rel": [nf.rel],
                            "staged": [nf.staged],
                            "rows": [nf.rows],
                            "size": [nf.size],
                            "entry": [json.dumps(nf.entry)],
                        }
                    )

        from .env import arrow_only

        t0 = time.perf_counter()
        with arrow_only():
            got = task_frame(spark, len(files), sample_task, "task int, rows long, width int, keys binary", parallelism)
            got = got.collect()
        t1 = time.perf_counter()
        phases["spark.sample"] = t1 - t0
        samples = [[] for _ in parts]
        for r in got:
            keys = np.frombuffer(r["keys"], dtype=f"S{r['width']}") if r["rows"] else np.empty(0, "S8")
            samples[files[r["task"]][0]].append((keys, r["rows"]))
        bounds = [range_bounds(samples[pi], pieces[pi]) for pi in range(len(parts))]
        with arrow_only():
            got = task_frame(
                spark, len(files), cut_task, "task int, dest int, batch int, rows long", parallelism
            ).collect()
        t2 = time.perf_counter()
        phases["spark.cut"] = t2 - t1
        by_dest = {}
        for r in got:
            by_dest.setdefault((files[r["task"]][0], r["dest"]), []).append((r["task"], r["batch"]))
        outputs = [(pi, dest, sorted(held)) for (pi, dest), held in sorted(by_dest.items())]
        rels_dir = {pi: "/".join(todo[part][0].path.split("/")[:-1]) for pi, part in enumerate(parts)}
        out_schema = "rel string, staged string, rows long, size long, entry string"
        with arrow_only():
            rows = task_frame(spark, len(outputs), write_task, out_schema, parallelism).collect()
        phases["spark.write"] = time.perf_counter() - t2
        from ..tables.optimize import OPT_DIR, rel_join, remove_tree

        remove_tree(store, rel_join(store, root, f"{OPT_DIR}/{oid}/shuffle"))
        phases["spark"] = time.perf_counter() - t0
        out = [NewFile(r["rel"], r["staged"], r["rows"], r["size"], json.loads(r["entry"]), {}) for r in rows]
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
    time, and ``spark.sample`` / ``spark.cut`` / ``spark.write``: its three jobs).  ``parallelism``:
    the Spark tasks of each job (default: twice Spark's default parallelism; each task takes its
    share of the files, then of the new files)."""
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
    p.add_argument(
        "--min-compression-saving",
        type=float,
        default=None,
        help="store a fixed-width column uncompressed when the codec saves less than this share "
        "(default 0.15; 0: compress every column)",
    )
    p.add_argument(
        "--plain-encoding",
        action="store_true",
        help="write PLAIN values where a column has no dictionary (default: DELTA_LENGTH_BYTE_ARRAY for "
        "strings, DELTA_BINARY_PACKED for integers where smaller)",
    )
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
            "min_compression_saving": args.min_compression_saving,
            "delta_encoding": False if args.plain_encoding else None,
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
