"""A column grouped by key for the bitmap global index and the files built from the groups:
:class:`Groups` (a column sorted and grouped by key with the kernels), the grouping in
slices side by side and the merge of groupings, the groups' bitmaps serialized, the files
cut as Java's rotating writer cuts them, and the file assembled (null / non-null bitmaps,
index block, footer, meta) for the bitmap and multivalue layouts (see :mod:`.format`)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from .._kernels import load as _load
from ..errors import OptionError
from ..io.fsutil import Chunks
from ..io.serde import encode_varint
from ..core.types import binary_buffers
from . import sst as _codec
from .keys import KeyCodec
from .layout import FOOTER_STRUCT, MAGIC, VERSION
from .meta import SortedIndexFileMeta

_k = _load("globalindex")


def build_multivalue_file(key_codec: KeyCodec, elems: pa.Array, rids: np.ndarray, block_size: int, encoder):
    """The multivalue file of non-null ``elems`` with their row ids: the bitmap layout with
    empty null / non-null bitmaps (meta: first / last key, has nulls = false)."""
    return multivalue_file_from_groups(group_column(key_codec, elems, rids), block_size, encoder)


def multivalue_file_from_groups(groups, block_size: int, encoder):
    """:func:`build_multivalue_file` from the elements' :class:`Groups`."""
    blob, sizes = serialize_groups(groups.rids, groups.bounds)
    body, first_idx, boffs, blens = _k.pack(groups.key_off, groups.key_data, blob, sizes, block_size, encoder)
    empty = np.zeros(0, dtype=np.uint64)
    return assemble(body, groups.key_off, groups.key_data, first_idx, boffs, blens, empty, empty, len(sizes), encoder)


class Groups:
    """A column sorted and grouped by key (:func:`group_column`): the null rows' ids
    ``nulls`` (ascending); the strictly increasing row ids ``rids[bounds[g]:bounds[g+1]]``
    of the g-th smallest key, whose serialized bytes are ``key_data[key_off[g]:key_off[g+1]]``;
    for non-string keys also their order keys ``ghi`` / ``glo`` (None for strings: their
    bytes order them); ``nonnull``: every non-null row id ascending, when known without a
    sort (else None).  Groupings of disjoint, ascending row-id intervals merge into the
    grouping of their union (:func:`merge_groups`)."""

    __slots__ = ("nulls", "rids", "bounds", "key_off", "key_data", "ghi", "glo", "nonnull")

    def __init__(self, nulls, rids, bounds, key_off, key_data, ghi=None, glo=None, nonnull=None):
        self.nulls = np.ascontiguousarray(nulls, dtype=np.uint64)
        self.rids = np.ascontiguousarray(rids, dtype=np.uint64)
        self.bounds = np.ascontiguousarray(bounds, dtype=np.int64)
        self.key_off = np.ascontiguousarray(key_off, dtype=np.int64)
        self.key_data = np.ascontiguousarray(
            key_data if isinstance(key_data, np.ndarray) else np.frombuffer(key_data, np.uint8), dtype=np.uint8
        )
        self.ghi = None if ghi is None else np.ascontiguousarray(ghi, dtype=np.int64)
        self.glo = None if glo is None else np.ascontiguousarray(glo, dtype=np.uint64)
        self.nonnull = None if nonnull is None else np.ascontiguousarray(nonnull, dtype=np.uint64)

    @property
    def keys(self) -> int:
        return len(self.bounds) - 1


