"""The orders every table kind's ``optimize`` clusters rows in (:meth:`ParquetDataset.optimize`,
:func:`paimon_fast.paimon.optimize`), named as Paimon's sort compaction names them (``order_strategy``):

* ``order``: sorted by the columns, the first most significant, ascending, nulls first (Paimon's
  Spark ``OrderSorter``: ``repartitionByRange`` then ``sortWithinPartitions`` of the columns);
* ``zorder``: sorted by the Z-value, the bits of each column's 8 ordered bytes interleaved, most
  significant first (Paimon's ``ZIndexer`` / ``ZOrderByteUtils``): integers, dates and times with
  their sign bit flipped, timestamps as epoch milliseconds likewise, floating point as Paimon
  transforms its IEEE bits (``bits ^ ((bits >> 31) | MIN_VALUE)``), booleans as ``0x81`` / ``0``,
  strings and binaries as their first 8 bytes zero-filled (Paimon's
  ``zorder.var-length-contribution`` default; other widths are refused), decimals as their
  unscaled two's complement bytes truncated or zero-filled to 8, nulls as 8 zero bytes;
* ``hilbert``: sorted by the position on the Hilbert curve of 63 bits per column (Paimon's
  ``HilbertIndexer``, David Moten's ``HilbertCurve``: Skilling's transform), each column a
  64-bit integer of which the curve takes the low 63 bits: integers as they are (TINYINT as its
  unsigned byte), floating point as its IEEE bits, booleans 1 / 0, strings and binaries as their
  first 8 bytes read as a big-endian integer (shorter ones right-aligned), dates and times as
  integers, timestamps as epoch milliseconds, decimals as their integer part, nulls as
  ``Long.MAX_VALUE``.  At least two columns, as Paimon requires.

The keys are computed column by column with numpy and the kernels of
:mod:`paimon_fast._kernels.order` (bit interleaving, the Hilbert transform, a stable radix
argsort of the key words); :func:`sort_permutation` gives the row order.  Rows with equal keys
keep their order (stable).
"""

from __future__ import annotations

from typing import List, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .._kernels import load
from .types import sort_indices
from ..errors import OptionError, UnsupportedTypeError

STRATEGIES = ("order", "zorder", "hilbert")
SIGN = np.uint64(1 << 63)
JAVA_NAN_BITS = np.uint64(0x7FF8000000000000)
LONG_MAX = np.uint64((1 << 63) - 1)
VAR_LENGTH_CONTRIBUTION = 8  # Paimon's zorder.var-length-contribution default (bytes)


def _k():
    return load("order")


def check_strategy(strategy: str, columns: Sequence[str]) -> str:
    s = str(strategy).lower()
    if s not in STRATEGIES:
        raise OptionError(f"unknown clustering strategy {strategy!r}: one of {', '.join(STRATEGIES)}")
    if not columns:
        raise OptionError("cluster_by needs at least one column")
    if len(set(columns)) != len(columns):
        raise OptionError(f"cluster_by names a column twice: {list(columns)}")
    if s == "hilbert" and len(columns) < 2:
        raise OptionError("the hilbert strategy needs at least two columns (as Paimon's)")
    return s


def check_types(schema: pa.Schema, columns: Sequence[str], strategy: str) -> None:
    """Raise for a column the strategy cannot order (naming it and its type)."""
    from ..errors import ColumnNotFoundError

    for c in columns:
        if c not in schema.names:
            raise ColumnNotFoundError(c, schema.names)
        t = schema.field(c).type
        if _family(t) is None or (strategy == "order" and pa.types.is_nested(t)):
            raise UnsupportedTypeError(f"column {c!r} of type {t} cannot be clustered by ({strategy})")


def _family(t: pa.DataType):
    if pa.types.is_dictionary(t):
        return _family(t.value_type)
    if pa.types.is_boolean(t):
        return "bool"
    if pa.types.is_integer(t):
        return "uint64" if t == pa.uint64() else "int"
    if pa.types.is_floating(t):
        return "float"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return "bytes"
    if pa.types.is_fixed_size_binary(t):
        return "bytes"
    if pa.types.is_date(t):
        return "date"
    if pa.types.is_time(t):
        return "time"
    if pa.types.is_timestamp(t):
        return "timestamp"
    if pa.types.is_decimal(t):
        return "decimal"
    return None


