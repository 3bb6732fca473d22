"""Index maintenance: the RFC's Initialize / Insert / Update / Delete.

:func:`build_index` compares the table's current file slices (read through the
``hudi`` package) with the latest index manifest: slices the manifest already
covers are carried forward untouched; new slices (inserts, copy-on-write
updates and deletes, compaction, clustering, merge-on-read log appends) are
indexed on Spark executors (or in-process without Spark) and written as one new
segment; slices that disappeared (replaced, overwritten, rolled back, cleaned)
simply drop out.  When a file group's new slice no longer holds a value its
previous slice held, the value keeps a record with an empty bitmap, as the RFC
prescribes.  The manifest is published last, atomically.
"""

from __future__ import annotations

import json
import os
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..errors import ColumnNotFoundError, IndexFormatError, UnsupportedTypeError
from ..io.fs import display_uri
from . import model, storage
from .table import SliceRef, canonical, open_table, table_root, table_state, timeline_fingerprint


# set by tests (and by PAIMON_FAST_HUDI_CRASH_BEFORE_MANIFEST) to die between segment and manifest
_CRASH_ENV = "PAIMON_FAST_HUDI_CRASH_BEFORE_MANIFEST"


def _read_slice_columns(table_path: str, ref: SliceRef, columns: dict):
    """(arrow table of the indexed columns, positions_are_base_positions)."""
    names = list(columns)
    if ref.base_file and not ref.log_files:
        pf = pq.ParquetFile(table_root(table_path)[0].open_input(ref.base_path(table_path)))
        present = set(pf.schema_arrow.names)
        if all(n in present for n in names):
            return pf.read(columns=names), True
    # slices with log files (or a base file lacking a column): the file-group reader's merged records
    t = open_table(table_path, cached=True)
    reader = t.create_file_group_reader_with_options()
    batch = reader.read_file_slice_from_paths(ref.base_rel() if ref.base_file else "", ref.logs_rel())
    tbl = pa.Table.from_batches([batch]) if isinstance(batch, pa.RecordBatch) else batch
    cols = {}
    for n in names:
        if n in tbl.column_names:
            cols[n] = tbl.column(n)
        else:  # a column added to the schema after this slice was written
            cols[n] = pa.nulls(tbl.num_rows, columns[n])
    return pa.table(cols) if cols else pa.table({}), False


