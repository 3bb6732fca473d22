"""The bitmap file index's keys per type (:class:`KeyCodec`: the keys of a column and of a
literal, their Java hash and comparator modes) and the format's fixed numbers (versions, the
default index block size, the header structs); shared by the writer (:mod:`.bitmap_writer`)
and the reader (:mod:`.bitmap`, which describes the format and hands these names on)."""

from __future__ import annotations

import functools
import struct

import numpy as np
import pyarrow as pa

from .._kernels import load as _load
from ..errors import UnsupportedTypeError
from ..core.types import DataType, fixed_values, float_bits, long_keys, to_arrow_array

_k = _load("bitmap")

INDEX_TYPE = "bitmap"
VERSION_1 = 1
VERSION_2 = 2
DEFAULT_INDEX_BLOCK_SIZE = "16kb"
_MAX_INT = 2**31 - 1

_SUPPORTED = (
    "TINYINT",
    "SMALLINT",
    "INT",
    "BIGINT",
    "FLOAT",
    "DOUBLE",
    "DATE",
    "TIME",
    "TIMESTAMP",
    "TIMESTAMP_LTZ",
    "CHAR",
    "VARCHAR",
    "STRING",
    "BOOLEAN",
)

_I32 = struct.Struct(">i")
_HEAD = struct.Struct(">Biib")
_NULLS2 = struct.Struct(">ii")


# ---------------------------------------------------------------- keys per type


class KeyCodec:
    """How one Paimon type is keyed: width (None = ``i32 length + bytes``),
    Java ``hashCode()`` mode, comparator mode, and conversions."""

    def __init__(self, dtype: DataType):
        r = dtype.root
        if r not in _SUPPORTED:
            raise UnsupportedTypeError(f"bitmap index does not support type {dtype} (as Java Paimon)")
        self.dtype = dtype
        self.root = r
        self.width = {
            "TINYINT": 1,
            "BOOLEAN": 1,
            "SMALLINT": 2,
            "INT": 4,
            "DATE": 4,
            "TIME": 4,
            "FLOAT": 4,
            "BIGINT": 8,
            "DOUBLE": 8,
            "TIMESTAMP": 8,
            "TIMESTAMP_LTZ": 8,
        }.get(r)
        self.hash_mode = _k.HASH_BOOL if r == "BOOLEAN" else _k.HASH_LONG if self.width == 8 else _k.HASH_INT
        self.cmp_mode = {"FLOAT": _k.CMP_FLOAT, "DOUBLE": _k.CMP_DOUBLE, "BOOLEAN": 3}.get(r, _k.CMP_SIGNED)
        self.fixed = self.width is not None
        self._int_bounds = {1: (-128, 127), 2: (-32768, 32767), 4: (-(2**31), 2**31 - 1), 8: (-(2**63), 2**63 - 1)}.get(
            self.width
        )

    def keys_of(self, arr) -> np.ndarray:
        r = self.root
        if r == "FLOAT" or r == "DOUBLE":
            return float_bits(arr)
        if r == "BOOLEAN":
            return fixed_values(arr).view(np.int8)
        if r == "TIME":
            return long_keys(arr, self.dtype).astype(np.int32)
        return np.ascontiguousarray(long_keys(arr, self.dtype))

    # -- literals
    def literal_key(self, v):
        """The key of a predicate literal (int for fixed types, bytes for strings);
        None when no stored value can equal it (e.g. out of the type's range)."""
        r = self.root
        if not self.fixed:
            if isinstance(v, str):
                return v.encode("utf-8", "surrogatepass")
            if isinstance(v, (bytes, bytearray, memoryview)):
                return bytes(v)
            raise TypeError(f"a {self.dtype} literal must be a string, got {type(v).__name__}")
        if r == "BOOLEAN":
            if isinstance(v, (bool, np.bool_)) or isinstance(v, (int, np.integer)):
                return 1 if v else 0
            raise TypeError(f"a BOOLEAN literal must be a bool, got {type(v).__name__}")
        if (
            r in ("TINYINT", "SMALLINT", "INT", "BIGINT", "DATE")
            and isinstance(v, (int, np.integer))
            and not isinstance(v, bool)
        ):
            lo, hi = self._int_bounds
            v = int(v)
            return v if lo <= v <= hi else None
        try:
            arr = to_arrow_array([v], self.dtype)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as e:
            raise TypeError(f"cannot use {v!r} as a {self.dtype} literal: {e}") from None
        return int(self.keys_of(arr)[0])

    def order_key(self, key: int) -> int:
        return _k.order_key(key, self.cmp_mode)

    def display(self, key):
        """A readable form of a stored key (for ``describe``)."""
        r = self.root
        if not self.fixed:
            return bytes(key).decode("utf-8", "replace")
        if r == "FLOAT":
            return struct.unpack(">f", struct.pack(">i", key))[0]
        if r == "DOUBLE":
            return struct.unpack(">d", struct.pack(">q", key))[0]
        if r == "BOOLEAN":
            return bool(key)
        return key


@functools.lru_cache(maxsize=256)
def codec_for(dtype: DataType) -> KeyCodec:
    """The (immutable, shared) :class:`KeyCodec` of a type."""
    return KeyCodec(dtype)


def _check_type(dtype: DataType):
    codec_for(dtype)
