"""Sidecar storage of the bitmap index under ``<table>/.hoodie/.aux/bitmap_index/``
(or outside the table, under ``$PAIMON_FAST_HUDI_INDEX_ROOT``: :func:`index_dir`).

Java Hudi and the Rust reader ignore ``.hoodie/.aux``, so nothing here can break
compaction, restore or reads of the table.  Layout::

    bitmap_index/
      segments/seg-<instant>-<uuid>.parquet    index records, immutable
      manifests/manifest-<instant>.json        one per indexed instant, written last

A *segment* holds the records of file slices (re)indexed by one run (one segment
per Spark partition of the run, or one for an in-process run), sorted
by ``key`` with the key's parts also as columns (``column``, ``value``,
``partition``, ``file_id``) plus ``bitmap`` (Base64 portable 64-bit roaring,
the RFC's ``HoodieBitmapIndexInfo.bitmap``) and ``cardinality``; small row groups
(at most 4096 records and about 1 MiB of bitmaps) and key statistics make a ``<column>$<value>$`` prefix
lookup read little.  A
slice's records are written once and never changed: an unchanged slice is carried
forward by reference, a changed one is written again in the new run's segment.

A *manifest* lists every file slice the index covers at that instant (partition,
file id, base file, log files, row count, whether positions are base-file
positions, and the segment holding its records).  It is written to a temporary
name and renamed into place, so a reader sees the previous or the new state and a
run that dies before the rename leaves only unreferenced segment files.

On object stores and HDFS (a table at ``s3://...``, or an index root there; see
:mod:`paimon_fast.io.fs`) nothing is renamed: segments are written under their
unique names, and the manifest is created with a conditional PUT
(``If-None-Match``) under a name no earlier run used (``manifest-<instant>.json``,
then ``manifest-<instant>-0001.json``... for later runs at the same instant); a run
that lost a race to another one raises :class:`~paimon_fast.io.fs.CommitConflictError`
and publishes nothing.  Manifests are found by listing (S3, GCS and Azure list
consistently).  Segments of killed runs are what ``paimon-fast gc`` removes
(:func:`orphan_files`).
"""

from __future__ import annotations

import json
import os
import uuid

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..io.checksum import open_json, seal_json
from ..errors import IndexFormatError
from ..io.fs import TMP_MARK, display_uri, resolve
from ..io.fsutil import write_atomic

INDEX_DIR = os.path.join(".hoodie", ".aux", "bitmap_index")
_INDEX_PARTS = (".hoodie", ".aux", "bitmap_index")
FORMAT_VERSION = 1

RECORD_SCHEMA = pa.schema(
    [
        ("key", pa.string()),
        ("column", pa.string()),
        ("value", pa.string()),
        ("partition", pa.string()),
        ("file_id", pa.string()),
        ("bitmap", pa.string()),
        ("cardinality", pa.int64()),
    ]
)

ROW_GROUP_ROWS = 4096
ROW_GROUP_BYTES = 1 << 20


# index outside the table (a read-only or shared table): $PAIMON_FAST_HUDI_INDEX_ROOT/<name>-<path hash>/
INDEX_ROOT_ENV = "PAIMON_FAST_HUDI_INDEX_ROOT"
IDENTITY_FILE = "table.json"
_VERIFIED = {}


def table_identity(table_path: str) -> dict:
    """What an index kept outside the table records about its table: the absolute path
    and ``hoodie.table.name`` from ``.hoodie/hoodie.properties``."""
    store, root = resolve(table_path)
    p = root if store.local else display_uri(str(table_path))
    name = None
    try:
        text = store.read_bytes(store.join(root, ".hoodie", "hoodie.properties")).decode("utf-8")
        for line in text.splitlines():
            k, sep, v = line.strip().partition("=")
            if sep and k.strip() == "hoodie.table.name":
                name = v.strip()
    except OSError:
        pass
    return {"table_path": p, "table_name": name}


def index_dir(table_path: str) -> str:
    """The index directory as a path in its store (see :func:`index_location`)."""
    return index_location(table_path)[1]