def _plain(arr) -> pa.Array:
    """One contiguous array (dictionary-decoded)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    return arr


def _valid(arr: pa.Array):
    return None if arr.null_count == 0 else np.asarray(arr.is_valid()).astype(bool)


def _int64(arr: pa.Array) -> np.ndarray:
    """The values as int64 (nulls as 0)."""
    t = arr.type
    if pa.types.is_boolean(t):
        return np.asarray(arr.fill_null(False)).astype(np.int64)
    if pa.types.is_date32(t) or pa.types.is_time32(t):
        return arr.cast(pa.int32()).fill_null(0).to_numpy().astype(np.int64)
    if pa.types.is_date64(t):  # milliseconds -> days, as Paimon's DATE
        return np.floor_divide(arr.cast(pa.int64()).fill_null(0).to_numpy(), 86_400_000)
    if pa.types.is_time64(t):  # -> milliseconds of the day, as Paimon's TIME
        per = {"us": 1000, "ns": 1_000_000}[t.unit]
        return np.floor_divide(arr.cast(pa.int64()).fill_null(0).to_numpy(), per)
    if pa.types.is_timestamp(t):  # -> epoch milliseconds (Timestamp.getMillisecond: floor)
        per = {"s": None, "ms": 1, "us": 1000, "ns": 1_000_000}[t.unit]
        v = arr.cast(pa.int64()).fill_null(0).to_numpy()
        return v * 1000 if per is None else np.floor_divide(v, per)
    if t == pa.uint64():
        v = arr.fill_null(0).to_numpy()
        return v.view(np.int64)
    return arr.cast(pa.int64()).fill_null(0).to_numpy()


def _double_bits(arr: pa.Array) -> np.ndarray:
    """Java's ``Double.doubleToLongBits`` of the values (floats widened; every NaN canonical)."""
    v = arr.cast(pa.float64()).fill_null(0.0).to_numpy().astype(np.float64)
    bits = v.view(np.uint64).copy()
    bits[np.isnan(v)] = JAVA_NAN_BITS
    return bits


def _bytes_words(arr: pa.Array, right: bool, null_word: int) -> np.ndarray:
    t = arr.type
    if pa.types.is_fixed_size_binary(t):
        arr = arr.cast(pa.binary())
    elif pa.types.is_string(t):
        arr = arr.cast(pa.binary())
    elif pa.types.is_large_string(t):
        arr = arr.cast(pa.large_binary())
    bufs = arr.buffers()
    n = len(arr)
    if pa.types.is_large_binary(arr.type):
        offsets = np.frombuffer(bufs[1], dtype=np.int64)[arr.offset : arr.offset + n + 1]
    else:
        offsets = np.frombuffer(bufs[1], dtype=np.int32)[arr.offset : arr.offset + n + 1].astype(np.int64)
    data = bufs[2] if bufs[2] is not None else b"\0"
    valid = None if arr.null_count == 0 else np.asarray(arr.is_valid()).astype(np.uint8)
    return _k().first_bytes(offsets, data, valid, n, VAR_LENGTH_CONTRIBUTION, right, np.uint64(null_word))


def _decimal_parts(arr: pa.Array):
    """``(unscaled as Python-free (hi int64, lo uint64) arrays, scale)`` of a decimal128 array."""
    t = arr.type
    if not isinstance(t, pa.Decimal128Type):
        arr = arr.cast(pa.decimal128(min(t.precision, 38), t.scale))
    raw = np.frombuffer(arr.buffers()[1], dtype=np.uint64)[2 * arr.offset : 2 * (arr.offset + len(arr))]
    lo, hi = raw[0::2].copy(), raw[1::2].view(np.int64).copy()
    if arr.null_count:
        ok = _valid(arr)
        lo[~ok], hi[~ok] = 0, 0
    return hi, lo, arr.type.scale