def group_column(key_codec: KeyCodec, arr: pa.Array, rids: np.ndarray) -> Groups:
    """Sort ``arr``'s rows by (key, row id) with the kernels and group them (:class:`Groups`)."""
    valid = None
    if arr.null_count:
        from ..core.types import validity_mask

        valid = validity_mask(arr)
    if valid is None:
        nn_rids = rids
        null_rids = rids[:0]
    else:
        nn_rids = rids[valid]
        null_rids = rids[~valid]
    nn_rids = np.ascontiguousarray(nn_rids, dtype=np.uint64)
    rid_sorted = bool(nn_rids.size < 2 or (nn_rids[1:] >= nn_rids[:-1]).all())
    null_rids = np.ascontiguousarray(null_rids, dtype=np.uint64)
    if null_rids.size > 1 and not (null_rids[1:] >= null_rids[:-1]).all():
        null_rids = np.sort(null_rids)
    if key_codec.is_string:
        off, data = binary_buffers(arr)
        rank, key_off, key_data = _k.string_ranks(
            np.ascontiguousarray(off), data, None if valid is None else valid.view(np.uint8)
        )
        hi = rank if valid is None else rank[valid]
        hi = np.ascontiguousarray(hi, dtype=np.int64)
        lo = np.zeros(len(hi), dtype=np.uint64)
        g_rids, bounds, _, _ = _k.sort_group(hi, lo, nn_rids, rid_sorted)
        return Groups(null_rids, g_rids, bounds, key_off, key_data, nonnull=nn_rids if rid_sorted else None)
    hi, lo = key_codec.order_keys(arr)
    if valid is not None:
        hi, lo = hi[valid], lo[valid]
    hi = np.ascontiguousarray(hi, dtype=np.int64)
    lo = np.ascontiguousarray(lo, dtype=np.uint64)
    g_rids, bounds, ghi, glo = _k.sort_group(hi, lo, nn_rids, rid_sorted)
    key_off, key_data = _k.serialize_keys(key_codec.kind, ghi, glo)
    return Groups(null_rids, g_rids, bounds, key_off, key_data, ghi, glo, nn_rids if rid_sorted else None)


PARALLEL_GROUP_ROWS = 1 << 21  # columns of at least this many rows are grouped in slices side by side


def group_column_parallel(key_codec: KeyCodec, arr: pa.Array, rids: np.ndarray, threads: int = None) -> Groups:
    """:func:`group_column` of ``arr`` cut into ``threads`` (default: up to 2 cores) consecutive
    slices grouped side by side (the kernels release the GIL) and merged by
    :func:`merge_groups`: the same :class:`Groups`.  Only when the row ids strictly ascend (the
    slices are then disjoint, ascending row-id intervals) and the column has at least
    :data:`PARALLEL_GROUP_ROWS` rows; else one :func:`group_column`."""
    n = len(arr)
    if threads is None:
        from ..io.pool import threads as _threads

        threads = min(2, _threads())
    rids = np.ascontiguousarray(rids, dtype=np.uint64)
    if threads < 2 or n < max(PARALLEL_GROUP_ROWS, 2) or not bool((rids[1:] > rids[:-1]).all()) or nearly_unique(arr):
        return group_column(key_codec, arr, rids)
    cuts = np.linspace(0, n, threads + 1).astype(np.int64).tolist()
    from concurrent.futures import ThreadPoolExecutor

    def one(ab):
        a, b = ab
        return group_column(key_codec, arr.slice(a, b - a), rids[a:b])

    with ThreadPoolExecutor(threads) as ex:
        parts = list(ex.map(one, zip(cuts[:-1], cuts[1:])))
    # without nulls the slices' non-null row ids are the slices of rids: no copy of them all
    return merge_groups(parts, nonnull=rids if arr.null_count == 0 else None)


def nearly_unique(arr: pa.Array, sample: int = 1 << 16) -> bool:
    """Are nine in ten of a sample of ``arr``'s values distinct?  Then the slices' groupings
    hold about as many keys as rows and merging them costs what the slices saved."""
    import pyarrow.compute as pc

    idx = np.unique(np.random.default_rng(len(arr)).integers(0, len(arr), min(sample, len(arr))))  # distinct rows
    part = arr.take(pa.array(idx))
    return pc.count_distinct(part).as_py() > 0.9 * len(part)