def index_slice(table_path: str, ref: SliceRef, columns: dict, keep_values=None):
    """Records (RECORD_SCHEMA) of one file slice and its manifest entry (dict).

    ``columns``: {name: arrow type}; ``keep_values``: {column: canonical values (Arrow array or set)}
    held by the file group's previous slice (written with empty bitmaps when gone).
    """
    sizes = ref.log_sizes(table_path) if ref.log_files else []  # before reading: a later append shows as a change
    try:
        if sizes is None:
            raise FileNotFoundError(f"a log file of slice {ref.file_id} is missing")
        data, positions = _read_slice_columns(table_path, ref, columns)
    except Exception as e:  # noqa: BLE001 - a slice we cannot read stays unindexed (always a candidate)
        return storage.RECORD_SCHEMA.empty_table(), dict(ref.to_json(), unindexable=f"{type(e).__name__}: {e}")
    n = data.num_rows
    ptok = model.partition_token(ref.partition)
    fid = ref.file_id
    tables = []
    for name in columns:
        arr = data.column(name)
        codes, dictionary = model.dictionary_codes(arr)
        strings = model.canonical_array(dictionary)
        order, bounds, nulls = model.group_positions(codes, len(strings))
        nnull = len(nulls)
        bitmaps = model.encode_groups_array(order[nnull:], bounds - nnull)
        counts = np.diff(bounds)
        kept = (keep_values or {}).get(name)
        gone = []
        if kept is not None and len(kept):
            kept = kept if isinstance(kept, pa.Array) else pa.array(sorted(kept), pa.string())
            gone = kept.filter(pc.invert(pc.is_in(kept, value_set=strings))).to_pylist()
            gone = sorted(set(gone))
        varr = pa.concat_arrays([strings, pa.array(gone + [None], pa.string())])
        bitmaps = pa.concat_arrays(
            [
                bitmaps,
                pa.array([model.EMPTY_BITMAP_B64] * len(gone) + [model.encode_bitmap(np.sort(nulls))], pa.string()),
            ]
        )
        counts = np.concatenate([counts, np.zeros(len(gone), np.int64), [nnull]]).astype(np.int64)
        m = len(varr)
        esc = pc.replace_substring(pc.replace_substring(varr, "%", "%25"), "$", "%24")
        esc = esc.fill_null(model.NULL_TOKEN)
        keys = pc.binary_join_element_wise(pa.scalar(model.escape(name)), esc, pa.scalar(ptok), pa.scalar(fid), "$")
        same = np.zeros(m, np.int64)
        tables.append(
            pa.table(
                {
                    "key": keys,
                    "column": pa.array([name], pa.string()).take(same),
                    "value": varr,
                    "partition": pa.array([ref.partition], pa.string()).take(same),
                    "file_id": pa.array([fid], pa.string()).take(same),
                    "bitmap": bitmaps,
                    "cardinality": pa.array(counts, pa.int64()),
                },
                schema=storage.RECORD_SCHEMA,
            )
        )
    records = pa.concat_tables(tables) if tables else storage.RECORD_SCHEMA.empty_table()
    m = records.num_rows
    entry = dict(ref.to_json(), row_count=n, positions=positions, records=m)
    if ref.log_files:
        entry["log_sizes"] = sizes
    return records, entry


def _run_tasks_local(table_path, tasks, columns):
    out_records, entries = [], []
    for ref, keep in tasks:
        r, e = index_slice(table_path, ref, columns, keep)
        out_records.append(r)
        entries.append(e)
    return out_records, entries


def _task_json(ref, keep):
    return json.dumps(
        {
            "ref": ref.to_json(),
            "keep": {k: v.to_pylist() if isinstance(v, pa.Array) else sorted(v) for k, v in (keep or {}).items()},
        }
    )


def _make_executor_fn(table_path, columns_ser, instant, tasks):
    """Executor body over one partition of task numbers: index its slices (Arrow reads
    of the base files or the file-group reader), write them as one segment (sorted by
    key) next to the table, and return only the manifest entries (JSON strings)."""

    def run(numbers):
        import importlib

        import pyarrow as _pa

        _b = importlib.import_module("paimon_fast.hudi.build")
        _s = importlib.import_module("paimon_fast.hudi.storage")
        cols = {n: _b._parse_type(t) for n, t in columns_ser}
        recs, entries = [], []
        for i in numbers:
            d = json.loads(tasks[i])
            ref = SliceRef.from_json(d["ref"])
            keep = {k: _pa.array(v, _pa.string()) for k, v in d["keep"].items()}
            records, entry = _b.index_slice(table_path, ref, cols, keep)
            recs.append(records)
            entries.append(entry)
        if not entries:
            return
        seg = _s.new_segment_name(instant)
        _s.write_segment(table_path, seg, _pa.concat_tables(recs))
        for e in entries:
            e["segment"] = seg
            yield json.dumps(e)

    return run


def _parse_type(text: str) -> pa.DataType:
    """Arrow type from ``str(type)`` for the types the index supports."""
    import re

    m = re.fullmatch(r"decimal(?:128|256)?\((\d+), ?(-?\d+)\)", text)
    if m:
        p, s = int(m.group(1)), int(m.group(2))
        return pa.decimal128(p, s) if p <= 38 else pa.decimal256(p, s)
    m = re.fullmatch(r"timestamp\[(s|ms|us|ns)(?:, tz=(.+))?\]", text)
    if m:
        return pa.timestamp(m.group(1), tz=m.group(2))
    if text == "date32[day]":
        return pa.date32()
    if text == "date64[ms]":
        return pa.date64()
    return pa.type_for_alias(text)


