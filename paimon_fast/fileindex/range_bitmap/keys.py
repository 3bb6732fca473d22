"""The range bitmap index's name, version and option, the column types it takes
(:func:`check_type`) and :class:`KeyCodec`: column values as dictionary keys in Java's order."""

from __future__ import annotations

import struct

import numpy as np

from ...errors import UnsupportedTypeError
from ...core.types import DataType, decimal_unscaled, fixed_values, long_keys, to_arrow_array, validity_mask
from .._bitslice import NullLiteralError, _k

INDEX_TYPE = "range-bitmap"
CHUNK_SIZE = "chunk-size"
VERSION = 1

_FIXED = {
    "TINYINT": 1,
    "SMALLINT": 2,
    "INT": 4,
    "DATE": 4,
    "TIME": 4,
    "BIGINT": 8,
    "TIMESTAMP": 8,
    "TIMESTAMP_LTZ": 8,
    "DECIMAL": 8,
    "FLOAT": 4,
    "DOUBLE": 8,
    "BOOLEAN": 1,
}


_NARROW = ("TINYINT", "SMALLINT", "INT", "DATE")


def check_type(dtype: DataType) -> None:
    """Raise UnsupportedTypeError for types Java's range bitmap rejects."""
    r = dtype.root
    if r in ("TIMESTAMP", "TIMESTAMP_LTZ") and (dtype.precision or 0) > 6:
        raise UnsupportedTypeError("The range-bitmap index only supports TIMESTAMP with a precision in [0, 6].")
    if r == "DECIMAL" and (dtype.precision or 0) > 18:
        raise UnsupportedTypeError("The range-bitmap index only supports DECIMAL with a precision in [0, 18].")
    if r not in _FIXED and not dtype.is_string:
        raise UnsupportedTypeError(f"range-bitmap does not support type {dtype} (as Java Paimon)")


def _float_sort32(bits: np.ndarray) -> np.ndarray:
    """int32 IEEE bits -> int64 keys ordered as Java's Float.compare (NaN canonical)."""
    b = bits.astype(np.int32, copy=True)
    nan = (b & 0x7F800000) == 0x7F800000
    nan &= (b & 0x007FFFFF) != 0
    b[nan] = 0x7FC00000
    return (b ^ ((b >> 31) & 0x7FFFFFFF)).astype(np.int64)


def _float_sort64(bits: np.ndarray) -> np.ndarray:
    b = bits.astype(np.int64, copy=True)
    nan = (b & 0x7FF0000000000000) == 0x7FF0000000000000
    nan &= (b & 0x000FFFFFFFFFFFFF) != 0
    b[nan] = 0x7FF8000000000000
    return b ^ ((b >> 63) & 0x7FFFFFFFFFFFFFFF)


