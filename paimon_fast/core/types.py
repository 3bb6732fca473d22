"""Paimon data types, their Arrow counterparts, and the contiguous buffers
kernels take.

A column may arrive as a pyarrow Array / ChunkedArray, a numpy array or a
Python sequence (``None`` = null).  :func:`to_arrow_array` normalises all of
them to one Arrow array of the type's canonical Arrow type; the ``*_buffers``
functions then expose zero-copy numpy views of its values, offsets and
validity, which is what the Cython kernels consume.
"""

from __future__ import annotations

import decimal
import re
from dataclasses import dataclass
from typing import Optional

import numpy as np
import pyarrow as pa

from ..errors import UnsupportedTypeError

INTEGER_ROOTS = ("TINYINT", "SMALLINT", "INT", "BIGINT")
STRING_ROOTS = ("CHAR", "VARCHAR", "STRING")
BINARY_ROOTS = ("BINARY", "VARBINARY", "BYTES")

_ALIASES = {
    "INTEGER": "INT",
    "BOOL": "BOOLEAN",
    "LONG": "BIGINT",
    "TIMESTAMP_LTZ": "TIMESTAMP_LTZ",
    "TIMESTAMP_WITH_LOCAL_TIME_ZONE": "TIMESTAMP_LTZ",
    "NUMERIC": "DECIMAL",
    "DEC": "DECIMAL",
}

_TYPE_RE = re.compile(
    r"^\s*(?P<root>[A-Za-z_]+)\s*(?:\(\s*(?P<a>\d+)\s*(?:,\s*(?P<b>\d+)\s*)?\))?"
    r"(?P<ltz>\s+WITH\s+LOCAL\s+TIME\s+ZONE)?(?P<nn>\s+NOT\s+NULL)?\s*$",
    re.IGNORECASE,
)


_PARSED: dict = {}