def merge_groups(parts, nonnull=None) -> Groups:
    """The :class:`Groups` of the union of ``parts`` (groupings of disjoint row-id intervals,
    in ascending row-id order): the distinct keys of all parts ranked together (the string
    kernel over the parts' few distinct keys, or numpy on the order keys), then each key's
    row ids are its parts' runs one after the other (a gather, no sort of rows).
    ``nonnull``: the union's non-null row ids ascending, when the caller has them (else the
    parts' are concatenated, when every part knows its own)."""
    parts = [p for p in parts if p.keys or len(p.nulls)]
    if len(parts) <= 1:
        return (
            parts[0]
            if parts
            else Groups(
                np.zeros(0, np.uint64),
                np.zeros(0, np.uint64),
                np.zeros(1, np.int64),
                np.zeros(1, np.int64),
                np.zeros(0, np.uint8),
            )
        )
    nulls = np.concatenate([p.nulls for p in parts])
    base = np.cumsum([0] + [p.key_off[-1] for p in parts])
    key_off = np.concatenate([parts[0].key_off[:1]] + [p.key_off[1:] + b for p, b in zip(parts, base)])
    key_data = np.concatenate([p.key_data[: p.key_off[-1]] for p in parts])
    if parts[0].ghi is None:  # strings: rank the parts' distinct keys by bytes
        rank, m_off, m_data = _k.string_ranks(key_off, key_data, None)
        ghi = glo = None
    else:
        hi = np.concatenate([p.ghi for p in parts])
        lo = np.concatenate([p.glo for p in parts])
        order = np.lexsort((lo, hi))
        new = np.ones(len(order), dtype=bool)
        new[1:] = (hi[order][1:] != hi[order][:-1]) | (lo[order][1:] != lo[order][:-1])
        rank = np.empty(len(order), dtype=np.int64)
        rank[order] = np.cumsum(new) - 1
        first = order[new]
        ghi, glo = hi[first], lo[first]
        starts, ends = key_off[first], key_off[first + 1]
        lens = ends - starts
        m_off = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
        m_data = key_data[np.repeat(starts - m_off[:-1], lens) + np.arange(m_off[-1])] if len(lens) else key_data[:0]
    # every part's group g is a segment of its row ids; stable by rank keeps the parts' order
    seg_part = np.repeat(np.arange(len(parts), dtype=np.int64), [p.keys for p in parts])
    seg_start = np.concatenate([p.bounds[:-1] for p in parts])
    seg_len = np.concatenate([np.diff(p.bounds) for p in parts])
    order = np.argsort(rank, kind="stable")
    rids = _k.gather_segments(
        [p.rids for p in parts],
        np.ascontiguousarray(seg_part[order]),
        np.ascontiguousarray(seg_start[order]),
        np.ascontiguousarray(seg_len[order]),
    )
    bounds = np.zeros(len(m_off), dtype=np.int64)
    np.cumsum(np.bincount(rank, weights=seg_len, minlength=len(m_off) - 1).astype(np.int64), out=bounds[1:])
    if nonnull is None and not any(p.nonnull is None for p in parts):
        nonnull = np.concatenate([p.nonnull for p in parts])
    return Groups(nulls, rids, bounds, m_off, m_data, ghi, glo, nonnull)


def serialize_groups(rids: np.ndarray, bounds: np.ndarray, threads: int = 2, join: bool = True):
    """``serialize64_groups`` of many groups, cut into ``threads`` slices of about equal row
    counts serialized side by side (the kernel releases the GIL); the same bytes.  With
    ``join=False``, the slices' bitmaps are left as they are: ``([blob, ...], sizes)``."""
    ng = len(bounds) - 1
    if threads < 2 or len(rids) < 1 << 20 or ng < threads:
        blob, sizes = _k.serialize64_groups(rids, bounds)
        return (blob, sizes) if join else ([blob], sizes)
    cuts = np.unique(
        np.concatenate([[0], np.searchsorted(bounds, np.linspace(0, bounds[-1], threads + 1)[1:-1]), [ng]])
    )
    from concurrent.futures import ThreadPoolExecutor

    def one(ab):
        a, b = bounds[ab[0]], bounds[ab[1]]
        return _k.serialize64_groups(rids[a:b], np.ascontiguousarray(bounds[ab[0] : ab[1] + 1] - a))

    with ThreadPoolExecutor(len(cuts) - 1) as ex:
        got = list(ex.map(one, zip(cuts[:-1], cuts[1:])))
    sizes = np.concatenate([g[1] for g in got])
    return (b"".join(g[0] for g in got) if join else [g[0] for g in got]), sizes


