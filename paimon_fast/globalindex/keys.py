"""Keys of the bitmap global index, as Paimon's ``KeySerializer`` writes them.

Every supported type maps to a *kind* (how its key bytes look and compare) and
each value to an *order key* ``(hi, lo)`` (signed 64-bit, unsigned 64-bit)
whose lexicographic order is Java's logical comparator:

=================================  ==================  ==============================
type                               key bytes           order key
=================================  ==================  ==============================
TINYINT / SMALLINT / INT / BIGINT  LE i8/i16/i32/i64   the value
DATE, TIME(p)                      LE i32              days / millis of the day
BOOLEAN                            1 byte              0 / 1
FLOAT / DOUBLE                     LE floatToIntBits   bits with the sign trick
                                   / doubleToLongBits  (``Float.compare`` order)
TIMESTAMP(p<=3) (+ LTZ)            LE i64 millis       millis
TIMESTAMP(p>3) (+ LTZ)             LE i64 millis +     (millis, nano of millisecond)
                                   var-int nanos
DECIMAL(p<=18, s)                  LE i64 unscaled     unscaled
DECIMAL(p>18, s)                   BigInteger bytes    unscaled as 128-bit
CHAR / VARCHAR / STRING            UTF-8               rank among the distinct strings
=================================  ==================  ==============================

BINARY / VARBINARY / BYTES are not supported (as in Java).
"""

from __future__ import annotations

import datetime
import decimal
import math
import struct

import numpy as np
import pyarrow as pa

from .._kernels import load as _load
from ..errors import IndexFormatError, UnsupportedTypeError
from ..core.literals import epoch_seconds, seconds_of_day
from ..io.serde import encode_varint
from ..core.types import DataType, rescale, to_arrow_array, validity_mask

_k = _load("globalindex")
KINDS = _k.KINDS

_UNIT_NS = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}
_EPOCH = datetime.datetime(1970, 1, 1)


def kind_of(dtype: DataType) -> int:
    """The key kind of a Paimon type (raises UnsupportedTypeError like Java)."""
    r = dtype.root
    if r == "TINYINT":
        return KINDS["I8"]
    if r == "SMALLINT":
        return KINDS["I16"]
    if r in ("INT", "DATE", "TIME"):
        return KINDS["I32"]
    if r == "BIGINT":
        return KINDS["I64"]
    if r == "BOOLEAN":
        return KINDS["BOOL"]
    if r == "FLOAT":
        return KINDS["F32"]
    if r == "DOUBLE":
        return KINDS["F64"]
    if r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return KINDS["I64"] if dtype.precision <= 3 else KINDS["TSN"]
    if r == "DECIMAL":
        return KINDS["I64"] if dtype.precision <= 18 else KINDS["BIGDEC"]
    if dtype.is_string:
        return KINDS["BYTES"]
    raise UnsupportedTypeError(f"DataType {dtype} is not supported by the bitmap global index (as in Java)")


# key lengths each kind allows: fixed widths, TSN 8 bytes + a var-int of at most 5, BigInteger 1..16
_KEY_LENGTHS = {
    "I8": (1, 1),
    "I16": (2, 2),
    "I32": (4, 4),
    "I64": (8, 8),
    "BOOL": (1, 1),
    "F32": (4, 4),
    "F64": (8, 8),
    "TSN": (9, 13),
    "BIGDEC": (1, 16),
}
_KEY_LENGTHS = {KINDS[k]: v for k, v in _KEY_LENGTHS.items()}