def index_location(table_path: str):
    """Where the table's bitmap index lives: ``<table>/.hoodie/.aux/bitmap_index``, or with
    ``$PAIMON_FAST_HUDI_INDEX_ROOT`` set (a read-only or shared table) a directory under that
    root named by the table's identity, whose ``table.json`` must name this table (a copied
    or mismatched index raises IndexFormatError).  Set the variable before Spark starts so
    executors see it too."""
    root = os.environ.get(INDEX_ROOT_ENV)
    if not root:
        store, troot = resolve(table_path)
        return store, store.join(troot, *_INDEX_PARTS)
    import hashlib
    import re

    ident = table_identity(table_path)
    store, rroot = resolve(root)
    key = (rroot, ident["table_path"])
    d = _VERIFIED.get(key)
    if d is not None:
        return store, d
    tag = re.sub(r"[^A-Za-z0-9_.-]", "_", ident["table_name"] or "table")[:64]
    d = store.join(key[0], f"{tag}-{hashlib.sha256(ident['table_path'].encode()).hexdigest()[:16]}")
    f = store.join(d, IDENTITY_FILE)
    try:
        found = json.loads(store.read_bytes(f))
    except FileNotFoundError:
        found = None
    except ValueError as e:
        raise IndexFormatError(f"{f} is not valid JSON: {e}") from None
    if found is None:
        store.makedirs(d)
        store.write_atomic(f, json.dumps(ident).encode("utf-8"))
    elif {k: found.get(k) for k in ident} != ident:
        raise IndexFormatError(
            f"the bitmap index in {d} belongs to table {found.get('table_path')!r} "
            f"(name {found.get('table_name')!r}), not {ident['table_path']!r} "
            f"(name {ident['table_name']!r})"
        )
    _VERIFIED[key] = d
    return store, d


def _manifest_dir(table_path):
    """``(store, manifests directory)``."""
    store, d = index_location(table_path)
    return store, store.join(d, "manifests")


def _segment_dir(table_path):
    """``(store, segments directory)``."""
    store, d = index_location(table_path)
    return store, store.join(d, "segments")


def new_segment_name(instant: str) -> str:
    return f"seg-{instant}-{uuid.uuid4().hex[:12]}.parquet"


def write_segment(table_path: str, name: str, records: pa.Table) -> int:
    """Write records (any order) sorted by key; returns the number of records."""
    store, d = _segment_dir(table_path)
    store.makedirs(d)
    records = records.select(RECORD_SCHEMA.names).cast(RECORD_SCHEMA)
    if records.num_rows:
        records = records.take(_key_order(records.column("key")))
    local = store.local
    sink = os.path.join(d, f".{name}.tmp") if local else pa.BufferOutputStream()
    with pq.ParquetWriter(
        sink,
        RECORD_SCHEMA,
        compression="zstd",
        write_statistics=True,
        use_dictionary=["column", "partition", "file_id"],
        write_page_checksum=True,  # a damaged page fails its read (never a different bitmap)
    ) as w:
        for a, b in _row_group_bounds(records):
            w.write_table(records.slice(a, b - a), row_group_size=b - a)
    if local:
        os.replace(sink, os.path.join(d, name))
    else:  # a unique name: one PUT, visible only once a manifest names it
        store.write_atomic(store.join(d, name), sink.getvalue().to_pybytes())
    return records.num_rows


def _rank(strings: pa.Array) -> np.ndarray:
    """Rank of each string among the distinct ones (ordinal order of UTF-8 bytes)."""
    enc = pc.dictionary_encode(strings)
    d = enc.dictionary
    rank = np.empty(len(d), np.int64)
    rank[pc.sort_indices(d).to_numpy()] = np.arange(len(d))
    return rank[enc.indices.to_numpy(zero_copy_only=False)]


