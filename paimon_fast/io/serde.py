"""Java-compatible framing: big-endian ints, modified UTF-8, var-ints, and a
bounded reader whose every read is checked against its buffer.

Java's ``DataOutputStream`` is big-endian; Paimon's ``MemorySliceOutput`` and the
roaring bitmaps are little-endian.  Both are here so that no format module
re-implements them.
"""

from __future__ import annotations

import struct

from ..errors import IndexFormatError

_I8 = struct.Struct(">b")
_U8 = struct.Struct(">B")
_I16 = struct.Struct(">h")
_U16 = struct.Struct(">H")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_F32 = struct.Struct(">f")
_F64 = struct.Struct(">d")
_LI32 = struct.Struct("<i")
_LU32 = struct.Struct("<I")
_LI64 = struct.Struct("<q")
_LU64 = struct.Struct("<Q")


# ---------------------------------------------------------------- modified UTF-8


def encode_modified_utf8(s: str) -> bytes:
    """Java ``DataOutput.writeUTF`` body (no length): U+0000 as C0 80 and
    characters outside the BMP as two 3-byte surrogates."""
    try:
        raw = s.encode("utf-8")
        if b"\x00" not in raw and all(b < 0xF0 for b in raw):
            return raw
    except UnicodeEncodeError:  # lone surrogates in the str
        pass
    out = bytearray()
    data = s.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        c = (data[i] << 8) | data[i + 1]
        if 0x0001 <= c <= 0x007F:
            out.append(c)
        elif c <= 0x07FF:  # includes U+0000
            out.append(0xC0 | (c >> 6))
            out.append(0x80 | (c & 0x3F))
        else:
            out.append(0xE0 | (c >> 12))
            out.append(0x80 | ((c >> 6) & 0x3F))
            out.append(0x80 | (c & 0x3F))
    return bytes(out)


def decode_modified_utf8(b: bytes, offset: int = 0) -> str:
    """Inverse of :func:`encode_modified_utf8`; ``offset`` is for error messages."""
    b = bytes(b)
    if b.isascii() and 0 not in b:  # the common case: identical to ASCII
        return b.decode("ascii")
    units = []
    i, n = 0, len(b)
    while i < n:
        c = b[i]
        if c < 0x80:
            if c == 0:
                raise IndexFormatError("modified UTF-8 contains a raw NUL byte", offset + i)
            units.append(c)
            i += 1
        elif (c & 0xE0) == 0xC0:
            if i + 1 >= n or (b[i + 1] & 0xC0) != 0x80:
                raise IndexFormatError("malformed modified UTF-8 (2-byte sequence)", offset + i)
            units.append(((c & 0x1F) << 6) | (b[i + 1] & 0x3F))
            i += 2
        elif (c & 0xF0) == 0xE0:
            if i + 2 >= n or (b[i + 1] & 0xC0) != 0x80 or (b[i + 2] & 0xC0) != 0x80:
                raise IndexFormatError("malformed modified UTF-8 (3-byte sequence)", offset + i)
            units.append(((c & 0x0F) << 12) | ((b[i + 1] & 0x3F) << 6) | (b[i + 2] & 0x3F))
            i += 3
        else:
            raise IndexFormatError(f"malformed modified UTF-8 (lead byte 0x{c:02x})", offset + i)
    # surrogatepass joins valid pairs and keeps lone surrogates (Java strings may hold them)
    return b"".join(u.to_bytes(2, "big") for u in units).decode("utf-16-be", "surrogatepass")


def write_utf(s: str) -> bytes:
    """Java ``writeUTF``: u16 big-endian byte length, then modified UTF-8."""
    body = encode_modified_utf8(s)
    if len(body) > 0xFFFF:
        raise ValueError(f"string too long for writeUTF: {len(body)} bytes")
    return _U16.pack(len(body)) + body


# ---------------------------------------------------------------- var-ints


def varint_size(v: int) -> int:
    """Bytes of an unsigned LEB128 var-int (Paimon ``VarLengthIntUtils``)."""
    n = 1
    while v >= 0x80:
        v >>= 7
        n += 1
    return n


def encode_varint(v: int) -> bytes:
    """Unsigned LEB128, low 7-bit group first; negative values are rejected as in Java."""
    if v < 0:
        raise ValueError(f"negative value {v} cannot be a var-int")
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


# ---------------------------------------------------------------- bounded reader