class KeyCodec:
    """Column -> order keys, literal -> key bytes, key bytes -> Python value, for one type."""

    def __init__(self, dtype):
        self.dtype = DataType.parse(dtype)
        self.kind = kind_of(self.dtype)
        self.is_string = self.dtype.is_string

    def check_key_lengths(self, lengths, what: str, offset=None) -> None:
        """Raise IndexFormatError unless every key length (ints) is one this type's keys can
        have: the format does not record the type, so keys of another width mean the index
        was written for another column type."""
        lim = _KEY_LENGTHS.get(self.kind)
        if lim is None:
            return
        a = np.asarray(lengths, dtype=np.int64).reshape(-1)
        bad = a[(a < lim[0]) | (a > lim[1])].tolist()
        if bad:
            want = f"{lim[0]} bytes" if lim[0] == lim[1] else f"{lim[0]} to {lim[1]} bytes"
            raise IndexFormatError(
                f"{what} holds {bad[0]}-byte keys, a {self.dtype} key has {want}: the index "
                "was written for another column type",
                offset,
            )

    # ------------------------------------------------------------ columns
    def column(self, values):
        """``(arrow array, valid mask or None)`` of a column in the type's canonical Arrow form."""
        arr = to_arrow_array(values, self.dtype)
        return arr, validity_mask(arr)

    def order_keys(self, arr: pa.Array):
        """``(hi int64, lo uint64)`` order keys of a non-string column (nulls hold junk)."""
        d, r = self.dtype, self.dtype.root
        n = len(arr)
        lo = np.zeros(n, dtype=np.uint64)
        if r in ("TINYINT", "SMALLINT", "INT", "BIGINT", "DATE"):
            return _values(arr).astype(np.int64), lo
        if r == "BOOLEAN":
            return np.asarray(arr.fill_null(False).to_numpy(zero_copy_only=False), dtype=np.int64), lo
        if r == "TIME":
            v = _values(arr).astype(np.int64)
            return rescale(v, arr.type.unit, "ms"), lo
        if r in ("FLOAT", "DOUBLE"):
            v = _values(arr)
            if v.dtype == np.float32:
                bits = v.view(np.int32).astype(np.int64)
                bits[np.isnan(v)] = 0x7FC00000
                return bits ^ ((bits >> 31) & 0x7FFFFFFF), lo
            bits = v.view(np.int64).copy()
            bits[np.isnan(v)] = 0x7FF8000000000000
            return bits ^ ((bits >> 63) & 0x7FFFFFFFFFFFFFFF), lo
        if r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
            v = _values(arr).astype(np.int64)
            unit = arr.type.unit
            if d.precision <= 3:
                return rescale(v, unit, "ms"), lo
            per_ms = _UNIT_NS["ms"] // _UNIT_NS[unit] if _UNIT_NS[unit] < _UNIT_NS["ms"] else None
            if per_ms is None:  # seconds or millis: no sub-millisecond part
                return rescale(v, unit, "ms"), lo
            millis = np.floor_divide(v, per_ms)
            nanos = (v - millis * per_ms) * _UNIT_NS[unit]
            return millis, nanos.astype(np.uint64)
        if r == "DECIMAL":
            if not pa.types.is_decimal128(arr.type) or arr.type.scale != d.scale:
                arr = arr.cast(pa.decimal128(max(d.precision, arr.type.precision), d.scale))
            raw = np.frombuffer(arr.buffers()[1], dtype=np.int64, count=2 * (arr.offset + n))[2 * arr.offset :]
            if d.precision <= 18:
                return raw[0::2].copy(), lo
            return raw[1::2].copy(), raw[0::2].view(np.uint64).copy()
        raise UnsupportedTypeError(f"no order keys for {d}")  # pragma: no cover

    # ------------------------------------------------------------ literals
    def literal_bytes(self, v) -> bytes:
        """Key bytes of one predicate literal (not None), as Java's KeySerializer."""
        if self.is_string:
            if type(v) is str:
                return v.encode("utf-8", "surrogatepass")
            if isinstance(v, (bytes, bytearray, memoryview)):
                return bytes(v)
            return str(v).encode("utf-8", "surrogatepass")
        r, d = self.dtype.root, self.dtype
        if r == "TINYINT":
            return struct.pack("<b", int(v))
        if r == "SMALLINT":
            return struct.pack("<h", int(v))
        if r == "INT":
            return struct.pack("<i", int(v))
        if r == "BIGINT":
            return struct.pack("<q", int(v))
        if r == "BOOLEAN":
            return b"\x01" if v else b"\x00"
        if r == "DATE":
            if isinstance(v, datetime.datetime):
                v = v.date()
            if isinstance(v, datetime.date):
                v = (v - datetime.date(1970, 1, 1)).days
            return struct.pack("<i", int(v))
        if r == "TIME":
            if not isinstance(v, (int, np.integer)):  # a time of day read by value: millis of the day
                v = math.floor(seconds_of_day(v) * 1000)
            return struct.pack("<i", int(v))
        if r == "FLOAT":
            b = struct.unpack("<i", struct.pack("<f", float(v)))[0]
            if v != v:
                b = 0x7FC00000
            return struct.pack("<i", b)
        if r == "DOUBLE":
            b = struct.unpack("<q", struct.pack("<d", float(v)))[0]
            if v != v:
                b = 0x7FF8000000000000
            return struct.pack("<q", b)
        if r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
            millis, nanos = self._timestamp_literal(v)
            if d.precision <= 3:
                return struct.pack("<q", millis)
            return struct.pack("<q", millis) + encode_varint(nanos)
        if r == "DECIMAL":
            unscaled = _unscaled(v, d.scale)
            if d.precision <= 18:
                return struct.pack("<q", unscaled)
            return _bigint_bytes(unscaled)
        raise UnsupportedTypeError(f"no literal encoding for {d}")  # pragma: no cover

    def _timestamp_literal(self, v):
        """(epoch millis, nano of millisecond) of a timestamp literal.

        Integers are in the unit of the type's Arrow form (ms for p<=3, us for
        p<=6, ns above); also accepts ``(millis, nanos)`` tuples and every form
        :func:`paimon_fast.core.literals.epoch_seconds` reads by value (datetimes, numpy
        datetime64 of any unit, pyarrow timestamp scalars of any unit and zone)."""
        if isinstance(v, tuple):
            return int(v[0]), int(v[1])
        if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
            unit = self.dtype.to_arrow().unit
            ns = int(v) * _UNIT_NS[unit]
        else:
            q = epoch_seconds(v) * 1_000_000_000
            ns = q.numerator // q.denominator  # floor: a key holds nanoseconds at most
        return ns // 1_000_000, ns % 1_000_000

    # ------------------------------------------------------------ key bytes -> values
    def to_python(self, key: bytes):
        """Python value of key bytes (for display and LIKE)."""
        r, d = self.dtype.root, self.dtype
        if self.is_string:
            return key.decode("utf-8", "replace")
        hi, lo = _k.key_orders(
            self.kind, np.frombuffer(key, np.uint8), np.zeros(1, np.int64), np.array([len(key)], np.int64)
        )
        hi, lo = int(hi[0]), int(lo[0])
        if r == "BOOLEAN":
            return bool(hi)
        if r == "FLOAT":
            return struct.unpack("<f", key)[0]
        if r == "DOUBLE":
            return struct.unpack("<d", key)[0]
        if r == "DATE":
            return datetime.date(1970, 1, 1) + datetime.timedelta(days=hi)
        if r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
            return (_EPOCH + datetime.timedelta(milliseconds=hi, microseconds=lo // 1000)).isoformat() + (
                f"{lo % 1000:03d}" if lo % 1000 else ""
            )
        if r == "DECIMAL":
            unscaled = hi if d.precision <= 18 else (hi << 64) | lo
            return decimal.Decimal(unscaled).scaleb(-d.scale)
        return hi

    def compare(self, a: bytes, b: bytes) -> int:
        """Java's logical comparator on two serialized keys (-1, 0, 1)."""
        return int(
            _k.compare_to(
                self.kind,
                np.frombuffer(a, np.uint8),
                np.zeros(1, np.int64),
                np.array([len(a)], np.int64),
                np.frombuffer(b, np.uint8),
            )[0]
        )


def _values(arr: pa.Array) -> np.ndarray:
    t = arr.type
    width = t.bit_width // 8
    np_dtype = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}[width]
    if pa.types.is_floating(t):
        np_dtype = {4: np.float32, 8: np.float64}[width]
    buf = arr.buffers()[1]
    if buf is None:
        return np.zeros(len(arr), dtype=np_dtype)
    return np.frombuffer(buf, dtype=np_dtype, count=arr.offset + len(arr))[arr.offset :]


def _unscaled(v, scale: int) -> int:
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        d = decimal.Decimal(int(v))
    elif isinstance(v, decimal.Decimal):
        d = v
    else:
        d = decimal.Decimal(str(v))
    ctx = decimal.Context(prec=80)
    q = d.quantize(decimal.Decimal(1).scaleb(-scale), rounding=decimal.ROUND_HALF_UP, context=ctx)
    return int(q.scaleb(scale, context=ctx))


def _bigint_bytes(v: int) -> bytes:
    """``BigInteger.toByteArray()``: minimal big-endian two's complement."""
    n = ((v if v >= 0 else ~v).bit_length() + 8) // 8
    return v.to_bytes(n, "big", signed=True)