def _key_order(keys) -> pa.Array:
    """Indices sorting ``keys`` (``<column>$<value>$<partition>$<file id>``, parts escaped).

    Equal to sorting the keys themselves, but cheaper: the ``<column>$<value>$`` heads
    (each ends with the key's second ``$`` and none is a prefix of another) are ranked
    among their few distinct values, then the ``<partition>$<file id>`` tails."""
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks()
    parts = pc.split_pattern(keys, "$", max_splits=2)
    flat = parts.flatten()
    n = len(keys)
    lens = pc.list_value_length(parts).to_numpy(zero_copy_only=False)
    if n == 0 or not (lens == 3).all():
        return pc.sort_indices(keys)
    head = pc.binary_join_element_wise(
        flat.take(pa.array(np.arange(0, 3 * n, 3))), flat.take(pa.array(np.arange(1, 3 * n, 3))), pa.scalar(""), "$"
    )
    tail = flat.take(pa.array(np.arange(2, 3 * n, 3)))
    return pa.array(np.lexsort((_rank(tail), _rank(head))), pa.int64())


def _row_group_bounds(records: pa.Table):
    """Row-group boundaries: at most ROW_GROUP_ROWS records and about ROW_GROUP_BYTES of
    bitmaps each, so a lookup that needs a few bitmaps decodes little besides them."""
    n = records.num_rows
    if not n:
        return [(0, 0)]
    sizes = pc.binary_length(records.column("bitmap")).to_numpy(zero_copy_only=False).astype(np.int64)
    cum = np.cumsum(sizes)
    out, a = [], 0
    while a < n:
        base = cum[a - 1] if a else 0
        b = int(np.searchsorted(cum, base + ROW_GROUP_BYTES, side="right"))
        b = min(max(b, a + 1), a + ROW_GROUP_ROWS, n)
        out.append((a, b))
        a = b
    return out


def segment_path(table_path: str, name: str) -> str:
    store, d = _segment_dir(table_path)
    return store.join(d, name)


def open_segment(table_path: str, name: str, counter=None, **kw) -> pq.ParquetFile:
    """A segment as a ``ParquetFile`` (ranged reads; counted in ``counter`` when given)."""
    store, d = _segment_dir(table_path)
    kw.setdefault("page_checksum_verification", True)
    return pq.ParquetFile(store.open_input(store.join(d, name), counter), **kw)


def read_segment(table_path: str, name: str, prefixes=None, columns=None, file_ids=None) -> pa.Table:
    """Records of one segment; with ``prefixes`` only keys starting with one of them
    (row groups whose key range misses every prefix are not read)."""
    try:
        f = open_segment(table_path, name)
    except (OSError, pa.ArrowInvalid) as e:
        raise IndexFormatError(f"bitmap index segment {name} unreadable: {e}") from None
    cols = columns or RECORD_SCHEMA.names
    if prefixes is None:
        t = f.read(columns=cols)
    else:
        prefixes = sorted(set(prefixes))
        if not prefixes:
            return RECORD_SCHEMA.empty_table().select(cols)
        md = f.metadata
        ki = f.schema_arrow.get_field_index("key")
        groups = []
        for g in range(md.num_row_groups):
            st = md.row_group(g).column(ki).statistics
            if st is None or not st.has_min_max:
                groups.append(g)
                continue
            lo, hi = st.min, st.max
            if isinstance(lo, bytes):
                lo, hi = lo.decode("utf-8", "replace"), hi.decode("utf-8", "replace")
            for p in prefixes:
                # keys with prefix p lie in [p, p_end); p ends with '$', '%' is the next character
                p_end = p[:-1] + "%"
                if p <= hi and lo < p_end:
                    groups.append(g)
                    break
        if not groups:
            return RECORD_SCHEMA.empty_table().select(cols)
        t = f.read_row_groups(groups, columns=list(dict.fromkeys(list(cols) + ["key"])))
        keys = t.column("key")
        mask = None
        for p in prefixes:
            m = pc.starts_with(keys, p)
            mask = m if mask is None else pc.or_(mask, m)
        t = t.filter(mask).select(cols)
    if file_ids is not None and t.num_rows:
        t = t.filter(pc.is_in(t.column("file_id"), value_set=pa.array(sorted(file_ids), pa.string())))
    return t


# ---------------------------------------------------------------- manifests


