"""``SortedIndexFileMeta``: the manifest-level metadata of one global index file.

Bytes (Paimon's ``MemorySliceOutput``, little-endian): ``i32 first key length``,
first key, ``i32 last key length``, last key, ``u8 has nulls``, ``u8 version = 1``,
``u8 null-key flags`` (bit 0: first key is null, bit 1: last key is null).
A null key is written with length 0.  Old metadata without the last two bytes
uses two zero lengths + has nulls for an all-null file.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Optional

from ..errors import IndexFormatError

_FIRST_NULL = 1
_LAST_NULL = 2
_VERSION = 1


@dataclass(frozen=True)
class SortedIndexFileMeta:
    """First and last non-null key bytes (None when the file has only nulls) and has-nulls."""

    first_key: Optional[bytes]
    last_key: Optional[bytes]
    has_nulls: bool

    @property
    def only_nulls(self) -> bool:
        return self.first_key is None and self.last_key is None

    def serialize(self) -> bytes:
        flags = 0
        out = bytearray()
        for key, bit in ((self.first_key, _FIRST_NULL), (self.last_key, _LAST_NULL)):
            if key is None:
                out += struct.pack("<i", 0)
                flags |= bit
            else:
                out += struct.pack("<i", len(key)) + key
        out += bytes((1 if self.has_nulls else 0, _VERSION, flags))
        return bytes(out)

    @staticmethod
    def deserialize(data) -> "SortedIndexFileMeta":
        if isinstance(data, SortedIndexFileMeta):
            return data
        b = bytes(data)
        p = 0
        keys = []
        for what in ("first key", "last key"):
            if len(b) - p < 4:
                raise IndexFormatError(f"SortedIndexFileMeta truncated ({what} length)", p)
            (n,) = struct.unpack_from("<i", b, p)
            p += 4
            if n < 0 or n > len(b) - p:
                raise IndexFormatError(f"SortedIndexFileMeta {what} length {n} out of range", p - 4)
            keys.append(b[p : p + n])
            n0 = n
            p += n0
        if p >= len(b):
            raise IndexFormatError("SortedIndexFileMeta truncated (has nulls)", p)
        has_nulls = b[p] == 1
        p += 1
        first, last = keys
        if len(b) - p >= 2:
            if b[p] == _VERSION:
                flags = b[p + 1]
                first = None if flags & _FIRST_NULL else first
                last = None if flags & _LAST_NULL else last
        elif len(first) == 0 and len(last) == 0 and has_nulls:
            first = last = None
        return SortedIndexFileMeta(first, last, has_nulls)
