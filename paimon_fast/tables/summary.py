"""``paimon-fast inspect DIR``: what a Parquet dataset holds, as a summary or as JSON.

    paimon-fast inspect events              # data files, indexes per column, sizes, staleness
    paimon-fast inspect events --json       # the same as one JSON object

:func:`dataset_summary` reads the dataset's catalog, its file index containers' headers (one
ranged read each), the listings of its global indexes and its deletion vectors' catalog
entries; it reads no data page.  An index is *current* when the data file (or, for a global
index, every data file) is exactly the one it was built from; *stale* when the file changed
since; *type changed* when the column's type is not the one it was built for.  The answer
of a read never depends on a stale index: reads skip it (``explain()`` says so).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Dict

from ..cli import inspector
from .layout import CATALOG_NAME


def dataset_summary(ds) -> dict:
    """A JSON-ready dict describing the :class:`~paimon_fast.tables.ParquetDataset` ``ds``:
    its data files and rows, the file indexes it holds per column and index type (files
    covered, bytes, stale and missing files), its global indexes (type, files, bytes, rows,
    current or stale), its deletion vectors and leftover temporary files."""
    from dataclasses import replace

    from ..core.types import DataType
    from .deletes import DV_KEY, dv_entry_current
    from .globalindex import INDEX_DIR, has_global_index, listing_is_current, read_listing

    files = ds.files(refresh=True)
    cat = ds.read_catalog()
    entries = cat["files"]
    counts, unreadable = _row_counts(ds, files, entries)
    parts: Dict[str, set] = {}
    for f in files:
        for k, v in f.partition:
            parts.setdefault(k, set()).add(v)
    try:
        row_type = ds.row_type()
    except FileNotFoundError:  # no data file yet
        row_type = {}
    out = {
        "data_files": len(files),
        "data_bytes": sum(f.size for f in files),
        "rows": sum(counts.values()),
        "partitions": ", ".join(f"{k} ({len(v)} values)" for k, v in parts.items()) or "none",
        "columns": ", ".join(f"{c} {t}" for c, t in row_type.items()),
    }
    if unreadable:
        out["unreadable_data_files"] = unreadable
    options = (cat.get("file_index") or {}).get("options") or {}
    out["file_index_options"] = [{"option": k, "value": v} for k, v in sorted(options.items())]

    # ---- file indexes: one container per data file, current or stale as a whole
    current, stale, missing, changed = [], [], [], []
    for f in files:
        e = entries.get(f.path)
        fi = (e or {}).get("file_index")
        if not fi or fi.get("none"):
            missing.append(f)
        elif not ds._index_current(f, e, None):
            stale.append(f)
        else:
            built = fi.get("types") or {}
            moved = [
                c
                for c, t in built.items()
                if c in row_type
                and replace(DataType.parse(row_type[c]), nullable=True) != replace(DataType.parse(t), nullable=True)
            ]
            (changed if moved else current).append(f)

    def metas(f):
        idx = ds.open_index(f, entries.get(f.path))
        if idx is None:
            return {}
        try:
            return idx.index_metas()
        finally:
            idx.close()

    with ThreadPoolExecutor(max_workers=min(8, max(1, len(current)))) as ex:
        headers = list(ex.map(metas, current))
    by_index: Dict[tuple, dict] = {}
    for m in headers:
        for col, types in m.items():
            for itype, (_, length) in types.items():
                r = by_index.setdefault((col, itype), {"files": 0, "bytes": 0})
                r["files"] += 1
                r["bytes"] += length
    spec_types = _spec(options)
    for col, types in spec_types.items():
        for itype in types:
            by_index.setdefault((col, itype), {"files": 0, "bytes": 0})
    states = [f"{len(current):,} current"]
    if stale:
        states.append(f"{len(stale):,} stale (the data file changed since the build: build again)")
    if changed:
        states.append(f"{len(changed):,} built for another type of a column (build again)")
    if missing:
        states.append(f"{len(missing):,} without an index")
    out["file_index_files"] = ", ".join(states)
    out["file_index_bytes"] = sum(
        (entries[f.path]["file_index"].get("size") or 0) for f in current + stale + changed if f.path in entries
    )
    out["file_indexes"] = [
        {
            "column": col,
            "index_type": itype,
            "type": row_type.get(col, "?"),
            "files": r["files"],
            "bytes": r["bytes"],
            "stale": len(stale) + len(changed),
            "missing": len(files) - r["files"] - len(stale) - len(changed),
        }
        for (col, itype), r in sorted(by_index.items())
    ]
    if stale:
        out["stale_examples"] = [f.path for f in stale[:3]]
    out["file_index_options"] = out.pop("file_index_options")

    # ---- global indexes: one listing per column
    gi_rows = []
    gdir = ds.store.join(ds.root, INDEX_DIR)
    columns = []
    if ds.store.is_dir(gdir):
        columns = sorted({e.rel.split("/", 1)[0] for e in ds.store.list_files(gdir) if "/" in e.rel})
    for col in columns:
        if not has_global_index(ds.root, col, ds.store):
            continue
        try:
            listing = read_listing(ds.root, col, ds.store)
        except Exception as e:  # noqa: BLE001 - an unreadable listing is reported, not fatal
            gi_rows.append({"column": col, "index_type": "?", "state": f"unreadable: {e}"})
            continue
        idx_files = listing.get("files") or []
        gi_rows.append(
            {
                "column": col,
                "index_type": listing.get("index_type", "bitmap"),
                "type": listing.get("type", "?"),
                "files": len(idx_files),
                "bytes": sum(int(x.get("size") or 0) for x in idx_files),
                "rows": int(listing.get("total_row_count") or 0),
                "state": "current" if listing_is_current(listing, files) else "stale (data files changed: rebuild it)",
                "build": listing.get("build_id", ""),
            }
        )
    out["global_indexes"] = gi_rows

    # ---- deletion vectors and leftovers
    dv = [(f, entries[f.path][DV_KEY]) for f in files if dv_entry_current(f, (entries.get(f.path) or {}).get(DV_KEY))]
    out["deletion_vectors"] = (
        f"{len(dv):,} files, {sum(int(e.get('cardinality') or 0) for _, e in dv):,} rows deleted" if dv else "none"
    )
    out["temporary_files"] = len(ds.temp_files())
    return out


def _row_counts(ds, files, entries):
    """Rows per file (the catalog's where current, else the footer's) and the files whose footer
    could not be read (named in the summary instead of ending it)."""
    counts, bad = {}, []
    for f in files:
        e = entries.get(f.path)
        if ds._entry_matches(f, e) and "rows" in e:
            counts[f.path] = int(e["rows"])
            continue
        try:
            counts[f.path] = _footer_rows(ds, f)
        except Exception as err:  # noqa: BLE001 - a corrupt or foreign file among the data files
            bad.append({"file": f.path, "error": " ".join(str(err).split())})
    return counts, bad


def _footer_rows(ds, f) -> int:
    import pyarrow.parquet as pq

    return pq.ParquetFile(ds._input(f)).metadata.num_rows


def _spec(options) -> Dict[str, list]:
    """``{column: [index type]}`` the dataset's file index options ask for."""
    from ..fileindex.options import indexes_from_table_options

    try:
        return {c: list(t) for c, t in indexes_from_table_options(options).items()}
    except Exception:  # noqa: BLE001 - options this build does not know: shown as they are
        return {}


def is_dataset_dir(path: str) -> bool:
    """A local directory holding a dataset catalog, or Parquet data files at its top or in its
    ``key=value`` partition directories (not a Paimon or Hudi table, whose own layouts the other
    commands read)."""
    if not os.path.isdir(path):
        return False
    if os.path.exists(os.path.join(path, CATALOG_NAME)):
        return True
    if os.path.isdir(os.path.join(path, ".hoodie")) or os.path.isdir(os.path.join(path, "snapshot")):
        return False
    from .layout import is_data_file_name

    for dp, dirs, fs in os.walk(path):
        if any(is_data_file_name(n) for n in fs):
            return True
        dirs[:] = [d for d in dirs if "=" in d and not d.startswith(("_", "."))]  # hive partitions only
    return False


@inspector("Parquet dataset")
def describe_dataset(path, args) -> dict:
    from .parquet import ParquetDataset

    return dataset_summary(ParquetDataset(path))


describe_dataset.detect(is_dataset_dir)
