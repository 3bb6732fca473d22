"""The RFC-92 record model: keys, canonical value strings and bitmap encoding.

One index record per (indexed column, value, file group):

    key     = <column> $ <value> $ <partition path, or "." when unpartitioned> $ <file id>
    bitmap  = Base64( Roaring64NavigableMap.serializePortable() after runOptimize() )

as the RFC's ``HoodieBitmapIndexInfo.bitmap`` string.  Positions are a row's
ordinal in the file slice's base Parquet file (or, for merge-on-read slices with
log files, in the file-group reader's merged output; such slices are flagged as
having no row positions and are only used for file-group pruning).

Canonical value strings (:func:`canonical_strings`, :func:`canonical_literal`,
:func:`canonical_text`):

============================  =================================================
type                          string
============================  =================================================
string / large_string         the value itself (UTF-8)
int8 .. int64, uint*          decimal digits, ``-`` for negatives: ``-12``
bool                          ``true`` / ``false``
date32 / date64               ISO ``YYYY-MM-DD`` (proleptic Gregorian)
timestamp (any unit)          ISO ``YYYY-MM-DDTHH:MM:SS.ffffff`` (6 fraction
                              digits, 9 when the nanosecond part is non-zero);
                              a time-zone-aware column is rendered in UTC with a
                              trailing ``Z``; a zone-less column without it
decimal(p, s)                 plain notation with exactly ``s`` fraction digits
                              (Java ``BigDecimal.toPlainString`` at the column's
                              scale): ``12.50``, ``-0.05``, ``7``
============================  =================================================

Escaping: ``$`` separates the key's parts, so inside a column name, value or
partition path ``%`` is written ``%25`` and ``$`` is written ``%24`` (nothing
else is escaped).  A key therefore always splits on ``$`` into exactly four
parts, and the prefix ``<column>$<value>$`` selects exactly one value.  NULL is
not a value: each file slice has one null-bitmap record per column whose value
part is the marker ``%00`` (impossible for a real value, whose ``%`` would be
escaped) and whose ``value`` column is null.

Floating-point, binary and nested columns are not indexable
(:class:`~paimon_fast.errors.UnsupportedTypeError`): NaN / -0.0 make equality
on their text ambiguous.
"""

from __future__ import annotations

import base64
import datetime as _dt
import decimal as _decimal
import struct

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap

from ..core import roaring as _roaring
from ..errors import IndexFormatError, UnsupportedTypeError
from ..core.bind import bind
from ..core.literals import epoch_seconds
from ..core.predicate import Leaf

SEP = "$"
NULL_TOKEN = "%00"
UNPARTITIONED = "."


def escape(part: str) -> str:
    """Escape ``%`` and ``$`` inside one key part."""
    if "%" in part:
        part = part.replace("%", "%25")
    if "$" in part:
        part = part.replace("$", "%24")
    return part


def unescape(part: str) -> str:
    return part.replace("%24", "$").replace("%25", "%")


def partition_token(partition: str) -> str:
    """The key's partition part: ``.`` for an unpartitioned table (a partition path ``.``, the
    table's root, is the same: it reads back as ``""``)."""
    return escape(partition) if partition else UNPARTITIONED


def bitmap_key(column: str, value, partition: str, file_id: str) -> str:
    """``<column>$<value>$<partition or .>$<file id>``; ``value`` is an (unescaped)
    canonical string, or None for the slice's null-bitmap record."""
    v = NULL_TOKEN if value is None else escape(value)
    return f"{escape(column)}{SEP}{v}{SEP}{partition_token(partition)}{SEP}{file_id}"


def key_prefix(column: str, value) -> str:
    """The prefix ``<column>$<value>$`` shared by one value's records across file groups."""
    v = NULL_TOKEN if value is None else escape(value)
    return f"{escape(column)}{SEP}{v}{SEP}"


def parse_key(key: str):
    """``(column, value or None, partition, file_id)`` from a key (inverse of :func:`bitmap_key`)."""
    parts = key.split(SEP)
    if len(parts) != 4:
        raise IndexFormatError(f"bitmap index key {key!r} does not have 4 '$'-separated parts")
    col, val, part, fid = parts
    value = None if val == NULL_TOKEN else unescape(val)
    partition = "" if part == UNPARTITIONED else unescape(part)
    return unescape(col), value, partition, fid


