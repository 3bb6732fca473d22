"""Dynamic bucket hash index (``HASH_INDEX``): file format, primary-key hashes
and bucket assignment, as Java Paimon does them.

* File: big-endian int32 values, no header, in the iteration order of the
  fastutil ``IntOpenHashSet`` the maintainer filled (0 first, then slots from
  high to low; rehash rules in FORMAT_NOTES.md section 13).
* Value: ``BinaryRow.hashCode()`` of the primary-key row, computed here for
  whole Arrow batches by a kernel (:func:`binary_row_hash`).
* :class:`DynamicBucketIndex`: which bucket holds a key, and Paimon's
  ``HashBucketAssigner`` / ``PartitionIndex`` rule for new keys
  (``dynamic-bucket.target-row-num``, ``dynamic-bucket.max-buckets``).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from .._kernels import load as _load
from ..errors import IndexFormatError, UnsupportedTypeError
from ..io.source import as_source
from ..core.types import DataType, binary_buffers, fixed_values, to_arrow_array, validity_mask

_k = _load("hashindex")

DEFAULT_TARGET_ROW_NUM = 2_000_000  # dynamic-bucket.target-row-num
DEFAULT_EXPECTED = 16  # new IntHashSet()

K_FIXED, K_VAR, K_DEC_BIG, K_TS_BIG = 0, 1, 2, 3


# ---------------------------------------------------------------- file


def read_hash_index(data) -> np.ndarray:
    """All hashes of a hash index file (bytes / path / file), int32 in file order."""
    src = as_source(data)
    if src.size % 4:
        raise IndexFormatError(f"hash index file size {src.size} is not a multiple of 4", src.size - src.size % 4)
    raw = bytes(src.read_at(0, src.size, "hash index"))
    return np.frombuffer(raw, dtype=">i4").astype(np.int32)


def write_int_file(values) -> bytes:
    """``IntFileUtils.writeInts``: the values as big-endian int32, in the given order."""
    return np.asarray(values, dtype=np.int64).astype(">i4").tobytes()


def int_hash_set_order(hashes, expected: int | None = None) -> np.ndarray:
    """Iteration order of fastutil ``IntOpenHashSet(expected)`` after adding
    ``hashes`` in order (duplicates ignored); ``expected`` defaults to 16."""
    h = np.ascontiguousarray(
        np.asarray(hashes, dtype=np.int64).astype(np.int32)
        if np.asarray(hashes).dtype != np.int32
        else np.asarray(hashes),
        dtype=np.int32,
    )
    return _k.int_set_order(h, DEFAULT_EXPECTED if expected is None else int(expected))


def write_hash_index(hashes, previous_count: int | None = None) -> bytes:
    """Bytes of the hash index file Java writes for ``hashes`` added in order.

    Fresh bucket: ``hashes`` are the new key hashes (``new IntHashSet()``).
    Bucket that already has a file: pass the old file's values (file order)
    followed by the new hashes, and ``previous_count`` = the old file's row
    count; the set then starts as ``new IntHashSet(previous_count)`` as Java's
    index maintainer does.
    """
    order = int_hash_set_order(hashes, previous_count)
    return order.astype(">i4").tobytes()


def update_hash_index(previous, new_hashes) -> bytes:
    """New file of a bucket whose current file is ``previous`` (bytes / path /
    int array) after ``new_hashes`` were added."""
    old = previous if isinstance(previous, np.ndarray) else read_hash_index(previous)
    return write_hash_index(
        np.concatenate([old.astype(np.int32), np.asarray(new_hashes, dtype=np.int32)]), previous_count=len(old)
    )


# ---------------------------------------------------------------- BinaryRow hash


def _columns(data, n_types):
    if isinstance(data, (pa.Table, pa.RecordBatch)):
        cols = [data.column(i) for i in range(data.num_columns)]
    elif isinstance(data, dict):
        cols = list(data.values())
    else:
        cols = list(data)
    if len(cols) != n_types:
        raise ValueError(f"{len(cols)} key columns given for {n_types} key types")
    return cols


def _nulls(arr: pa.Array):
    v = validity_mask(arr)
    if v is None:
        return None
    return np.ascontiguousarray(~v).view(np.uint8)


def _raw(v: np.ndarray):
    """(width, uint8 view) of a fixed-width numpy array (contiguous)."""
    v = np.ascontiguousarray(v)
    return v.dtype.itemsize, v.view(np.uint8)


def _field_spec(arr: pa.Array, dt: DataType):
    """(kind, width, a, b, data, nulls) for the kernel; slot bytes as Java writes them."""
    r = dt.root
    nulls = _nulls(arr)
    if r in ("CHAR", "VARCHAR", "STRING") or dt.is_binary:
        off, data = binary_buffers(arr)
        return (K_VAR, 0, np.ascontiguousarray(off), None, np.ascontiguousarray(data), nulls)
    if r in ("BOOLEAN", "TINYINT", "SMALLINT", "INT", "DATE", "BIGINT"):
        w, raw = _raw(fixed_values(arr))
        return (K_FIXED, w, None, None, raw, nulls)
    if r == "TIME":
        t = arr.type
        v = fixed_values(arr)
        if t.unit != "ms":
            v = v.astype(np.int64)
            v = v * 1000 if t.unit == "s" else np.floor_divide(v, 1000 if t.unit == "us" else 1_000_000)
            v = v.astype(np.int32)
        w, raw = _raw(v.astype(np.int32, copy=False))
        return (K_FIXED, w, None, None, raw, nulls)
    if r in ("FLOAT", "DOUBLE"):
        w, raw = _raw(fixed_values(arr))  # raw IEEE bits, as MemorySegment.putFloat/putDouble
        return (K_FIXED, w, None, None, raw, nulls)
    if r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        t = arr.type
        v = fixed_values(arr).astype(np.int64)
        ns_per = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}[t.unit]
        if ns_per >= 1_000_000:
            millis = v * (ns_per // 1_000_000)
            nanos = np.zeros_like(v)
        else:
            per_ms = 1_000_000 // ns_per
            millis = np.floor_divide(v, per_ms)
            nanos = (v - millis * per_ms) * ns_per
        if (dt.precision or 0) <= 3:
            w, raw = _raw(millis)
            return (K_FIXED, w, None, None, raw, nulls)
        return (K_TS_BIG, 0, np.ascontiguousarray(millis), np.ascontiguousarray(nanos), None, nulls)
    if r == "DECIMAL":
        p, s = dt.precision, dt.scale
        if not pa.types.is_decimal128(arr.type) or arr.type.scale != s:
            arr = arr.cast(pa.decimal128(max(p, arr.type.precision if pa.types.is_decimal(arr.type) else p), s))
        raw = np.frombuffer(arr.buffers()[1], dtype=np.int64, count=2 * (arr.offset + len(arr)))[2 * arr.offset :]
        lo, hi = np.ascontiguousarray(raw[0::2]), np.ascontiguousarray(raw[1::2])
        if p <= 18:
            w, b = _raw(lo)
            return (K_FIXED, w, None, None, b, nulls)
        return (K_DEC_BIG, 0, lo, hi, None, nulls)
    raise UnsupportedTypeError(f"{dt} is not supported as a primary-key field for the hash index")


def binary_row_hash(data, types) -> np.ndarray:
    """``BinaryRow.hashCode()`` of each key row, as int32.

    ``data``: a pyarrow Table / RecordBatch (columns in key order), or a list of
    columns (Arrow arrays, numpy arrays or Python sequences); ``types``: the
    Paimon types of the key fields (``["INT", "STRING"]``).  Supports integers,
    BOOLEAN, FLOAT/DOUBLE, DATE, TIME, TIMESTAMP(_LTZ) of any precision,
    DECIMAL (compact and not), CHAR/VARCHAR/STRING and BINARY/VARBINARY/BYTES,
    nulls included.
    """
    dts = [DataType.parse(t) for t in types]
    cols = _columns(data, len(dts))
    arrs = [to_arrow_array(c, dt) for c, dt in zip(cols, dts)]
    n = len(arrs[0]) if arrs else 0
    if any(len(a) != n for a in arrs):
        raise ValueError("key columns have different lengths")
    specs = [_field_spec(a, dt) for a, dt in zip(arrs, dts)]
    return _k.binary_row_hash(n, specs)


# ---------------------------------------------------------------- dynamic bucket index


class _JavaIntHashMapOrder:
    """Iteration order of a ``java.util.HashMap<Integer, Long>`` (buckets by
    ``(h ^ h >>> 16) & (cap - 1)``, insertion order inside a bin)."""

    def __init__(self):
        self.cap = 16
        self.seq = {}
        self.counter = 0

    def check_resize(self):
        """What compute()/computeIfAbsent() do first: grow when size > threshold."""
        if len(self.seq) > self.cap * 3 // 4:
            self.cap *= 2

    def compute(self, key):
        self.check_resize()
        if key not in self.seq:
            self.seq[key] = self.counter
            self.counter += 1

    def put(self, key):
        """put(): insert, then grow when the new size exceeds the threshold."""
        if key not in self.seq:
            self.seq[key] = self.counter
            self.counter += 1
            if len(self.seq) > self.cap * 3 // 4:
                self.cap *= 2

    def remove(self, key):
        self.seq.pop(key, None)

    def order(self):
        def slot(k):
            h = k & 0xFFFFFFFF
            return ((h ^ (h >> 16)) & (self.cap - 1), self.seq[k])

        return sorted(self.seq, key=slot)


class DynamicBucketIndex:
    """A partition's dynamic-bucket index: key hash -> bucket.

    Build from the partition's hash index files with :meth:`from_files`
    (``[(bucket, bytes | path | int array), ...]``).  :meth:`lookup` answers
    which bucket holds each key (-1 = new key); :meth:`assign` places new keys
    the way Java's ``PartitionIndex.assign`` does (fill non-full buckets in
    ``HashMap`` order up to ``target_row_num``, then open the lowest free bucket
    id; beyond ``max_buckets`` pick a random existing bucket, seeded by
    ``seed``), and :meth:`hash_index_files` gives each changed bucket's new file.
    Single assigner (``numAssigners = 1``) semantics.
    """

    def __init__(self, target_row_num: int = DEFAULT_TARGET_ROW_NUM, max_buckets: int = -1, seed=None):
        self.target_row_num = int(target_row_num)
        self.max_buckets = int(max_buckets)
        self._keys = np.zeros(0, np.int32)  # sorted hashes
        self._buckets = np.zeros(0, np.int16)
        self._new_keys: list[np.ndarray] = []
        self._new_buckets: list[np.ndarray] = []
        self._files: dict[int, np.ndarray] = {}  # bucket -> values in its current file
        self._added: dict[int, list] = {}  # bucket -> new hashes (assign order)
        self._counts: dict[int, int] = {}  # bucket -> row count
        self._non_full = _JavaIntHashMapOrder()
        self._total = []  # all bucket ids, in creation order
        self._upper_bound_reached = False
        self._rng = np.random.default_rng(seed)

    @classmethod
    def from_files(cls, files, target_row_num: int = DEFAULT_TARGET_ROW_NUM, max_buckets: int = -1, seed=None):
        """Load ``[(bucket, hash index file), ...]`` (Java ``PartitionIndex.loadIndex``)."""
        self = cls(target_row_num, max_buckets, seed)
        keys, buckets = [], []
        for bucket, f in files:
            bucket = int(bucket)
            if not 0 <= bucket <= 32767:
                raise ValueError(f"bucket {bucket} outside 0..32767")
            vals = f if isinstance(f, np.ndarray) else read_hash_index(f)
            vals = vals.astype(np.int32)
            self._files[bucket] = vals
            keys.append(vals)
            buckets.append(np.full(len(vals), bucket, np.int16))
            if len(vals) == 0:
                continue  # Java counts buckets per hash read: an empty file adds nothing
            self._non_full.compute(bucket)  # first compute() call of this file
            if len(vals) > 1:
                self._non_full.check_resize()  # the following calls only may resize
            self._counts[bucket] = self._counts.get(bucket, 0) + len(vals)
        self._total = list(self._non_full.order())
        if keys:
            k = np.concatenate(keys)
            b = np.concatenate(buckets)
            # Int2ShortHashMap.put: a later file wins for a repeated hash
            order = np.argsort(k, kind="stable")
            k, b = k[order], b[order]
            last = np.ones(len(k), bool)
            last[:-1] = k[1:] != k[:-1]
            self._keys, self._buckets = k[last], b[last]
        return self

    def _flush(self):
        if self._new_keys:
            k = np.concatenate([self._keys] + self._new_keys)
            b = np.concatenate([self._buckets] + self._new_buckets)
            order = np.argsort(k, kind="stable")
            self._keys, self._buckets = k[order], b[order]
            self._new_keys, self._new_buckets = [], []

    def lookup_hashes(self, hashes) -> np.ndarray:
        """Bucket of each key hash (int32), -1 when the key is not in the index."""
        self._flush()
        h = np.asarray(hashes, dtype=np.int32)
        if not len(self._keys):
            return np.full(h.shape, -1, np.int32)
        i = np.searchsorted(self._keys, h)
        i = np.minimum(i, len(self._keys) - 1)
        found = self._keys[i] == h
        return np.where(found, self._buckets[i].astype(np.int32), -1).astype(np.int32)

    def lookup(self, keys, types) -> np.ndarray:
        """Bucket of each primary key (Arrow table / columns + key types), -1 if new."""
        return self.lookup_hashes(binary_row_hash(keys, types))

    def _new_bucket(self):
        limit = 32767 if self.max_buckets == -1 else self.max_buckets
        if not self._upper_bound_reached:
            used = set(self._total)
            for i in range(limit):
                if i not in used:
                    return i
            if self.max_buckets == -1:
                raise RuntimeError(
                    f"Too more bucket {limit - 1}, you should increase target bucket row number {self.target_row_num}."
                )
            self._upper_bound_reached = True
        return None

    def assign_hashes(self, hashes) -> np.ndarray:
        """Bucket of each key hash, assigning new keys (in order) like Java."""
        h = np.asarray(hashes, dtype=np.int32).ravel()
        out = self.lookup_hashes(h)
        new_mask = out < 0
        if not new_mask.any():
            return out
        cand = h[new_mask]
        uniq, first = np.unique(cand, return_index=True)
        new = uniq[np.argsort(first, kind="stable")]  # distinct new hashes, first-seen order
        assigned = np.empty(len(new), np.int32)
        i = 0
        while i < len(new):
            bucket = None
            for b in self._non_full.order():
                if self._counts[b] < self.target_row_num:
                    bucket = b
                    break
                self._non_full.remove(b)
            if bucket is None:
                bucket = self._new_bucket()
                if bucket is None:  # upper bound: random existing bucket for each key
                    picks = self._rng.integers(0, len(self._total), len(new) - i)
                    chosen = np.asarray(self._total, np.int32)[picks]
                    assigned[i:] = chosen
                    for b in np.unique(chosen).tolist():
                        self._counts[b] = self._counts.get(b, 0) + int((chosen == b).sum())
                    i = len(new)
                    break
                self._non_full.put(bucket)
                self._total.append(bucket)
                self._counts[bucket] = 0
            take = min(self.target_row_num - self._counts[bucket], len(new) - i)
            assigned[i : i + take] = bucket
            self._counts[bucket] += take
            i += take
        for b in np.unique(assigned).tolist():
            self._added.setdefault(b, []).append(new[assigned == b])
        self._new_keys.append(new)
        self._new_buckets.append(assigned.astype(np.int16))
        self._flush()
        return self.lookup_hashes(h)

    def assign(self, keys, types) -> np.ndarray:
        """Bucket of each primary key, assigning new keys (see :meth:`assign_hashes`)."""
        return self.assign_hashes(binary_row_hash(keys, types))

    @property
    def buckets(self) -> dict:
        """bucket -> number of keys."""
        return dict(self._counts)

    def hash_index_files(self) -> dict:
        """bucket -> bytes of its new hash index file, for buckets that got keys
        (Java's index maintainer: restored file values first, then new hashes)."""
        out = {}
        for b, parts in self._added.items():
            new = np.concatenate(parts)
            if b in self._files:
                out[b] = update_hash_index(self._files[b], new)
            else:
                out[b] = write_hash_index(new)
        return out