class KeyCodec:
    """Per-type key handling: column -> order-preserving int64 keys (or bytes
    for strings), key <-> file bytes, literal -> key."""

    def __init__(self, dtype: DataType):
        check_type(dtype)
        self.dtype = dtype
        self.root = dtype.root
        self.is_string = dtype.is_string
        self.size = 0 if self.is_string else _FIXED[self.root]
        self.default_chunk = "0b" if self.root in ("BOOLEAN", "TINYINT", "SMALLINT") else "16kb"
        if not self.is_string:
            self.be = np.dtype(">u1") if self.root == "BOOLEAN" else np.dtype(f">i{self.size}")
        self._literals = {}  # literal -> sort key (a plan asks every file's index for the same ones)

    # --- columns
    def column(self, values):
        """``(keys, valid)``: int64 sort keys (or an Arrow binary array for
        strings) and a bool mask (None = no nulls)."""
        arr = to_arrow_array(values, self.dtype)
        valid = validity_mask(arr)
        if self.is_string:
            return arr, valid
        return self.sort_keys_of(arr), valid

    def sort_keys_of(self, arr) -> np.ndarray:
        r = self.root
        if r == "FLOAT":
            return _float_sort32(fixed_values(arr).view(np.int32))
        if r == "DOUBLE":
            return _float_sort64(fixed_values(arr).view(np.int64))
        if r == "DECIMAL":
            return decimal_unscaled(arr).astype(np.int64, copy=False)
        if r == "BOOLEAN":
            return fixed_values(arr).astype(np.int64)
        if r in _NARROW:  # 32-bit keys stay int32 (half the memory; the kernels take both)
            return long_keys(arr, self.dtype).astype(np.int32, copy=False)
        return long_keys(arr, self.dtype).astype(np.int64, copy=False)

    # --- file keys
    def raw_from_sort(self, keys: np.ndarray) -> np.ndarray:
        """Sort keys -> the integers Java writes (raw float bits for FLOAT/DOUBLE)."""
        if self.root == "FLOAT":
            k = keys.astype(np.int64)
            return (k ^ ((k >> 31) & 0x7FFFFFFF)).astype(np.int32)
        if self.root == "DOUBLE":
            return keys ^ ((keys >> 63) & 0x7FFFFFFFFFFFFFFF)
        return keys

    def sort_key_from_file(self, b: bytes) -> int:
        """One big-endian file key -> its sort key (:meth:`sort_from_file` for a scalar)."""
        raw = int.from_bytes(b, "big", signed=self.root != "BOOLEAN")
        if self.root == "FLOAT":
            if (raw & 0x7F800000) == 0x7F800000 and raw & 0x007FFFFF:
                raw = 0x7FC00000
            return raw ^ ((raw >> 31) & 0x7FFFFFFF)
        if self.root == "DOUBLE":
            if (raw & 0x7FF0000000000000) == 0x7FF0000000000000 and raw & 0x000FFFFFFFFFFFFF:
                raw = 0x7FF8000000000000
            return raw ^ ((raw >> 63) & 0x7FFFFFFFFFFFFFFF)
        return raw

    def sort_from_file(self, buf) -> np.ndarray:
        """Big-endian file keys -> sort keys."""
        if self.root in ("FLOAT", "DOUBLE"):
            # one kernel pass (numpy's five: about 25 us for a dictionary chunk, twice a file)
            return _k.float_sort_keys(np.frombuffer(buf, np.uint8), self.size)
        return np.frombuffer(buf, dtype=self.be).astype(np.int64)

    def to_file(self, keys: np.ndarray) -> bytes:
        return self.raw_from_sort(keys).astype(self.be).tobytes()

    def serialize_key(self, key) -> bytes:
        if self.is_string:
            return struct.pack(">i", len(key)) + key
        return self.to_file(np.array([key], dtype=np.int64))

    def value_of(self, key):
        """A sort key -> a plain Python value (for describe / get)."""
        if self.is_string:
            return key.decode("utf-8", "replace")
        r = self.root
        raw = int(self.raw_from_sort(np.array([key], dtype=np.int64))[0])
        if r == "FLOAT":
            return struct.unpack(">f", struct.pack(">i", raw))[0]
        if r == "DOUBLE":
            return struct.unpack(">d", struct.pack(">q", raw))[0]
        if r == "BOOLEAN":
            return bool(raw)
        return raw

    # --- literals
    def literal(self, v):
        """A predicate literal -> its sort key; None raises NullLiteralError."""
        if v is None:
            raise NullLiteralError("null literal in a range-bitmap value comparison (Java: NullPointerException)")
        if self.is_string:
            return v.encode("utf-8") if isinstance(v, str) else bytes(v)
        if (
            self.root in ("TINYINT", "SMALLINT", "INT", "BIGINT")
            and isinstance(v, (int, np.integer))
            and not isinstance(v, bool)
        ):
            return int(v)
        try:
            memo = (type(v), v.hex() if isinstance(v, float) else v)  # (-0.0 == 0.0: keyed by its bits)
            got = self._literals.get(memo)
        except TypeError:  # an unhashable literal
            memo = got = None
        if got is None:
            got = int(self.sort_keys_of(to_arrow_array([v], self.dtype))[0])
            if memo is not None and len(self._literals) < 256:
                self._literals[memo] = got
        return got