# ---------------------------------------------------------------- types


def check_indexable(name: str, t: pa.DataType) -> None:
    """Raise UnsupportedTypeError unless a column of arrow type ``t`` can be bitmap-indexed."""
    if (
        pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_integer(t)
        or pa.types.is_boolean(t)
        or pa.types.is_date(t)
        or pa.types.is_timestamp(t)
        or pa.types.is_decimal(t)
    ):
        return
    if pa.types.is_dictionary(t):
        return check_indexable(name, t.value_type)
    raise UnsupportedTypeError(
        f"column {name!r} of type {t} cannot be bitmap-indexed "
        "(strings, integers, booleans, dates, timestamps and decimals can)"
    )


def indexable_columns(schema) -> tuple:
    """``(columns, skipped)`` of a table schema: the columns a bitmap index can hold, in
    schema order, and ``{column: reason}`` for the others (Hudi's ``_hoodie_*`` metadata
    columns, floating point, binary and nested types)."""
    cols, skipped = [], {}
    for f in schema:
        t = f.type
        if f.name.startswith("_hoodie_"):
            skipped[f.name] = "Hudi metadata column"
            continue
        try:
            check_indexable(f.name, t)
        except UnsupportedTypeError:
            vt = t.value_type if pa.types.is_dictionary(t) else t
            if pa.types.is_floating(vt):
                why = "floating point"
            elif pa.types.is_binary(vt) or pa.types.is_large_binary(vt) or pa.types.is_fixed_size_binary(vt):
                why = "binary"
            elif pa.types.is_nested(vt):
                why = "nested"
            else:
                why = "type not supported"
            skipped[f.name] = f"{why} ({t}): strings, integers, booleans, dates, timestamps and decimals can be indexed"
            continue
        cols.append(f.name)
    return cols, skipped


def _ts_text(us_or_ns: int, unit: str, aware: bool) -> str:
    if unit == "s":
        ns = us_or_ns * 1_000_000_000
    elif unit == "ms":
        ns = us_or_ns * 1_000_000
    elif unit == "us":
        ns = us_or_ns * 1000
    else:
        ns = us_or_ns
    secs, rem = divmod(ns, 1_000_000_000)
    days, sod = divmod(secs, 86400)
    d = _dt.date(1970, 1, 1) + _dt.timedelta(days=days)
    h, r = divmod(sod, 3600)
    m, s = divmod(r, 60)
    frac = f"{rem:09d}" if rem % 1000 else f"{rem // 1000:06d}"
    return f"{d.isoformat()}T{h:02d}:{m:02d}:{s:02d}.{frac}" + ("Z" if aware else "")


def _date_text(days: int) -> str:
    return (_dt.date(1970, 1, 1) + _dt.timedelta(days=int(days))).isoformat()


def _decimal_text(d: _decimal.Decimal, scale: int) -> str:
    q = d.quantize(_decimal.Decimal(1).scaleb(-scale)) if scale >= 0 else d
    s = format(q, "f")
    if s.startswith("-") and q.is_zero():
        s = s[1:]
    return s


