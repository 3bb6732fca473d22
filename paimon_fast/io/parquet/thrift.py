"""The Thrift compact protocol, only as much of it as a Parquet footer, page headers and
page index need: :class:`Decoder` reads structs into ``{field id: value}`` dicts with every
length and offset checked against its buffer (:class:`_Truncated` when input ends inside a
value), :class:`_Encoder` writes them."""

from __future__ import annotations

import struct
from typing import Optional

from ...errors import IndexFormatError

_MAX_DEPTH = 24  # Thrift nesting of Parquet metadata is at most ~7


class _Truncated(IndexFormatError):
    """Thrift input ended inside a value (a page header probe then reads more)."""


(
    _T_STOP,
    _T_TRUE,
    _T_FALSE,
    _T_BYTE,
    _T_I16,
    _T_I32,
    _T_I64,
    _T_DOUBLE,
    _T_BINARY,
    _T_LIST,
    _T_SET,
    _T_MAP,
    _T_STRUCT,
    _T_UUID,
) = range(14)


class Decoder:
    """Reads Thrift compact structs from ``buf[pos:end]`` into ``{field id: value}`` dicts
    (lists as lists, binaries as bytes, bools, ints, floats).  ``base`` is ``buf``'s offset
    in the file, for error messages."""

    __slots__ = ("buf", "pos", "end", "base", "what")

    def __init__(self, buf, pos: int = 0, end: Optional[int] = None, base: int = 0, what: str = "Parquet metadata"):
        self.buf = buf
        self.pos = pos
        self.end = len(buf) if end is None else end
        self.base = base
        self.what = what

    def _trunc(self):
        return _Truncated(f"{self.what}: Thrift data truncated", self.base + self.pos)

    def varint(self) -> int:
        buf, pos, end = self.buf, self.pos, self.end
        shift = acc = 0
        while True:
            if pos >= end:
                self.pos = pos
                raise self._trunc()
            b = buf[pos]
            pos += 1
            acc |= (b & 0x7F) << shift
            if b < 0x80:
                self.pos = pos
                return acc
            shift += 7
            if shift > 63:
                raise IndexFormatError(f"{self.what}: Thrift varint longer than 10 bytes", self.base + pos)

    def zigzag(self) -> int:
        v = self.varint()
        return (v >> 1) ^ -(v & 1)

    def struct(self, depth: int = 0) -> dict:
        if depth > _MAX_DEPTH:
            raise IndexFormatError(f"{self.what}: Thrift structs nested deeper than {_MAX_DEPTH}", self.base + self.pos)
        out = {}
        fid = 0
        buf = self.buf
        while True:
            if self.pos >= self.end:
                raise self._trunc()
            h = buf[self.pos]
            self.pos += 1
            t = h & 0x0F
            if t == _T_STOP:
                return out
            d = h >> 4
            if d:
                fid += d
            else:
                fid = self.zigzag()
                if not -32768 <= fid <= 32767:
                    raise IndexFormatError(f"{self.what}: Thrift field id {fid} out of range", self.base + self.pos)
            out[fid] = self.value(t, depth, True)

    def value(self, t: int, depth: int, in_struct: bool = False):
        if t == _T_I32 or t == _T_I64 or t == _T_I16:
            return self.zigzag()
        if t == _T_BINARY:
            n = self.varint()
            pos = self.pos
            if n > self.end - pos:
                raise self._trunc()
            self.pos = pos + n
            return bytes(self.buf[pos : pos + n])
        if t == _T_STRUCT:
            return self.struct(depth + 1)
        if t == _T_LIST or t == _T_SET:
            return self.list(depth)
        if t == _T_TRUE or t == _T_FALSE:
            if in_struct:
                return t == _T_TRUE
            return self.byte() == _T_TRUE  # a bool element of a list is one byte
        if t == _T_BYTE:
            b = self.byte()
            return b - 256 if b > 127 else b
        if t == _T_DOUBLE:
            return struct.unpack("<d", self.raw(8))[0]
        if t == _T_MAP:
            n = self.varint()
            if not n:
                return []
            kv = self.byte()
            if 2 * n > self.end - self.pos:
                raise self._trunc()
            # Parquet's metadata has no maps: keep the pairs (keys may be unhashable values)
            return [(self.value(kv >> 4, depth + 1), self.value(kv & 0x0F, depth + 1)) for _ in range(n)]
        if t == _T_UUID:
            return bytes(self.raw(16))
        raise IndexFormatError(f"{self.what}: unknown Thrift type {t}", self.base + self.pos)

    def list(self, depth: int) -> list:
        if depth > _MAX_DEPTH:
            raise IndexFormatError(f"{self.what}: Thrift lists nested deeper than {_MAX_DEPTH}", self.base + self.pos)
        h = self.byte()
        n = h >> 4
        et = h & 0x0F
        if n == 15:
            n = self.varint()
        if n > self.end - self.pos:  # every element takes at least one byte
            raise self._trunc()
        if et == _T_I32 or et == _T_I64 or et == _T_I16:
            zz = self.zigzag
            return [zz() for _ in range(n)]
        return [self.value(et, depth + 1) for _ in range(n)]

    def byte(self) -> int:
        if self.pos >= self.end:
            raise self._trunc()
        self.pos += 1
        return self.buf[self.pos - 1]

    def raw(self, n: int):
        if n > self.end - self.pos:
            raise self._trunc()
        self.pos += n
        return self.buf[self.pos - n : self.pos]


class _Encoder:
    """Writes Thrift compact structs (only the field kinds a Parquet footer needs)."""

    __slots__ = ("out", "_last")

    def __init__(self):
        self.out = bytearray()
        self._last = [0]

    def _varint(self, v: int):
        out = self.out
        while v >= 0x80:
            out.append((v & 0x7F) | 0x80)
            v >>= 7
        out.append(v)

    def _field(self, fid: int, t: int):
        d = fid - self._last[-1]
        if 0 < d <= 15:
            self.out.append((d << 4) | t)
        else:
            self.out.append(t)
            self._varint((fid << 1) ^ (fid >> 63))
        self._last[-1] = fid

    def int(self, fid: int, v: int, t: int = _T_I64):
        self._field(fid, t)
        self._varint((v << 1) ^ (v >> 63))

    def binary(self, fid: int, v: bytes):
        self._field(fid, _T_BINARY)
        self._varint(len(v))
        self.out += v

    def list_begin(self, fid: int, et: int, n: int):
        self._field(fid, _T_LIST)
        if n < 15:
            self.out.append((n << 4) | et)
        else:
            self.out.append(0xF0 | et)
            self._varint(n)

    def list_ints(self, fid: int, values, et: int = _T_I32):
        self.list_begin(fid, et, len(values))
        for v in values:
            self._varint((v << 1) ^ (v >> 63))

    def list_binaries(self, fid: int, values):
        self.list_begin(fid, _T_BINARY, len(values))
        for v in values:
            self._varint(len(v))
            self.out += v

    def struct_begin(self, fid: Optional[int] = None):
        """A struct field (``fid``) or a list element (None)."""
        if fid is not None:
            self._field(fid, _T_STRUCT)
        self._last.append(0)

    def struct_end(self):
        self.out.append(_T_STOP)
        self._last.pop()