def _run_tasks_spark(spark, table_path, tasks, columns, instant, parallelism=None):
    """Index slices on the executors; each Spark partition writes one segment.  Returns entries."""
    payload = [_task_json(ref, keep) for ref, keep in tasks]
    # one task per core (each writes one segment: fewer, larger segments for the same parallelism)
    sc = spark.sparkContext
    n = parallelism or max(1, min(len(payload), sc.defaultParallelism))
    columns_ser = [(k, str(v)) for k, v in columns.items()]
    # task numbers as an RDD partitioned n ways (no shuffle; the tasks travel in the closure):
    # a plain Python job costs about half of a DataFrame mapInArrow job (planning, Arrow
    # conversion of the task column and of the entries), which dominates small runs
    out = (
        sc.parallelize(range(len(payload)), n)
        .mapPartitions(_make_executor_fn(table_path, columns_ser, instant, payload))
        .collect()
    )
    return [json.loads(s) for s in out]


def _previous_values(table_path, manifest, groups):
    """{(partition, file_id): {column: Arrow array of values}} from the previous index,
    for the file groups being re-indexed (their vanished values keep empty records).

    Reads the segments' key-part columns as dictionaries and selects the file groups'
    records before materialising any value."""
    if not manifest or not groups:
        return {}
    by_seg = {}
    for e in manifest["slices"]:
        g = (e["partition"], e["file_id"])
        if g in groups and e.get("segment"):
            by_seg.setdefault(e["segment"], set()).add(g)
    out = {}
    names = ["column", "value", "partition", "file_id"]
    for seg, gs in by_seg.items():
        try:
            t = storage.open_segment(table_path, seg, read_dictionary=["column", "partition", "file_id"]).read(
                columns=names
            )
        except (OSError, pa.ArrowInvalid) as e:
            raise IndexFormatError(f"bitmap index segment {seg} unreadable: {e}") from None
        fids = pa.array(sorted({f for _, f in gs}), pa.string())
        masks = []
        for ch in t.column("file_id").chunks:
            d = ch.dictionary if pa.types.is_dictionary(ch.type) else None
            if d is not None:
                masks.append(pc.is_in(d, value_set=fids).take(ch.indices).fill_null(False))
            else:
                masks.append(pc.is_in(ch, value_set=fids).fill_null(False))
        t = t.filter(pa.chunked_array(masks, pa.bool_()) if masks else pa.chunked_array([], pa.bool_()))
        t = pa.table({n: t.column(n).cast(pa.string()) for n in names})
        t = t.filter(pc.is_valid(t.column("value")))
        for p, f in gs:
            tg = t.filter(pc.and_(pc.equal(t.column("partition"), p), pc.equal(t.column("file_id"), f)))
            if not tg.num_rows:
                continue
            cols = tg.column("column")
            for c in pc.unique(cols).to_pylist():
                out.setdefault((p, f), {})[c] = tg.column("value").filter(pc.equal(cols, c)).combine_chunks()
    return out


DRIVER_MAX_SLICES = 8