class BoundedReader:
    """Sequential reader over a bytes-like object; every read is bounds-checked.

    ``base`` is added to positions in error messages so that they are absolute
    offsets in the enclosing file.
    """

    __slots__ = ("buf", "pos", "end", "base")

    def __init__(self, buf, pos: int = 0, end: int | None = None, base: int = 0):
        self.buf = memoryview(buf).cast("B") if not isinstance(buf, (bytes, bytearray)) else buf
        self.pos = pos
        self.end = len(buf) if end is None else end
        self.base = base
        if not (0 <= pos <= self.end <= len(buf)):
            raise IndexFormatError(f"reader window [{pos}, {end}) outside a {len(buf)}-byte buffer", base)

    @property
    def remaining(self) -> int:
        return self.end - self.pos

    @property
    def abs_pos(self) -> int:
        return self.base + self.pos

    def _need(self, n: int, what: str) -> int:
        p = self.pos
        if n < 0 or p + n > self.end:
            raise IndexFormatError(f"truncated: {what} needs {n} bytes, {self.end - p} left", self.base + p)
        self.pos = p + n
        return p

    def fail(self, what: str, at: int | None = None):
        raise IndexFormatError(what, self.base + (self.pos if at is None else at))

    def read_bytes(self, n: int, what: str = "bytes") -> bytes:
        p = self._need(n, what)
        return bytes(self.buf[p : p + n])

    def skip(self, n: int, what: str = "bytes") -> int:
        """Skip ``n`` bytes and return the position where they started."""
        return self._need(n, what)

    def u8(self, what="u8") -> int:
        return self.buf[self._need(1, what)]

    def i8(self, what="i8") -> int:
        return _I8.unpack_from(self.buf, self._need(1, what))[0]

    def i16(self, what="i16") -> int:
        return _I16.unpack_from(self.buf, self._need(2, what))[0]

    def u16(self, what="u16") -> int:
        return _U16.unpack_from(self.buf, self._need(2, what))[0]

    def i32(self, what="i32") -> int:
        return _I32.unpack_from(self.buf, self._need(4, what))[0]

    def i64(self, what="i64") -> int:
        return _I64.unpack_from(self.buf, self._need(8, what))[0]

    def f32(self, what="f32") -> float:
        return _F32.unpack_from(self.buf, self._need(4, what))[0]

    def f64(self, what="f64") -> float:
        return _F64.unpack_from(self.buf, self._need(8, what))[0]

    def le_i32(self, what="i32 (LE)") -> int:
        return _LI32.unpack_from(self.buf, self._need(4, what))[0]

    def le_u32(self, what="u32 (LE)") -> int:
        return _LU32.unpack_from(self.buf, self._need(4, what))[0]

    def le_i64(self, what="i64 (LE)") -> int:
        return _LI64.unpack_from(self.buf, self._need(8, what))[0]

    def le_u64(self, what="u64 (LE)") -> int:
        return _LU64.unpack_from(self.buf, self._need(8, what))[0]

    def length(self, what: str, max_value: int | None = None) -> int:
        """A big-endian i32 length, checked to be >= 0 and to fit in what is left."""
        at = self.pos
        n = self.i32(what)
        limit = self.end - self.pos if max_value is None else max_value
        if n < 0 or n > limit:
            raise IndexFormatError(f"{what} = {n} is negative or exceeds the {limit} bytes available", self.base + at)
        return n

    def utf(self, what="modified UTF-8 string") -> str:
        n = self.u16(what + " length")
        p = self._need(n, what)
        return decode_modified_utf8(bytes(self.buf[p : p + n]), self.base + p)

    def varint(self, what="var-int", max_bits: int = 64) -> int:
        start = self.pos
        shift = 0
        v = 0
        while True:
            if self.pos >= self.end:
                raise IndexFormatError(f"truncated {what}", self.base + start)
            b = self.buf[self.pos]
            self.pos += 1
            v |= (b & 0x7F) << shift
            if not b & 0x80:
                break
            shift += 7
            if shift >= max_bits + 7:
                raise IndexFormatError(f"{what} longer than {max_bits} bits", self.base + start)
        if v >= (1 << max_bits):
            raise IndexFormatError(f"{what} overflows {max_bits} bits", self.base + start)
        return v


# ---------------------------------------------------------------- writers


def be_i32(v: int) -> bytes:
    return _I32.pack(v)


def be_i64(v: int) -> bytes:
    return _I64.pack(v)


def be_i16(v: int) -> bytes:
    return _I16.pack(v)


def be_u8(v: int) -> bytes:
    return _U8.pack(v)