@dataclass(frozen=True)
class DataType:
    """A Paimon atomic data type.

    ``root`` is one of TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE, BOOLEAN,
    DATE, TIME, TIMESTAMP, TIMESTAMP_LTZ, CHAR, VARCHAR, STRING, BINARY,
    VARBINARY, BYTES, DECIMAL.  ``precision`` is the TIME/TIMESTAMP precision or
    the DECIMAL precision; ``length`` the CHAR/VARCHAR/BINARY/VARBINARY length.
    """

    root: str
    precision: Optional[int] = None
    scale: Optional[int] = None
    length: Optional[int] = None
    nullable: bool = True

    # ------------------------------------------------------------ parsing
    @staticmethod
    def parse(text: "str | DataType") -> "DataType":
        """Parse a Paimon SQL type string such as ``'TIMESTAMP(6) WITH LOCAL TIME ZONE'``."""
        if isinstance(text, DataType):
            return text
        hit = _PARSED.get(text) if isinstance(text, str) else None
        if hit is not None:
            return hit
        dt = DataType._parse(text)
        if len(_PARSED) < 4096 and isinstance(text, str):
            _PARSED[text] = dt  # DataType is frozen: one parse per type string
        return dt

    @staticmethod
    def _parse(text) -> "DataType":
        m = _TYPE_RE.match(str(text))
        if not m:
            raise UnsupportedTypeError(f"cannot parse Paimon type {text!r}")
        root = m.group("root").upper()
        root = _ALIASES.get(root, root)
        a = int(m.group("a")) if m.group("a") is not None else None
        b = int(m.group("b")) if m.group("b") is not None else None
        nullable = m.group("nn") is None
        if m.group("ltz"):
            if root != "TIMESTAMP":
                raise UnsupportedTypeError(f"WITH LOCAL TIME ZONE applies to TIMESTAMP only: {text!r}")
            root = "TIMESTAMP_LTZ"
        simple = ("TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "BOOLEAN", "DATE", "STRING", "BYTES")
        if root in simple:
            if a is not None:
                raise UnsupportedTypeError(f"{root} takes no parameters: {text!r}")
            return DataType(root, nullable=nullable)
        if root in ("TIME", "TIMESTAMP", "TIMESTAMP_LTZ"):
            default = 0 if root == "TIME" else 6
            p = default if a is None else a
            if b is not None or not 0 <= p <= 9:
                raise UnsupportedTypeError(f"bad precision in {text!r}")
            return DataType(root, precision=p, nullable=nullable)
        if root in ("CHAR", "VARCHAR", "BINARY", "VARBINARY"):
            n = 1 if a is None else a
            if b is not None or n < 1:
                raise UnsupportedTypeError(f"bad length in {text!r}")
            return DataType(root, length=n, nullable=nullable)
        if root == "DECIMAL":
            p = 10 if a is None else a
            s = 0 if b is None else b
            if not (1 <= p <= 38 and 0 <= s <= p):
                raise UnsupportedTypeError(f"bad precision/scale in {text!r}")
            return DataType(root, precision=p, scale=s, nullable=nullable)
        raise UnsupportedTypeError(f"unsupported Paimon type {text!r}")

    def __str__(self):
        r = self.root
        if r in ("TIME", "TIMESTAMP"):
            s = f"{r}({self.precision})"
        elif r == "TIMESTAMP_LTZ":
            s = f"TIMESTAMP({self.precision}) WITH LOCAL TIME ZONE"
        elif r in ("CHAR", "VARCHAR", "BINARY", "VARBINARY"):
            s = f"{r}({self.length})"
        elif r == "DECIMAL":
            s = f"DECIMAL({self.precision}, {self.scale})"
        else:
            s = r
        return s if self.nullable else s + " NOT NULL"

    # ------------------------------------------------------------ families
    @property
    def is_integer(self) -> bool:
        return self.root in INTEGER_ROOTS

    @property
    def is_string(self) -> bool:
        return self.root in STRING_ROOTS

    @property
    def is_binary(self) -> bool:
        return self.root in BINARY_ROOTS

    @property
    def is_timestamp(self) -> bool:
        return self.root in ("TIMESTAMP", "TIMESTAMP_LTZ")

    @property
    def is_var_width(self) -> bool:
        return self.is_string or self.is_binary

    @property
    def is_long_like(self) -> bool:
        """Types Paimon's file indexes map to one Java ``long`` per value."""
        return self.root in INTEGER_ROOTS or self.root in ("DATE", "TIME", "TIMESTAMP", "TIMESTAMP_LTZ")

    @property
    def timestamp_unit(self) -> str:
        """'ms' when the file indexes key this timestamp by millis (p <= 3), else 'us'."""
        return "ms" if (self.precision or 0) <= 3 else "us"

    # ------------------------------------------------------------ Arrow
    def to_arrow(self) -> pa.DataType:
        r = self.root
        if r == "TINYINT":
            return pa.int8()
        if r == "SMALLINT":
            return pa.int16()
        if r == "INT":
            return pa.int32()
        if r == "BIGINT":
            return pa.int64()
        if r == "FLOAT":
            return pa.float32()
        if r == "DOUBLE":
            return pa.float64()
        if r == "BOOLEAN":
            return pa.bool_()
        if r == "DATE":
            return pa.date32()
        if r == "TIME":
            p = self.precision or 0
            return pa.time32("ms") if p <= 3 else (pa.time64("us") if p <= 6 else pa.time64("ns"))
        if r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
            p = self.precision
            unit = "ms" if p <= 3 else ("us" if p <= 6 else "ns")
            return pa.timestamp(unit, tz="UTC" if r == "TIMESTAMP_LTZ" else None)
        if r in STRING_ROOTS:
            return pa.string()
        if r in BINARY_ROOTS:
            return pa.binary()
        if r == "DECIMAL":
            return pa.decimal128(self.precision, self.scale)
        raise UnsupportedTypeError(f"no Arrow type for {self}")  # pragma: no cover

    @staticmethod
    def from_arrow(t: pa.DataType) -> "DataType":
        """The Paimon type of an Arrow type (the inverse of :meth:`to_arrow`)."""
        if pa.types.is_int8(t):
            return DataType("TINYINT")
        if pa.types.is_int16(t):
            return DataType("SMALLINT")
        if pa.types.is_int32(t):
            return DataType("INT")
        if pa.types.is_int64(t):
            return DataType("BIGINT")
        if pa.types.is_float32(t):
            return DataType("FLOAT")
        if pa.types.is_float64(t):
            return DataType("DOUBLE")
        if pa.types.is_boolean(t):
            return DataType("BOOLEAN")
        if pa.types.is_date32(t) or pa.types.is_date64(t):
            return DataType("DATE")
        if pa.types.is_time(t):
            return DataType("TIME", precision={"s": 0, "ms": 3, "us": 6, "ns": 9}[t.unit])
        if pa.types.is_timestamp(t):
            p = {"s": 0, "ms": 3, "us": 6, "ns": 9}[t.unit]
            return DataType("TIMESTAMP_LTZ" if t.tz else "TIMESTAMP", precision=p)
        if pa.types.is_string(t) or pa.types.is_large_string(t) or _is_view(t, "string"):
            return DataType("STRING")
        if pa.types.is_fixed_size_binary(t):
            return DataType("BINARY", length=t.byte_width)
        if pa.types.is_binary(t) or pa.types.is_large_binary(t) or _is_view(t, "binary"):
            return DataType("BYTES")
        if pa.types.is_decimal(t):
            return DataType("DECIMAL", precision=t.precision, scale=t.scale)
        raise UnsupportedTypeError(f"no Paimon type for Arrow type {t}")


def _is_view(t, kind):
    fn = getattr(pa.types, f"is_{kind}_view", None)
    return bool(fn and fn(t))


def parse_type(text) -> DataType:
    """Alias of :meth:`DataType.parse`."""
    return DataType.parse(text)


# ---------------------------------------------------------------- columns


def to_arrow_array(values, dtype: DataType) -> pa.Array:
    """Normalise a column to one contiguous Arrow array of a type kernels understand.

    Accepts pyarrow Array / ChunkedArray, numpy arrays (masked arrays: masked =
    null) and Python sequences (None = null; DECIMAL also accepts strings).
    Strings stay ``string`` or ``large_string`` (no copy); views and dictionary
    arrays are decoded.
    """
    dtype = DataType.parse(dtype)
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    if not isinstance(values, pa.Array):
        if isinstance(values, np.ma.MaskedArray):
            values = pa.array(values.data, mask=np.ma.getmaskarray(values), type=_numpy_target(values.data, dtype))
        elif isinstance(values, np.ndarray):
            values = pa.array(values, type=_numpy_target(values, dtype))
        else:
            seq = list(values)
            if dtype.root == "DECIMAL":
                seq = [decimal.Decimal(v) if isinstance(v, (str, int)) else v for v in seq]
            target = dtype.to_arrow()
            if pa.types.is_timestamp(target):  # pyarrow < 15 takes numpy datetimes only in the target's unit
                unit = f"datetime64[{target.unit}]"
                seq = [v.astype(unit) if isinstance(v, np.datetime64) else v for v in seq]
            # pyarrow scalars (literals read by value) append only to a builder of their own type
            seq = [v.cast(target) if isinstance(v, pa.Scalar) and v.type != target else v for v in seq]
            values = pa.array(seq, type=target)
    t = values.type
    if pa.types.is_dictionary(t):
        values = values.dictionary_decode()
        t = values.type
    if _is_view(t, "string"):
        values = values.cast(pa.large_string())
    elif _is_view(t, "binary"):
        values = values.cast(pa.large_binary())
    elif pa.types.is_fixed_size_binary(t):
        values = values.cast(pa.binary())
    elif pa.types.is_date64(t):
        values = values.cast(pa.date32())
    t = values.type
    ok = (
        pa.types.is_string(t) or pa.types.is_large_string(t)
        if dtype.is_string
        else pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_string(t)
        or pa.types.is_large_string(t)
        if dtype.is_binary
        else pa.types.is_timestamp(t)
        if dtype.is_timestamp
        else pa.types.is_time(t)
        if dtype.root == "TIME"
        else t == dtype.to_arrow() or (dtype.root == "DECIMAL" and pa.types.is_decimal(t))
    )
    if not ok:
        try:
            values = values.cast(dtype.to_arrow())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise UnsupportedTypeError(f"cannot use an Arrow {t} column as Paimon {dtype}: {e}") from None
    return values


def _numpy_target(arr: np.ndarray, dtype: DataType):
    if arr.dtype.kind in "iuf" and dtype.is_long_like and dtype.root not in INTEGER_ROOTS:
        # integers given for DATE / TIME / TIMESTAMP: already in the arrow unit
        return dtype.to_arrow()
    if arr.dtype.kind in "OUS":
        return dtype.to_arrow()
    return None


def validity_mask(arr: pa.Array) -> Optional[np.ndarray]:
    """numpy bool array (True = not null), or None when the array has no nulls."""
    if arr.null_count == 0:
        return None
    buf = arr.buffers()[0]
    bits = np.frombuffer(buf, dtype=np.uint8)
    mask = np.unpackbits(bits, bitorder="little", count=arr.offset + len(arr))[arr.offset :]
    return mask.view(np.bool_)


def fixed_values(arr: pa.Array) -> np.ndarray:
    """Zero-copy numpy view of a fixed-width Arrow array's values (nulls hold junk)."""
    t = arr.type
    if pa.types.is_boolean(t):
        return np.asarray(arr.fill_null(False).to_numpy(zero_copy_only=False), dtype=np.uint8)
    width = t.bit_width // 8
    np_dtype = {
        1: np.int8,
        2: np.int16,
        4: np.int32,
        8: np.int64,
    }[width]
    if pa.types.is_floating(t):
        np_dtype = {4: np.float32, 8: np.float64}[width]
    buf = arr.buffers()[1]
    return np.frombuffer(buf, dtype=np_dtype, count=arr.offset + len(arr))[arr.offset :]


def binary_buffers(arr: pa.Array):
    """``(offsets, data)`` of a string/binary Arrow array: offsets (int32 or int64,
    ``len+1`` entries, already shifted by the array's offset) index into data (uint8)."""
    t = arr.type
    large = pa.types.is_large_string(t) or pa.types.is_large_binary(t)
    bufs = arr.buffers()
    off = np.frombuffer(bufs[1], dtype=np.int64 if large else np.int32, count=arr.offset + len(arr) + 1)[arr.offset :]
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    return off, data


def long_keys(arr: pa.Array, dtype: DataType) -> np.ndarray:
    """The Java ``long`` key of each value as Paimon's file indexes use it.

    Integers, DATE (days) and TIME (millis of day) as themselves; timestamps as
    epoch millis when precision <= 3, else epoch micros (floor division, as
    Paimon's Timestamp does).  Returns the narrowest numpy view available
    (int8..int64) so integer columns are not copied.  Null slots hold junk.
    """
    t = arr.type
    r = dtype.root
    if r in INTEGER_ROOTS or r == "DATE":
        return fixed_values(arr)
    if r == "TIME":
        v = fixed_values(arr).astype(np.int64, copy=False)
        return rescale(v, t.unit, "ms")
    if r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        v = fixed_values(arr)
        return rescale(v, t.unit, dtype.timestamp_unit)
    if r == "BOOLEAN":
        return fixed_values(arr)
    raise UnsupportedTypeError(f"{dtype} has no long key")


_UNIT_NS = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}