def build_index(
    spark,
    table_path: str,
    columns=None,
    *,
    parallelism=None,
    max_segments: int = 32,
    keep_manifests: int = 3,
    as_of=None,
    driver_max_slices: int = DRIVER_MAX_SLICES,
) -> dict:
    """Create or bring up to date the bitmap index of ``columns`` of a Hudi table.

    ``spark``: a SparkSession (slices are indexed by tasks on the executors, each
    writing one segment) or None to index in this process.  A run with at most
    ``driver_max_slices`` slices to (re)index does them in this process even with
    a session: a Spark job costs more than indexing a few slices (0 = always use
    the executors).  ``columns`` defaults to the columns of the existing index, or on a first
    build to every column that can be indexed (``columns_skipped`` in the report
    says which were left out and why: metadata, floating point, binary, nested);
    changing the column set rebuilds the index.
    ``as_of``: index the table as it was at that completed instant (default: now).
    Returns a report: instant indexed, new instants seen, slices indexed / carried
    forward / dropped, records written, where they were indexed, seconds per phase.
    """
    t0 = time.perf_counter()
    table_path = canonical(table_path)
    prev_key, prev = storage.latest_manifest(table_path)
    # the timeline before and after listing: equal and settled -> queries may reuse this listing
    # while the timeline stays exactly so (see table.timeline_fingerprint)
    fp0 = timeline_fingerprint(table_path)
    state = table_state(table_path, as_of)
    fp1 = timeline_fingerprint(table_path)
    tm = {"list": time.perf_counter() - t0}
    schema = {f.name: f.type for f in state.schema}
    skipped = {}
    if columns is None:
        if prev is not None:
            columns = list(prev["columns"])
        else:  # first build: every column that can be indexed; the report says why the others were not
            columns, skipped = model.indexable_columns(state.schema)
            if not columns:
                raise UnsupportedTypeError(f"no column of {table_path} can be bitmap-indexed: {skipped}")
    if isinstance(columns, str):
        columns = [columns]
    col_types = {}
    for c in columns:
        if c not in schema:
            raise ColumnNotFoundError(c, list(schema))
        model.check_indexable(c, schema[c])
        col_types[c] = schema[c]
    col_ser = {c: str(t) for c, t in col_types.items()}
    if prev is not None and prev.get("columns") != col_ser:
        prev = None  # different columns (or types after schema evolution): rebuild
    prev_by_id = {}
    if prev is not None:
        # a slice with log files indexed while an instant was pending may have changed
        # without changing its name (the instant's log blocks count once it completes)
        distrust_logs = logs_untrusted(prev)
        for e in prev["slices"]:
            if distrust_logs and e["log_files"]:
                continue
            prev_by_id[(e["partition"], e["file_id"], e["base_file"], tuple(e["log_files"]))] = e
    carried, todo = [], []
    for ref in state.slices:
        e = prev_by_id.get(ref.identity)
        if e is not None and not logs_changed(table_path, e):
            carried.append(e)
        else:
            todo.append(ref)
    t1 = time.perf_counter()
    keep = _previous_values(table_path, prev, {r.group for r in todo})
    tm["previous_values"] = time.perf_counter() - t1
    t1 = time.perf_counter()
    tasks = [(r, keep.get(r.group)) for r in todo]
    new_instants = [i for i in state.completed_instants if prev is None or i > prev["instant"]]
    segments_before = list(prev["segments"]) if prev else []
    where = None
    if tasks:
        where = "driver" if spark is None or len(tasks) <= driver_max_slices else "executors"
        if where == "driver":
            rec_list, entries = _run_tasks_local(table_path, tasks, col_types)
            records = pa.concat_tables(rec_list) if rec_list else storage.RECORD_SCHEMA.empty_table()
            seg = storage.new_segment_name(state.latest_instant)
            storage.write_segment(table_path, seg, records)
            for e in entries:
                e["segment"] = seg
        else:
            entries = _run_tasks_spark(spark, table_path, tasks, col_types, state.latest_instant, parallelism)
        nrec = sum(e.get("records", 0) for e in entries)
        written = sorted({e["segment"] for e in entries})
    else:
        entries, nrec, written = [], 0, []
    tm["index_slices"] = time.perf_counter() - t1
    t1 = time.perf_counter()
    unindexable = [e for e in entries if "unindexable" in e]
    entries = [e for e in entries if "unindexable" not in e]
    slices = carried + entries
    segs = sorted({e["segment"] for e in slices if e.get("segment")})
    compacted = False
    if len(segs) > max_segments:
        slices, segs = _compact(table_path, state.latest_instant, slices)
        compacted = True
    manifest = {
        "format": storage.FORMAT_VERSION,
        "instant": state.latest_instant,
        "table_type": "MERGE_ON_READ" if state.is_mor else "COPY_ON_WRITE",
        "columns": col_ser,
        "segments": segs,
        "slices": sorted(slices, key=lambda e: (e["partition"], e["file_id"])),
        "created_ms": int(time.time() * 1000),
    }
    manifest["pending"] = sorted(set(fp0.pending) | set(fp1.pending))
    if as_of is None and fp0.settled and fp1 == fp0:
        # the full listing = slices + unindexed ones (always candidates)
        manifest["listing"] = {
            "timeline": fp0.digest,
            "unindexed": [
                {k: e[k] for k in ("partition", "file_id", "base_file", "log_files", "instant")} for e in unindexable
            ],
        }
    if os.environ.get(_CRASH_ENV):
        os._exit(17)  # simulated kill between the segment files and the manifest
    storage.write_manifest(table_path, manifest, base=prev_key)
    tm["manifest"] = time.perf_counter() - t1
    t1 = time.perf_counter()
    removed = storage.cleanup(table_path, keep_manifests)
    tm["cleanup"] = time.perf_counter() - t1
    return {
        "table": display_uri(table_path),
        "instant": state.latest_instant,
        "previous_instant": None if prev is None else prev["instant"],
        "new_instants": new_instants,
        "columns": list(col_types),
        "columns_skipped": skipped,
        "slices_indexed": len(entries),
        "slices_unindexable": [{"file_id": e["file_id"], "error": e["unindexable"]} for e in unindexable],
        "slices_carried": len(carried),
        "indexed_on": where,
        "slices_dropped": len(prev_by_id) - len(carried) if prev is not None else 0,
        "records_written": nrec,
        "segments_written": written,
        "segments": len(segs),
        "segments_before": len(segments_before),
        "compacted": compacted,
        "files_removed": len(removed),
        "seconds": round(time.perf_counter() - t0, 3),
        "phase_seconds": {k: round(v, 3) for k, v in tm.items()},
    }