def body_parts(blobs, sizes: np.ndarray, after: np.ndarray, blocks) -> list:
    """A body laid out by the kernel ``pack_blocks`` as buffers in file order, without
    copying the bitmaps: ``blobs`` hold the bitmaps of ``sizes`` one after another
    (split anywhere between bitmaps), dictionary block j follows the bitmap of key
    ``after[j]``.  Joined, the parts are ``pack``'s body."""
    views = [memoryview(b).cast("B") for b in blobs]
    starts = np.cumsum([0] + [len(v) for v in views]).tolist()
    ends = np.cumsum(sizes, dtype=np.int64)
    if starts[-1] != (int(ends[-1]) if len(ends) else 0):
        raise ValueError(f"bitmap sizes add up to {int(ends[-1]) if len(ends) else 0}, the blobs hold {starts[-1]}")
    parts = []
    cur = bi = 0

    def take(upto):
        nonlocal cur, bi
        while cur < upto:
            while starts[bi + 1] <= cur:
                bi += 1
            e = min(upto, starts[bi + 1])
            parts.append(views[bi][cur - starts[bi] : e - starts[bi]])
            cur = e

    for j, cut in enumerate(ends[after].tolist() if len(after) else []):
        take(cut)
        parts.append(blocks[j])
    take(starts[-1])
    return parts


def build_file(key_codec: KeyCodec, arr: pa.Array, rids: np.ndarray, block_size: int, encoder):
    g = group_column(key_codec, arr, rids)
    blob, sizes = serialize_groups(g.rids, g.bounds)
    body, first_idx, boffs, blens = _k.pack(g.key_off, g.key_data, blob, sizes, block_size, encoder)
    return assemble(
        body,
        g.key_off,
        g.key_data,
        first_idx,
        boffs,
        blens,
        g.nulls,
        g.rids if g.nonnull is None else g.nonnull,
        len(sizes),
        encoder,
    )


def build_files(key_codec: KeyCodec, arr: pa.Array, rids: np.ndarray, block_size: int, encoder, max_records: int):
    """Files of at most ``max_records`` records each, as Java's rotating sorted index writer
    cuts them: the records in (nulls first, then key, then row id) order, a new file every
    ``max_records`` records (a key's row ids may continue in the next file).  Returns
    ``[(file bytes, meta bytes, record count)]``; one sort for all files."""
    return files_from_groups(group_column(key_codec, arr, rids), block_size, encoder, max_records)


def files_from_groups(groups: Groups, block_size: int, encoder, max_records: int, chunks: bool = False):
    """:func:`build_files` from the column's :class:`Groups`; with ``chunks`` each file's bytes
    are :class:`~paimon_fast.io.fsutil.Chunks` (its bitmaps never copied into one buffer)."""
    out = []
    for nulls, sub_rids, sub_bounds, sub_off, sub_data, records, whole in group_chunks(groups, max_records):
        if chunks:
            blobs, sizes = serialize_groups(sub_rids, sub_bounds, join=False)
            blocks, after, first_idx, boffs, blens = _k.pack_blocks(sub_off, sub_data, sizes, block_size, encoder)
            body = body_parts(blobs, sizes, after, blocks)
        else:
            blob, sizes = serialize_groups(sub_rids, sub_bounds)
            body, first_idx, boffs, blens = _k.pack(sub_off, sub_data, blob, sizes, block_size, encoder)
        data, meta = assemble(
            body,
            sub_off,
            sub_data,
            first_idx,
            boffs,
            blens,
            nulls,
            groups.nonnull if whole else sub_rids,
            len(sizes),
            encoder,
        )
        out.append((data, meta, records))
    return out