def list_manifests(table_path: str) -> list:
    """Manifest keys (the instant, then ``<instant>-0001``... for later runs at that instant
    on versioned stores), oldest first."""
    store, d = _manifest_dir(table_path)
    out = []
    for e in store.list_files(d, recursive=False):
        n = e.rel
        if n.startswith("manifest-") and n.endswith(".json"):
            out.append(n[len("manifest-") : -len(".json")])
    return sorted(out)


def manifest_path(table_path: str, key: str) -> str:
    store, d = _manifest_dir(table_path)
    return store.join(d, f"manifest-{key}.json")


def latest_manifest(table_path: str):
    """``(key, manifest)`` of the latest manifest, ``(None, None)`` when there is none."""
    ms = list_manifests(table_path)
    if not ms:
        return None, None
    m = read_manifest(table_path, ms[-1])
    if m is None:  # replaced by a concurrent run between list and read: list again
        return latest_manifest(table_path)
    return ms[-1], m


def read_manifest(table_path: str, instant=None):
    """The manifest dict of ``instant`` (a key of :func:`list_manifests`; default: the latest),
    or None when there is none."""
    if instant is None:
        return latest_manifest(table_path)[1]
    store, _ = _manifest_dir(table_path)
    p = manifest_path(table_path, instant)
    try:
        m = open_json(store.read_bytes(p), f"bitmap index manifest {p}")[0]  # its checksum checked, if sealed
    except FileNotFoundError:
        return None
    if not isinstance(m, dict) or m.get("format") != FORMAT_VERSION or "slices" not in m:
        raise IndexFormatError(f"bitmap index manifest {p} has an unknown format")
    return m


def write_manifest(table_path: str, manifest: dict, base=None) -> str:
    """Atomically publish a manifest; returns its path.  Locally: temporary file + rename
    onto ``manifest-<instant>.json``.  Versioned stores: a conditional create of a name
    after ``base`` (the key of the manifest this run started from), refused with
    :class:`~paimon_fast.io.fs.CommitConflictError` when another run created it first."""
    store, d = _manifest_dir(table_path)
    store.makedirs(d)
    data = seal_json(manifest, compact=True)  # its last member: a checksum of the rest
    inst = manifest["instant"]
    if store.local:
        final = store.join(d, f"manifest-{inst}.json")
        write_atomic(final, data)
        return final
    key = inst
    if base is not None and base.split("-", 1)[0] == inst:
        key = f"{inst}-{int(base.split('-', 1)[1]) + 1 if '-' in base else 1:04d}"
    final = store.join(d, f"manifest-{key}.json")
    store.create_exclusive(final, data)
    return final


def cleanup(table_path: str, keep_manifests: int = 3) -> list:
    """Drop old manifests (keeping the newest ``keep_manifests``), temporary files,
    and segments no kept manifest references.  Single-writer: do not run while
    another index run is in progress.  Returns removed file names."""
    removed = []
    ms = list_manifests(table_path)
    store, md = _manifest_dir(table_path)
    for inst in ms[:-keep_manifests] if keep_manifests else ms:
        store.delete(store.join(md, f"manifest-{inst}.json"))
        removed.append(f"manifest-{inst}.json")
    for e, _why in orphan_files(table_path, store):
        if store.delete(e.path):
            removed.append(e.rel.rsplit("/", 1)[-1])
    return removed


def orphan_files(table_path: str, store=None):
    """``[(FileEntry, reason)]``: segments no manifest references and temporary files of
    interrupted writes (what :func:`cleanup` and ``paimon-fast gc`` remove)."""
    store, d = index_location(table_path)
    live = set()
    for inst in list_manifests(table_path):
        m = read_manifest(table_path, inst)
        if m is not None:
            live.update(m.get("segments", []))
    out = []
    for e in store.list_files(d):
        parts = e.rel.split("/")
        n = parts[-1]
        if n.endswith(".tmp") or TMP_MARK in n:
            out.append((e, "temporary file of an interrupted write"))
        elif parts[0] == "segments" and len(parts) == 2 and n not in live:
            out.append((e, "index segment no manifest references"))
    return out