def logs_changed(table_path: str, entry) -> bool:
    """Whether a manifest entry's log files are not (provably) the ones it indexed: a size
    differs, a file is missing, or the entry predates recorded sizes."""
    if not entry.get("log_files"):
        return False
    want = entry.get("log_sizes")
    if want is None:
        return True
    return SliceRef.from_json(entry).log_sizes(table_path) != list(want)


def logs_untrusted(manifest) -> bool:
    """True when the manifest's slices with log files cannot be trusted on a later
    timeline: it was written while an instant was pending (or by a version that did
    not record that)."""
    p = manifest.get("pending")
    return p is None or bool(p)


def _compact(table_path, instant, slices):
    """Rewrite the live records of every slice into one segment."""
    by_seg = {}
    for e in slices:
        by_seg.setdefault(e["segment"], set()).add((e["partition"], e["file_id"]))
    parts = []
    for seg, groups in by_seg.items():
        t = storage.read_segment(table_path, seg, file_ids={f for _, f in groups})
        if t.num_rows:
            live = pa.array([f"{p}\x00{f}" for p, f in groups], pa.string())
            tag = pc.binary_join_element_wise(t.column("partition"), t.column("file_id"), "\x00")
            t = t.filter(pc.is_in(tag, value_set=live))
        parts.append(t)
    seg = storage.new_segment_name(instant)
    storage.write_segment(table_path, seg, pa.concat_tables(parts) if parts else storage.RECORD_SCHEMA.empty_table())
    out = [dict(e, segment=seg) for e in slices]
    return out, [seg]


def check_columns(schema: pa.Schema, columns) -> None:
    for c in columns:
        if c not in schema.names:
            raise ColumnNotFoundError(c, schema.names)
        model.check_indexable(c, schema.field(c).type)


__all__ = ["build_index", "index_slice", "UnsupportedTypeError"]
