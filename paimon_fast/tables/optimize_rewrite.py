"""Step 2 of the optimize in this process (:mod:`paimon_fast.tables.optimize`): each partition's rows
read, ordered, cut into files (:func:`file_cuts`) and written with their file indexes and
statistics (:func:`write_rows`, which the Spark job's tasks run too)."""

from __future__ import annotations

import math
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Dict, List

import numpy as np
import pyarrow as pa

from ..core.result import REMAIN
from . import identity as _identity
from .optimize_common import NewFile, rel_join
from ..core.order import sort_permutation, take
from .plan import FilePlan
from .replaced import OPT_DIR
from .steps import step
from .writer import WriteOptions, table_stats, write_file

# ---------------------------------------------------------------- step 2 in this process


def _rewrite_in_process(view, todo: Dict[tuple, list], plan: dict) -> List[NewFile]:
    from ..io.pool import threads

    out: List[NewFile] = []
    phases = plan["phases"]
    progress = plan["progress"]
    names = plan["schema"].names
    done_parts = 0
    with ThreadPoolExecutor(max_workers=max(1, threads())) as pool:
        for part, files in todo.items():
            step("optimize.partition", partition=dict(part))
            t0 = time.perf_counter()
            parts = [
                (FilePlan(f, REMAIN, plan["counts"][f.path], False, deletion_vector=plan["vectors"].get(f.path)), None)
                for f in files
            ]
            table, _ = view.read_kept_many(parts, names, schema=plan["schema"])
            table = _contiguous(table)
            phases["read"] = phases.get("read", 0.0) + time.perf_counter() - t0
            t0 = time.perf_counter()
            perm = sort_permutation(table, plan["cluster_by"], plan["strategy"])
            phases["sort"] = phases.get("sort", 0.0) + time.perf_counter() - t0
            t0 = time.perf_counter()
            cuts = file_cuts(len(perm), sum(f.size for f in files), plan["opts"])
            rel_dir = "/".join(files[0].path.split("/")[:-1])
            jobs = []
            for k, (a, b) in enumerate(cuts):
                rel = f"{rel_dir + '/' if rel_dir else ''}part-{plan['oid']}-{len(out) + k:05d}.parquet"
                jobs.append(pool.submit(write_one, view, rel, table, perm[a:b], plan))
            for j in jobs:
                out.append(j.result())
                if progress:
                    progress("files written", len(out), -1)
            del table, perm
            phases["write"] = phases.get("write", 0.0) + time.perf_counter() - t0
            done_parts += 1
            if progress:
                progress("partitions", done_parts, len(todo))
    return out


def _contiguous(table: pa.Table) -> pa.Table:
    """One chunk per column (each new file takes its rows from it): variable-width columns past
    2 GiB become their large types (the writer casts each file's rows back)."""
    cols = []
    for c in table.columns:
        try:
            cols.append(c.combine_chunks() if c.num_chunks != 1 else c.chunk(0))
        except (pa.ArrowInvalid, pa.ArrowCapacityError):
            t = c.type
            big = pa.large_string() if pa.types.is_string(t) else pa.large_binary() if pa.types.is_binary(t) else None
            if big is None:
                raise
            cols.append(c.cast(big).combine_chunks())
    return pa.Table.from_arrays(cols, names=table.column_names)


def file_cuts(rows: int, source_bytes: int, opts: WriteOptions) -> List[tuple]:
    """``[(start, stop)]`` row ranges of the files a partition of ``rows`` rows (``source_bytes``
    on disk before) is cut into: about :attr:`WriteOptions.target_file_size` bytes each, the same
    number of rows each (whole row groups where the files hold several)."""
    if rows <= 0:
        return []
    n = max(1, math.ceil(source_bytes / max(1, opts.target_file_size)))
    per = math.ceil(rows / n)
    if per > opts.row_group_rows:  # whole row groups, the last file the rest
        per = math.ceil(per / opts.row_group_rows) * opts.row_group_rows
    return [(a, min(rows, a + per)) for a in range(0, rows, per)]


def write_one(view, rel: str, table: pa.Table, order: np.ndarray, plan: dict) -> NewFile:
    """Write the rows ``table[order]`` as the new file ``rel`` (staged under the run's directory),
    with its file index and statistics; the file's :class:`NewFile`."""
    store, root = view.store, view.root
    return write_rows(store, root, rel, take(table, order), plan)


def write_rows(store, root: str, rel: str, part: pa.Table, plan: dict) -> NewFile:
    """The per-file step of the in-process run and of the Spark job's tasks."""
    staged = rel_join(store, root, f"{OPT_DIR}/{plan['oid']}/{rel}")
    sink = pa.BufferOutputStream()
    write_file(
        sink,
        part,
        plan["opts"],
        plan["schema"],
        sorting=plan["cluster_by"] if plan["strategy"] == "order" else None,
        flavour=plan["flavour"],
    )
    buf = sink.getvalue()
    store.makedirs(store.dirname(staged))
    store.write_atomic(staged, memoryview(buf))
    tail = memoryview(buf)[max(0, buf.size - _identity.WITNESS_BYTES) :]
    entry = {
        "rows": part.num_rows,
        "row_groups": math.ceil(part.num_rows / plan["opts"].row_group_rows),
        "clustered": {"by": list(plan["cluster_by"]), "strategy": plan["strategy"]},
        "stats": table_stats(part, plan["stat_cols"]),
        "witness": _identity.witness_of(tail),
    }
    spec = plan["spec"]
    if spec is not None:
        tools = plan["index_tools"]
        b = tools["builder"](plan["row_type"], spec.columns, part.num_rows)
        if b.writers:
            b.add(part)
        blob = b.finish()
        entry["file_index"] = tools["store_index"](store, root, rel, blob, spec.threshold, spec.digest, types=b.types)
    step("optimize.file.written", path=rel)
    return NewFile(
        rel,
        staged,
        part.num_rows,
        buf.size,
        entry,
        {c: part.column(c) for c in plan["gi_cols"] if c in part.schema.names},
    )