def _decimal_z(arr: pa.Array) -> np.ndarray:
    """Java's ``Decimal.toUnscaledBytes`` (BigInteger.toByteArray: the shortest two's complement)
    truncated or zero-filled to 8 bytes, as a big-endian word."""
    hi, lo, _ = _decimal_parts(arr)
    out = np.empty(len(lo), dtype=np.uint64)
    for i in range(len(lo)):  # byte lengths differ per value; decimals are rarely clustered by
        v = (int(hi[i]) << 64) | int(lo[i])
        length = (v if v >= 0 else ~v).bit_length() // 8 + 1
        b = v.to_bytes(length, "big", signed=True)[:8]
        out[i] = int.from_bytes(b.ljust(8, b"\0"), "big")
    return out


def _decimal_h(arr: pa.Array) -> np.ndarray:
    """``BigDecimal.longValue()``: the integer part (toward zero), wrapped to 64 bits."""
    hi, lo, scale = _decimal_parts(arr)
    out = np.empty(len(lo), dtype=np.uint64)
    p = 10**scale
    for i in range(len(lo)):
        v = (int(hi[i]) << 64) | int(lo[i])
        q = abs(v) // p
        out[i] = (q if v >= 0 else -q) & ((1 << 64) - 1)
    return out


def z_word(col) -> np.ndarray:
    """A column's 8 ordered bytes of Paimon's z-order, as big-endian words (module docstring)."""
    arr = _plain(col)
    fam = _family(arr.type)
    valid = _valid(arr)
    if fam == "bytes":
        return _bytes_words(arr, right=False, null_word=0)
    if fam == "decimal":
        w = _decimal_z(arr)
    elif fam == "float":
        bits = _double_bits(arr).view(np.int64)
        w = (bits ^ ((bits >> np.int64(31)) | np.int64(-(1 << 63)))).view(np.uint64)
    elif fam == "bool":
        w = np.where(np.asarray(arr.fill_null(False)), np.uint64(0x81 << 56), np.uint64(0))
    elif fam in ("int", "uint64", "date", "time", "timestamp"):
        w = _int64(arr).view(np.uint64) ^ SIGN
    else:
        raise UnsupportedTypeError(f"type {arr.type} cannot be z-ordered")
    if valid is not None:
        w = np.where(valid, w, np.uint64(0))
    return np.ascontiguousarray(w, dtype=np.uint64)


def h_word(col) -> np.ndarray:
    """A column's 64-bit value on Paimon's Hilbert curve (module docstring)."""
    arr = _plain(col)
    fam = _family(arr.type)
    valid = _valid(arr)
    if fam == "bytes":
        return _bytes_words(arr, right=True, null_word=int(LONG_MAX))
    if fam == "decimal":
        w = _decimal_h(arr)
    elif fam == "float":
        w = _double_bits(arr)
    elif fam == "bool":
        w = np.asarray(arr.fill_null(False)).astype(np.uint64)
    elif fam in ("int", "uint64", "date", "time", "timestamp"):
        v = _int64(arr)
        if arr.type == pa.int8():
            v = v & 0xFF  # ConvertBinaryUtil.convertBytesToLong of the one byte
        w = v.view(np.uint64)
    else:
        raise UnsupportedTypeError(f"type {arr.type} cannot be ordered on a Hilbert curve")
    if valid is not None:
        w = np.where(valid, w, LONG_MAX)
    return np.ascontiguousarray(w, dtype=np.uint64)


def _float_words(arr: pa.Array) -> np.ndarray:
    """A float column's words (nulls as 0.0): a negative value's bits all flipped, a positive
    value's sign bit set, so they sort as the numbers, -0.0 below 0.0, every NaN above +inf (as
    Spark orders them).  In place, a pass a step: 1e7 values in ~0.1 s (five numpy temporaries
    took 1.3 s in an optimize)."""
    if not pa.types.is_float64(arr.type):
        arr = arr.cast(pa.float64())
    if arr.null_count:
        arr = arr.fill_null(0.0)
    v = arr.to_numpy(zero_copy_only=False)
    bits = v.view(np.uint64)
    w = bits.view(np.int64) >> 63  # all ones where negative (a new array: v is not written)
    w = w.view(np.uint64)
    w |= SIGN
    w ^= bits
    nan = np.isnan(v)
    if nan.any():
        w[nan] = JAVA_NAN_BITS | SIGN
    return w