def rescale(v: np.ndarray, unit: str, target: str) -> np.ndarray:
    src, dst = _UNIT_NS[unit], _UNIT_NS[target]
    if src == dst:
        return v
    if src > dst:
        return v * (src // dst)
    return np.floor_divide(v, dst // src)


def float_bits(arr: pa.Array) -> np.ndarray:
    """Java ``floatToIntBits`` / ``doubleToLongBits`` (NaN canonicalised) as int32 / int64."""
    v = fixed_values(arr)
    if v.dtype == np.float32:
        bits = v.view(np.int32).copy()
        bits[np.isnan(v)] = 0x7FC00000
    else:
        bits = v.view(np.int64).copy()
        bits[np.isnan(v)] = 0x7FF8000000000000
    return bits


def decimal_unscaled(arr: pa.Array) -> np.ndarray:
    """Unscaled values of a decimal128 array as int64; raises if one does not fit."""
    if not pa.types.is_decimal128(arr.type):
        arr = arr.cast(pa.decimal128(arr.type.precision, arr.type.scale))
    raw = np.frombuffer(arr.buffers()[1], dtype=np.int64, count=2 * (arr.offset + len(arr)))[2 * arr.offset :]
    lo, hi = raw[0::2], raw[1::2]
    valid = validity_mask(arr)
    bad = hi != (lo >> 63)
    if valid is not None:
        bad &= valid
    if bad.any():
        raise UnsupportedTypeError("decimal value does not fit in a 64-bit unscaled long")
    return lo


def list_elements(arr: pa.Array):
    """``(elements, parent row index)`` of a list array (list / large list / fixed-size list):
    every element of every non-null list, in order, computed by Arrow kernels.  A null list
    contributes nothing even when its offsets span values (``pyarrow.compute.list_flatten``
    skips those, ``list_parent_indices`` does not, so they cannot be paired directly)."""
    import pyarrow.compute as pc

    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    t = arr.type
    n = len(arr)
    parents = np.asarray(pc.list_parent_indices(arr).to_numpy(zero_copy_only=False), dtype=np.int64)
    if pa.types.is_fixed_size_list(t):
        size = t.list_size
        flat = arr.values.slice(arr.offset * size, n * size)
    else:
        offs = arr.offsets
        start = offs[0].as_py() if n else 0
        flat = arr.values.slice(start, (offs[n].as_py() - start) if n else 0)
    if len(flat) != len(parents):
        raise ValueError(f"list array of {n} rows: {len(flat)} values but {len(parents)} parent indices")
    if arr.null_count:
        keep = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)[parents]
        flat = flat.filter(pa.array(keep))
        parents = parents[keep]
    return flat, parents


_PER_KEY_NULL_PLACEMENT = None  # does this pyarrow take (name, order, null placement) sort keys?


def sort_indices(table, keys, null_placement: str = "at_end"):
    """``pyarrow.compute.sort_indices(table, sort_keys=keys)`` with ``null_placement``
    (``"at_start"`` / ``"at_end"``) for every key, in the form this pyarrow takes: pyarrow 25+ makes
    it a part of each sort key and warns (FutureWarning) at the table-wide option older ones take."""
    import pyarrow.compute as pc

    global _PER_KEY_NULL_PLACEMENT
    if _PER_KEY_NULL_PLACEMENT is None:
        try:
            pc.SortOptions(sort_keys=[("x", "ascending", "at_end")])
            _PER_KEY_NULL_PLACEMENT = True
        except (TypeError, ValueError):
            _PER_KEY_NULL_PLACEMENT = False
    if _PER_KEY_NULL_PLACEMENT:
        return pc.sort_indices(table, sort_keys=[(name, order, null_placement) for name, order in keys])
    return pc.sort_indices(table, sort_keys=list(keys), null_placement=null_placement)