def group_chunks(groups: Groups, max_records: int):
    """Cut a column's :class:`Groups` into files of at most ``max_records`` records, as Java's
    rotating sorted index writer does: the records in (nulls first, then key, then row id)
    order, a new file every ``max_records`` records (a key's row ids may continue in the next
    file).  Yields ``(null row ids, row ids, bounds, key offsets, key bytes, records, whole)``
    per file, ``whole`` when the one file holds every record and the non-null row ids are
    known sorted (``groups.nonnull``)."""
    if max_records <= 0:
        raise OptionError(f"records per file must be positive, got {max_records}")
    null_rids, g_rids, bounds = groups.nulls, groups.rids, groups.bounds
    key_off, key_data = groups.key_off, groups.key_data
    n_null, n_nn = len(null_rids), len(g_rids)
    total = n_null + n_nn
    for s in range(0, total, max_records):
        e = min(total, s + max_records)
        nulls = null_rids[min(s, n_null) : min(e, n_null)]
        a, b = max(s - n_null, 0), max(e - n_null, 0)
        if b > a:
            g0 = int(np.searchsorted(bounds, a, "right")) - 1
            g1 = int(np.searchsorted(bounds, b - 1, "right")) - 1
            sub_bounds = np.clip(bounds[g0 : g1 + 2], a, b) - a
            sub_rids = np.ascontiguousarray(g_rids[a:b])
            sub_off = key_off[g0 : g1 + 2] - key_off[g0]
            sub_data = np.ascontiguousarray(key_data[key_off[g0] : key_off[g1 + 1]])
        else:
            sub_bounds = np.zeros(1, dtype=np.int64)
            sub_rids = g_rids[:0]
            sub_off = np.zeros(1, dtype=np.int64)
            sub_data = np.zeros(0, dtype=np.uint8)
        yield (
            nulls,
            sub_rids,
            np.ascontiguousarray(sub_bounds, dtype=np.int64),
            np.ascontiguousarray(sub_off),
            sub_data,
            e - s,
            s == 0 and e == total and groups.nonnull is not None,
        )


def serialize64_sorted_unique(values: np.ndarray) -> bytes:
    u = np.ascontiguousarray(values, dtype=np.uint64)
    if u.size > 1 and not (u[1:] > u[:-1]).all():
        lo = u.min()
        span = int(u.max() - lo) + 1
        if span <= 8 * u.size:  # dense (a row range's rows): a mask over the span, no sort
            mask = np.zeros(span, dtype=bool)
            mask[u - lo] = True
            u = np.flatnonzero(mask).astype(np.uint64) + lo
        else:
            u = _k.sort_unique_u64(u)
    blob, _ = _k.serialize64_groups(u, np.array([0, len(u)], dtype=np.int64))
    return blob


def assemble(body, key_off, key_data, first_idx, boffs, blens, null_rids, nn_rids, value_count, encoder):
    """Null / non-null bitmaps, index block, footer after the packed body; plus the meta.
    ``body`` is bytes (the file is then bytes) or a list of buffers (:func:`body_parts`: the
    file is then :class:`~paimon_fast.io.fsutil.Chunks`)."""
    chunked = isinstance(body, list)
    parts = list(body) if chunked else [body]
    pos = sum(len(p) for p in parts) if chunked else len(body)
    null_bm = serialize64_sorted_unique(null_rids)
    nn_bm = serialize64_sorted_unique(nn_rids)
    null_off, nn_off = pos, pos + len(null_bm)
    parts += [null_bm, nn_bm]
    pos += len(null_bm) + len(nn_bm)
    idx = bytearray(encode_varint(len(first_idx)))
    kd = key_data.tobytes() if isinstance(key_data, np.ndarray) else bytes(key_data)
    for g, o, ln in zip(first_idx.tolist(), boffs.tolist(), blens.tolist()):
        key = kd[key_off[g] : key_off[g + 1]]
        idx += encode_varint(len(key)) + key + encode_varint(o) + encode_varint(ln)
    stored = encoder(bytes(idx))
    index_off, index_len = pos, len(stored) - _codec.TRAILER
    parts.append(stored)
    parts.append(
        FOOTER_STRUCT.pack(
            null_off, len(null_bm), nn_off, len(nn_bm), index_off, index_len, value_count, VERSION, MAGIC
        )
    )
    if value_count:
        first = kd[key_off[0] : key_off[1]]
        last = kd[key_off[value_count - 1] : key_off[value_count]]
    else:
        first = last = None
    meta = SortedIndexFileMeta(first, last, len(null_rids) > 0).serialize()
    return (Chunks(parts) if chunked else b"".join(parts)), meta
