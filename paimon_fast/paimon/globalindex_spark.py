"""Global index builds of Paimon tables on Spark: every row range read, sorted and
written on the executors, one commit on the driver (:func:`.globalindex.create_global_index`
with ``spark=``).

The driver plans the row ranges (the ranges no index covers yet) and, for each, the
Parquet files that hold it (local, or in the table's object store: executors read and
write them through pypaimon's pickled pyarrow filesystem, no Hadoop connector needed).  An RDD
of the ranges makes one executor task per range (largest first, no shuffle): each reads its
range's column with pyarrow (row ids from
the files' first row ids), sorts and cuts it into files with the kernels, writes them
under the table's ``index/`` directory and returns their names, sizes, record counts
and metas.  Ranges whose files need pypaimon's reader (deletion vectors, column
groups) are built on the driver.  Nothing is committed by the
executors: a failed job leaves at most orphan files.
"""
from __future__ import annotations

import os

from .globalindex_build import build_range_files, direct_read_plan, read_direct

__all__ = ["build_on_spark", "spark_read_column"]


def _index_root(table):
    """``(store, index directory in it)``, or ``(None, None)`` when the table's files are not
    on a pyarrow filesystem."""
    from .globalindex_build import table_store

    root = table.path_factory().global_index_path_factory().global_index_root_path()
    store = table_store(table)
    if store is None:
        p = root[len("file://"):] if root.startswith("file://") else root
        return (None, None) if "://" in p else (None, p)
    return store, (root[len("file://"):] if store.local and root.startswith("file://") else
                   table.file_io.to_filesystem_path(root))


def build_on_spark(spark, table, field, dtype, tasks, options, per_range, index_type, progress=None):
    """Per task, ``[(file name, size, row count, meta, range start, range end)]`` (the files are written)."""
    from .globalindex_build import _new_file_name, _read_task, _write_index_file

    store, root = _index_root(table)
    specs, local = [], []
    for i, task in enumerate(tasks):
        files = direct_read_plan(table, field, task) if root is not None else None
        if files is None:
            local.append(i)
        else:
            specs.append({"task": i, "start": task.start, "end": task.end, "files": files})
    results = [[] for _ in tasks]
    if specs:
        if store is None:
            os.makedirs(root, exist_ok=True)
        else:
            store.makedirs(root)
        opts = {k: v for k, v in options.items() if k.startswith(("bitmap-index.", "multivalue-index."))}

        def build(batch_specs):
            import uuid

            for spec in batch_specs:
                got = read_direct([tuple(f) for f in spec["files"]], spec["start"], spec["end"], store)
                if got is None:
                    raise RuntimeError(f"row range {spec['start']}..{spec['end']}: a data file stores _ROW_ID")
                col, rids = got
                if col is None:
                    continue
                for lo, hi, data, meta, n in build_range_files(dtype, col, rids, opts, per_range, index_type,
                                                               spec["start"], spec["end"]):
                    name = f"{index_type}-global-index-{uuid.uuid4()}.index"
                    if store is None:
                        path = os.path.join(root, name)
                        tmp = path + ".tmp"
                        with open(tmp, "wb") as fh:
                            fh.write(data)
                        os.replace(tmp, path)
                    else:  # a unique name, visible only through Paimon's commit
                        store.write_atomic(store.join(root, name), data)
                    yield spec["task"], (name, len(data), n, meta, lo, hi)

        # one task per row range, largest first: an RDD of the specs (no shuffle stage, no
        # Arrow conversion; only the file names and metas come back)
        specs.sort(key=lambda sp: sp["start"] - sp["end"])
        for i, row in spark.sparkContext.parallelize(specs, len(specs)).mapPartitions(build).collect():
            results[i].append(row)
        if progress is not None:
            progress(len(specs), len(tasks), sum(f[2] for files in results for f in files))
    for i in local:  # ranges whose files need pypaimon's reader: on the driver
        col, rids = _read_task(table, field, tasks[i])
        if col is None:
            continue
        for lo, hi, data, meta, n in build_range_files(dtype, col, rids, options, per_range, index_type,
                                                       tasks[i].start, tasks[i].end):
            name = _new_file_name(index_type)
            _write_index_file(table, name, data)
            results[i].append((name, len(data), n, meta, lo, hi))
        if progress is not None:
            progress(len(specs) + local.index(i) + 1, len(tasks), 0)
    return results


def spark_read_column(spark, table, column) -> int:
    """A Spark pass that only reads ``column`` of the table's data files (the build's
    baseline in the benchmarks); returns the number of files read."""
    rb = table.new_read_builder()
    paths = sorted({f.file_path[len("file://"):] if f.file_path.startswith("file://") else f.file_path
                    for s in rb.new_scan().plan().splits() for f in s.files})
    spark.read.parquet(*paths).select(column).write.format("noop").mode("overwrite").save()
    return len(paths)
