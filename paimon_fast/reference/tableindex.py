"""Plain Python / numpy twins of the table-index kernels (``_kernels/dv.pyx``,
``_kernels/hashindex.pyx``): the oracle in tests, the baseline in benchmarks.

Nothing here is fast; everything here is meant to be obviously right.
"""

from __future__ import annotations

import decimal
import struct

import numpy as np

from paimon_fast.reference import roaring

MAGIC32 = 1581511376
MAGIC64 = 1681511377


# ---------------------------------------------------------------- deletion vectors


def dv_build(positions) -> np.ndarray:
    """Sorted unique uint64 positions."""
    return np.unique(np.asarray(positions, dtype=np.int64)).astype(np.uint64)


def dv_serialize(sorted_positions, bitmap64: bool, nkeys: int | None = None) -> bytes:
    """The bin of a deletion vector with these sorted unique positions."""
    s = np.asarray(sorted_positions, dtype=np.uint64)
    if not bitmap64:
        return struct.pack(">i", MAGIC32) + roaring.serialize(s.astype(np.uint32).tolist())
    if nkeys is None:
        nkeys = int(s[-1] >> np.uint64(32)) + 1 if len(s) else 0
    out = [struct.pack("<iQ", MAGIC64, nkeys)]
    hi = s >> np.uint64(32)
    for key in range(nkeys):
        lo = (s[hi == key] & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        out.append(struct.pack("<I", key) + roaring.serialize(lo.tolist()))
    return b"".join(out)


def dv_deserialize(b: bytes):
    """(bitmap64, sorted uint64 positions) of a bin (trusted input)."""
    if struct.unpack_from(">i", b, 0)[0] == MAGIC32:
        vals = roaring.deserialize(b, 4)
        return False, np.array(vals, dtype=np.uint64)
    assert struct.unpack_from("<i", b, 0)[0] == MAGIC64
    (count,) = struct.unpack_from("<Q", b, 4)
    p = 12
    parts = []
    for _ in range(count):
        (key,) = struct.unpack_from("<I", b, p)
        vals, size = roaring.deserialize(b, p + 4, with_size=True)
        parts.append(np.array(vals, dtype=np.uint64) | (np.uint64(key) << np.uint64(32)))
        p += 4 + size
    return True, (np.concatenate(parts) if parts else np.zeros(0, np.uint64))


def is_deleted_batch(sorted_positions, probes) -> np.ndarray:
    p = np.asarray(probes, dtype=np.int64)
    s = np.asarray(sorted_positions, dtype=np.uint64)
    out = np.zeros(p.shape, bool)
    ok = p >= 0
    out[ok] = np.isin(p[ok].astype(np.uint64), s)
    return out


def keep_mask(sorted_positions, start: int, n: int) -> np.ndarray:
    rows = np.arange(start, start + n, dtype=np.uint64)
    return ~np.isin(rows, np.asarray(sorted_positions, dtype=np.uint64))


def filter_batch(sorted_positions, batch, start: int):
    import pyarrow as pa

    return batch.filter(pa.array(keep_mask(sorted_positions, start, batch.num_rows)))


# ---------------------------------------------------------------- BinaryRow hash


def _mix(h, k):
    k = (k * 0xCC9E2D51) & 0xFFFFFFFF
    k = ((k << 15) | (k >> 17)) & 0xFFFFFFFF
    k = (k * 0x1B873593) & 0xFFFFFFFF
    h ^= k
    h = ((h << 13) | (h >> 19)) & 0xFFFFFFFF
    return (h * 5 + 0xE6546B64) & 0xFFFFFFFF


def murmur_words(data: bytes, seed: int = 42) -> int:
    """Paimon ``MurmurHashUtils.hashBytesByWords`` (length a multiple of 4), as int32."""
    assert len(data) % 4 == 0
    h = seed
    for (w,) in struct.iter_unpack("<I", data):
        h = _mix(h, w)
    h ^= len(data)
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & 0xFFFFFFFF
    h ^= h >> 16
    return h - (1 << 32) if h >= 1 << 31 else h


def _unscaled(v, scale):
    ctx = decimal.Context(prec=100)
    d = decimal.Decimal(v).scaleb(scale, context=ctx)
    return int(d.to_integral_value(rounding=decimal.ROUND_HALF_UP, context=ctx))


def _to_byte_array(x: int) -> bytes:
    """Java BigInteger.toByteArray()."""
    n = (x.bit_length() if x >= 0 else (~x).bit_length()) // 8 + 1
    return x.to_bytes(n, "big", signed=True)


def binary_row_bytes(row, types) -> bytes:
    """Java BinaryRow bytes of one key row.

    Values: int for integers / DATE (days) / TIME (millis of day); bool; float;
    str; bytes; ``decimal.Decimal`` or str for DECIMAL; ``(millis,
    nano_of_milli)`` for timestamps; None for null.
    """
    from paimon_fast.core.types import DataType

    dts = [DataType.parse(t) for t in types]
    nf = len(dts)
    nbytes = ((nf + 63 + 8) // 64) * 8
    head = bytearray(nbytes)
    slots = bytearray(8 * nf)
    var = bytearray()
    fixed = nbytes + 8 * nf

    def add_var(b: bytes, reserve: int | None = None):
        off = fixed + len(var)
        size = reserve if reserve is not None else (len(b) + 7) // 8 * 8
        var.extend(b + bytes(size - len(b)))
        return off

    for i, (v, dt) in enumerate(zip(row, dts)):
        r = dt.root
        slot = 0
        if v is None:
            head[(i + 8) >> 3] |= 1 << ((i + 8) & 7)
            if r == "DECIMAL" and dt.precision > 18:
                slot = add_var(b"", 16) << 32
            elif r in ("TIMESTAMP", "TIMESTAMP_LTZ") and dt.precision > 3:
                slot = add_var(b"", 8) << 32
        elif r in ("CHAR", "VARCHAR", "STRING") or dt.is_binary:
            b = v.encode("utf-8") if isinstance(v, str) else bytes(v)
            if len(b) <= 7:
                slot = int.from_bytes(b, "little") | ((0x80 | len(b)) << 56)
            else:
                slot = (add_var(b) << 32) | len(b)
        elif r == "BOOLEAN":
            slot = 1 if v else 0
        elif r in ("TINYINT", "SMALLINT", "INT", "DATE", "TIME"):
            width = {"TINYINT": 1, "SMALLINT": 2}.get(r, 4)
            slot = v & ((1 << (8 * width)) - 1)
        elif r == "BIGINT":
            slot = v & (2**64 - 1)
        elif r == "FLOAT":
            slot = struct.unpack("<I", struct.pack("<f", v))[0]
        elif r == "DOUBLE":
            slot = struct.unpack("<Q", struct.pack("<d", v))[0]
        elif r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
            millis, nanos = v
            if dt.precision <= 3:
                slot = millis & (2**64 - 1)
            else:
                slot = (add_var(struct.pack("<q", millis)) << 32) | nanos
        elif r == "DECIMAL":
            u = _unscaled(v, dt.scale)
            if dt.precision <= 18:
                slot = u & (2**64 - 1)
            else:
                b = _to_byte_array(u)
                slot = (add_var(b, 16) << 32) | len(b)
        else:
            raise TypeError(f"unsupported key type {dt}")
        slots[8 * i : 8 * i + 8] = struct.pack("<Q", slot)
    return bytes(head) + bytes(slots) + bytes(var)


def binary_row_hash(rows, types) -> np.ndarray:
    """``BinaryRow.hashCode()`` of each row (a list of tuples)."""
    return np.array([murmur_words(binary_row_bytes(r, types)) for r in rows], dtype=np.int32)


# ---------------------------------------------------------------- fastutil IntOpenHashSet


def _phi_mix(x):
    h = (x * 0x9E3779B9) & 0xFFFFFFFF
    return h ^ (h >> 16)


def _array_size(expected):
    need = -(-expected * 4 // 3)
    s = 1
    while s < need:
        s <<= 1
    return max(2, s)


def int_set_order(values, expected: int = 16) -> list:
    """fastutil IntOpenHashSet iteration order after adding values in order."""
    n = _array_size(expected)
    key = [0] * n
    max_fill = min(-(-n * 3 // 4), n - 1)
    size = 0
    has_zero = False
    for v in values:
        v = int(v)
        if v == 0:
            if has_zero:
                continue
            has_zero = True
        else:
            pos = _phi_mix(v) & (n - 1)
            while key[pos] != 0 and key[pos] != v:
                pos = (pos + 1) & (n - 1)
            if key[pos] == v:
                continue
            key[pos] = v
        size += 1
        if size - 1 >= max_fill:
            nn = _array_size(size + 1)
            nk = [0] * nn
            for j in range(n - 1, -1, -1):
                if key[j]:
                    pos = _phi_mix(key[j]) & (nn - 1)
                    while nk[pos]:
                        pos = (pos + 1) & (nn - 1)
                    nk[pos] = key[j]
            key, n = nk, nn
            max_fill = min(-(-n * 3 // 4), n - 1)
    return ([0] if has_zero else []) + [k for k in reversed(key) if k]