def _plain(arr) -> pa.Array:
    """One contiguous, non-dictionary array of the same values."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_dictionary(arr.type):
        arr = arr.cast(arr.type.value_type)
    return arr


def canonical_strings(arr) -> list:
    """Canonical strings of the values of an Arrow array (None where null).

    Intended for an array of distinct values (a dictionary), not for every row.
    """
    arr = _plain(arr)
    t = arr.type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return arr.to_pylist()
    if pa.types.is_integer(t):
        return arr.cast(pa.string()).to_pylist()  # decimal digits, '-' sign: as str(int)
    if pa.types.is_boolean(t):
        return [None if v is None else ("true" if v else "false") for v in arr.to_pylist()]
    if pa.types.is_date(t):
        days = arr.cast(pa.date32()).cast(pa.int32()).to_pylist()
        return [None if v is None else _date_text(v) for v in days]
    if pa.types.is_timestamp(t):
        raw = arr.cast(pa.int64()).to_pylist()
        aware = t.tz is not None
        return [None if v is None else _ts_text(v, t.unit, aware) for v in raw]
    if pa.types.is_decimal(t):
        return [None if v is None else _decimal_text(v, t.scale) for v in arr.to_pylist()]
    raise UnsupportedTypeError(f"type {t} cannot be bitmap-indexed")


def canonical_array(arr) -> pa.Array:
    """:func:`canonical_strings` as an Arrow string array (vectorised for strings and integers)."""
    arr = _plain(arr)
    t = arr.type
    if pa.types.is_string(t):
        return arr
    if pa.types.is_large_string(t) or pa.types.is_integer(t):
        return arr.cast(pa.string())  # integers: decimal digits, '-' sign, as str(int)
    return pa.array(canonical_strings(arr), pa.string())


def _parse_ts_literal(v, t: pa.TimestampType):
    """A literal as integer ticks of the column's unit, or None if no column value can equal it.

    Every form is read by its value (:func:`paimon_fast.core.literals.epoch_seconds`: datetimes,
    ``pandas.Timestamp``, numpy ``datetime64`` and pyarrow timestamp scalars of any unit, ISO text
    with every fraction digit); a naive literal on a UTC-adjusted column means UTC."""
    if isinstance(v, (bool, int, float, np.number)):
        raise TypeError(f"literal {v!r} is not comparable with a {t} column")
    try:
        q = epoch_seconds(v) * {"s": 1, "ms": 1000, "us": 10**6, "ns": 10**9}[t.unit]
    except (TypeError, ValueError):
        raise TypeError(f"literal {v!r} is not comparable with a {t} column") from None
    return int(q) if q.denominator == 1 else None


def canonical_literal(value, t: pa.DataType):
    """The canonical string a column of type ``t`` would store for a predicate literal.

    The literal is bound to the column's type first (:func:`paimon_fast.core.bind.bind`, the
    rules every back end shares), then written by :func:`canonical_text`.  Returns None when no
    value of the column can equal the literal (e.g. 1.5 on an integer column, 0.001 on a
    decimal(10, 2) column, NULL); raises :class:`~paimon_fast.errors.LiteralTypeError` (a
    TypeError) when the literal's kind does not match the column's type at all.
    """
    if value is None:
        return None
    if pa.types.is_dictionary(t):
        t = t.value_type
    bound = bind(Leaf("equal", "literal", (value,)), {"literal": t})
    if not (isinstance(bound, Leaf) and bound.op == "equal"):
        return None  # the "no row" form: no value of the column equals it
    return canonical_text(bound.literal, t)


def canonical_text(value, t: pa.DataType):
    """The canonical string of ``value``, an exact value of a column of type ``t``: a literal of a
    predicate bound to the column's schema (:func:`paimon_fast.core.bind.bind`).  None stays None."""
    if value is None:
        return None
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return value
    if pa.types.is_boolean(t):
        return "true" if value else "false"
    if pa.types.is_integer(t):
        return str(int(value))
    if pa.types.is_decimal(t):
        return _decimal_text(_decimal.Decimal(value), t.scale)
    if pa.types.is_date(t):
        return value.isoformat()
    if pa.types.is_timestamp(t):
        ticks = _parse_ts_literal(value, t)
        return None if ticks is None else _ts_text(ticks, t.unit, t.tz is not None)
    raise UnsupportedTypeError(f"type {t} cannot be bitmap-indexed")


# ---------------------------------------------------------------- bitmaps

_EMPTY64 = b"\x00" * 8
EMPTY_BITMAP_B64 = "AAAAAAAAAAA="
_ONE_BUCKET_HI0 = struct.pack("<QI", 1, 0)


def encode_bitmap(positions) -> str:
    """Base64 of the portable 64-bit serialization (RFC's ``HoodieBitmapIndexInfo.bitmap``)."""
    return base64.b64encode(_roaring.serialize64(positions)).decode("ascii")