def _order_words(col) -> List[np.ndarray]:
    """Words that sort as the column ascending with nulls first, or None (no fixed-width key)."""
    arr = _plain(col)
    fam = _family(arr.type)
    valid = _valid(arr)
    if fam == "float":
        w = _float_words(arr)
    elif fam in ("int", "date", "time", "timestamp", "bool"):
        w = _int64(arr).view(np.uint64) ^ SIGN
    elif fam == "uint64":
        w = arr.fill_null(0).to_numpy().astype(np.uint64)
    else:
        return None
    if valid is None:
        return [np.ascontiguousarray(w)]
    return [valid.astype(np.uint64), np.ascontiguousarray(np.where(valid, w, np.uint64(0)))]


def cluster_keys(table: pa.Table, columns: Sequence[str], strategy: str):
    """The key words ``(words, rows)`` whose ascending order is the strategy's order of the rows,
    or None for ``order`` over a column without a fixed-width key (strings, decimals)."""
    strategy = check_strategy(strategy, columns)
    n = table.num_rows
    if strategy == "order":
        words = []
        for c in columns:
            w = _order_words(table.column(c))
            if w is None:
                return None
            words += w
        return np.stack(words) if words else np.zeros((0, n), np.uint64)
    if strategy == "zorder":
        return _k().interleave(np.stack([z_word(table.column(c)) for c in columns]))
    return _k().hilbert(np.stack([h_word(table.column(c)) for c in columns]))


def sort_permutation(table: pa.Table, columns: Sequence[str], strategy: str = "order") -> np.ndarray:
    """The stable row order (int64 positions) that clusters ``table`` by ``columns`` with
    ``strategy`` (module docstring)."""
    strategy = check_strategy(strategy, columns)
    check_types(table.schema, columns, strategy)
    if table.num_rows < 2:
        return np.arange(table.num_rows, dtype=np.int64)
    keys = cluster_keys(table, columns, strategy)
    if keys is None:  # variable-width columns: Arrow's stable sort, nulls first
        idx = sort_indices(table.select(list(columns)), [(c, "ascending") for c in columns], "at_start")
        return idx.to_numpy().astype(np.int64)
    return _k().radix_argsort(keys)


def range_keys(table: pa.Table, columns: Sequence[str], strategy: str = "order") -> np.ndarray:
    """A fixed-width byte key a row (a numpy ``S`` array, compared as bytes) that never
    decreases along :func:`sort_permutation`'s order, for cutting that order into ranges without
    sorting everything in one place (the Spark optimize: rows whose keys fall between the same
    two bounds are contiguous in the order).

    The key words of ``zorder`` / ``hilbert`` and of ``order`` by fixed-width columns are the
    sort's own (exact).  ``order`` by a string or binary column keeps its first 8 bytes
    (zero-filled: a shorter string never sorts after a longer one with its bytes), by a decimal
    its double value; both can tie where the order does not, so the key ends after such a column
    (a later column would break the monotony among ties).  Every ``order`` column carries its
    validity word first (nulls first), so keys of a column with and without nulls compare."""
    strategy = check_strategy(strategy, columns)
    n = table.num_rows
    if strategy != "order":
        words = cluster_keys(table, columns, strategy)
    else:
        parts = []
        for c in columns:
            arr = _plain(table.column(c))
            valid = _valid(arr)
            parts.append(np.ones(n, np.uint64) if valid is None else valid.astype(np.uint64))
            fam = _family(arr.type)
            if fam == "bytes":
                parts.append(_bytes_words(arr, right=False, null_word=0))
                break
            if fam == "decimal":
                parts.append(_order_words(arr.cast(pa.float64()))[-1])
                break
            parts.append(_order_words(arr)[-1])
        words = np.stack(parts)
    width = 8 * words.shape[0]
    be = np.ascontiguousarray(words.T, dtype=">u8")
    return be.view(f"S{width}").reshape(n)


