"""The optimize's global index rebuild (:mod:`paimon_fast.tables.optimize`, step 5): the columns
whose global index describes the snapshot's files, and a new listing of each over the files after
the commit."""

from __future__ import annotations

import uuid
from typing import List, Mapping

import numpy as np

from .optimize_common import NewFile, rel_join


def _global_index_columns(view) -> List[str]:
    """The columns whose global index describes the snapshot's files (rebuilt for the new ones)."""
    from .globalindex import INDEX_DIR, listing_of, listing_trust

    d = view.store.join(view.root, INDEX_DIR)
    if not view.store.is_dir(d):
        return []
    out = []
    for e in sorted({x.rel.split("/")[0] for x in view.store.list_files(d)}):
        try:
            if listing_trust(listing_of(view, e), view.files()) is not None:
                out.append(e)
        except Exception:  # noqa: BLE001 - not a built listing: nothing to rebuild
            continue
    return out


def _rebuild_global_index(ds, view, column: str, after: list, new_by_rel: Mapping[str, NewFile]) -> None:
    """A new listing of ``column``'s global index over the files ``after`` the commit (one index
    file, built in this process as ``build_global_index_local`` does)."""
    import pyarrow.parquet as pq

    from ..io.checksum import block_checksums
    from ..globalindex import writer as gi_writer
    from .globalindex import _commit_listing, _listing_file, index_dir, listing_of

    store, root = ds.store, ds.root
    old_listing = listing_of(view, column)
    options = dict(old_listing.get("options") or {})
    dtype = old_listing["type"]
    base_version = _listing_file(root, column, store).read()[0]
    out_dir = index_dir(root, column, store)
    store.makedirs(out_dir)
    build_id = uuid.uuid4().hex[:12]
    w = gi_writer(dtype, {k: v for k, v in options.items() if k.startswith("bitmap-index.")})
    files = [(p, n) for p, _, n in after]
    bases = np.cumsum([0] + [n for _, n in files]).tolist()
    for (rel, _), base in zip(files, bases):
        pos = base
        nf = new_by_rel.get(rel)
        if nf is not None and column in nf.columns:  # (the in-process run keeps them)
            batches = nf.columns[column].chunks
        else:
            path = rel_join(store, root, rel)
            batches = (b.column(0) for b in pq.ParquetFile(store.open_input(path)).iter_batches(columns=[column]))
        for arr in batches:
            w.write_batch(arr, np.arange(pos, pos + len(arr), dtype=np.uint64))
            pos += len(arr)
    name = f"bitmap-{build_id}-00000.index"
    data, meta = w.finish()
    rows = []
    if data is not None:
        store.write_atomic(store.join(out_dir, name), data)
        rows = [
            {"file": name, "row_count": w.row_count, "meta": meta, "size": len(data), "checksum": block_checksums(data)}
        ]
    states = [ident for _, ident, _ in after]
    _commit_listing(
        store, root, column, dtype, build_id, bases[-1], options, 1, files, bases, states, rows, base_version
    )