def encode_groups(sorted_positions: np.ndarray, bounds: np.ndarray) -> list:
    """Base64 bitmap strings for many groups at once: group ``g`` holds the strictly
    increasing uint32 positions ``sorted_positions[bounds[g]:bounds[g+1]]`` (one Python
    Base64 call per group: the twin of :func:`encode_groups_array`)."""
    blob, sizes = _roaring.serialize_groups32(
        np.ascontiguousarray(sorted_positions, dtype=np.uint32), np.ascontiguousarray(bounds, dtype=np.int64)
    )
    out = []
    pos = 0
    b64 = base64.b64encode
    counts = np.diff(bounds)
    for s, c in zip(sizes.tolist(), counts.tolist()):
        if c == 0:
            out.append("AAAAAAAAAAA=")
        else:
            out.append(b64(_ONE_BUCKET_HI0 + blob[pos : pos + s]).decode("ascii"))
        pos += s
    return out


def encode_groups_array(sorted_positions: np.ndarray, bounds: np.ndarray) -> pa.Array:
    """:func:`encode_groups` as an Arrow string array, in one kernel call: each group's
    portable bitmap (12-byte bucket header + 32-bit roaring, or the 8 zero bytes of an
    empty bitmap) serialized and Base64-encoded straight into the array's buffers."""
    off, data = _roaring.serialize_groups_b64(
        np.ascontiguousarray(sorted_positions, dtype=np.uint32),
        np.ascontiguousarray(bounds, dtype=np.int64),
        _ONE_BUCKET_HI0,
        _EMPTY64,
    )
    n = len(off) - 1
    if off[-1] >= 2**31:
        return pa.LargeStringArray.from_buffers(n, pa.py_buffer(off), pa.py_buffer(data)).cast(pa.string())
    return pa.StringArray.from_buffers(n, pa.py_buffer(off.astype(np.int32)), pa.py_buffer(data))


def decode_bitmap(text) -> BitMap:
    """A 32-bit pyroaring ``BitMap`` from the Base64 portable 64-bit string (validated).

    Positions of one file slice fit in 32 bits; a bitmap with a non-zero high bucket
    raises IndexFormatError.
    """
    try:
        raw = base64.b64decode(text, validate=True)
    except (ValueError, TypeError) as e:
        raise IndexFormatError(f"bitmap is not valid Base64: {e}") from None
    if len(raw) < 8:
        raise IndexFormatError("64-bit roaring bitmap truncated (bucket count)", 0)
    (n,) = struct.unpack_from("<Q", raw, 0)
    if n == 0:
        if len(raw) != 8:
            raise IndexFormatError("trailing bytes after an empty 64-bit roaring bitmap", 8)
        return BitMap()
    if n != 1:
        raise IndexFormatError(f"bitmap has {n} high-32 buckets; row positions must be < 2^32", 0)
    if len(raw) < 12:
        raise IndexFormatError("64-bit roaring bitmap truncated (bucket key)", 8)
    (hi,) = struct.unpack_from("<I", raw, 8)
    if hi != 0:
        raise IndexFormatError("bitmap has a non-zero high-32 bucket; row positions must be < 2^32", 8)
    bm, size = _roaring.deserialize32(raw, 12, -1, 0, with_size=True)
    if 12 + size != len(raw):
        raise IndexFormatError("trailing bytes after the 64-bit roaring bitmap", 12 + size)
    return bm


def group_positions(codes: np.ndarray, ngroups: int):
    """Stable grouping of row positions by integer code (-1 = null).

    Returns ``(sorted_positions uint32, bounds int64[ngroups+1], null_positions uint32)``.
    """
    codes = np.asarray(codes)
    if ngroups < 32767:
        codes = codes.astype(np.int16, copy=False)  # numpy's stable sort is a radix sort for 16 bits
    order = np.argsort(codes, kind="stable").astype(np.uint32)
    sc = codes[order]
    nnull = int(np.searchsorted(sc, 0))
    nulls = order[:nnull]
    bounds = np.searchsorted(sc, np.arange(ngroups + 1), side="left").astype(np.int64)
    return order, bounds, nulls


def dictionary_codes(arr):
    """``(codes int32 with -1 for null, distinct values array)`` of one column."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    if pa.types.is_dictionary(arr.type):
        arr = arr.cast(arr.type.value_type)
    if pa.types.is_decimal(arr.type) or pa.types.is_date64(arr.type):
        # dictionary_encode is not implemented for every type; go via a storage-equivalent
        pass
    enc = pc.dictionary_encode(arr)
    idx = enc.indices
    codes = idx.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int32, copy=False)
    return codes, enc.dictionary