def quantile_sample(keys: np.ndarray, size: int) -> np.ndarray:
    """``size`` keys evenly spaced through ``keys`` sorted (all of them when there are fewer): a
    sample each of whose keys stands for ``len(keys) / len(sample)`` rows."""
    n = len(keys)
    s = np.sort(keys, kind="stable")
    if n <= size:
        return s
    at = ((np.arange(size) + 0.5) * (n / size)).astype(np.int64)
    return s[np.minimum(at, n - 1)]


def range_bounds(samples: Sequence[tuple], pieces: int) -> np.ndarray:
    """At most ``pieces - 1`` ascending distinct keys cutting the rows the ``samples`` stand for
    (``[(keys, rows they stand for)]``, as :func:`quantile_sample` draws them) into ``pieces``
    ranges of about equal rows; a row goes to range ``searchsorted(bounds, key, "right")``."""
    samples = [(k, r) for k, r in samples if len(k)]
    if pieces <= 1 or not samples:
        return np.empty(0, dtype=samples[0][0].dtype if samples else "S8")
    keys = np.concatenate([k for k, _ in samples])
    weight = np.concatenate([np.full(len(k), r / len(k)) for k, r in samples])
    order = np.argsort(keys, kind="stable")
    keys, cum = keys[order], np.cumsum(weight[order])
    at = np.searchsorted(cum, cum[-1] * np.arange(1, pieces) / pieces, side="left")
    bounds = keys[np.minimum(at, len(keys) - 1)]
    bounds = np.unique(bounds)
    return bounds[bounds > keys[0]] if len(bounds) else bounds


def take(table: pa.Table, order) -> pa.Table:
    """``table.take(order)``, with its string and binary columns gathered by the
    :func:`~paimon_fast._kernels.order.take_bytes` kernel (a new file's rows from a sorted
    partition: Arrow's take of a string column cost 20-25 ms a 200,000-row file, the kernel 5-7).
    Other columns, chunked ones and strings past int32 offsets go through Arrow's take."""
    idx = np.ascontiguousarray(order, dtype=np.int64)
    held: list = []

    def positions() -> pa.Array:  # (as an Arrow array, made once, when a column needs it)
        if not held:
            held.append(pa.array(idx, pa.int64()))
        return held[0]

    cols = []
    for col in table.columns:
        arr = col.chunk(0) if isinstance(col, pa.ChunkedArray) and col.num_chunks == 1 else col
        got = _take_bytes(arr, idx, positions) if isinstance(arr, pa.Array) else None
        cols.append(arr.take(positions()) if got is None else got)
    return pa.Table.from_arrays(cols, schema=table.schema)


def _take_bytes(arr: pa.Array, idx: np.ndarray, positions):
    t = arr.type
    if pa.types.is_string(t) or pa.types.is_binary(t):
        dt = np.int32
    elif pa.types.is_large_string(t) or pa.types.is_large_binary(t):
        dt = np.int64
    else:
        return None
    bufs = arr.buffers()
    offsets = np.frombuffer(bufs[1], dt)[arr.offset : arr.offset + len(arr) + 1]
    data = np.frombuffer(bufs[2], np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    got = _k().take_bytes(offsets, data, idx)
    if got is None:  # over 2 GiB for int32 offsets: Arrow's take says so
        return None
    new_off, new_data = got
    validity, nulls = None, 0
    if arr.null_count:
        valid = arr.is_valid().take(positions())
        nulls = len(idx) - pc.sum(valid).as_py() if len(idx) else 0
        if nulls:
            if valid.offset:  # (a fresh take starts at bit 0)
                return None
            validity = valid.buffers()[1]
    return pa.Array.from_buffers(
        t, len(idx), [validity, pa.py_buffer(new_off), pa.py_buffer(new_data)], null_count=nulls
    )
