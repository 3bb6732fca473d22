"""The range bitmap's dictionary, read lazily: the key codec per type, the region of the index
it lives in (its first part read at once, keys read where asked) and the fixed-length and
string dictionaries, chunk by chunk (:class:`~.reader.RangeBitmapReader` opens them)."""

from __future__ import annotations

import bisect
import functools
import struct

import numpy as np

from ...errors import IndexFormatError
from .keys import KeyCodec


_CODECS: dict = {}


def _codec(dtype) -> KeyCodec:
    """The key codec of a type, shared by the readers of every file (and its literal memo)."""
    key = str(dtype)
    c = _CODECS.get(key)
    if c is None:
        c = KeyCodec(dtype)
        if len(_CODECS) < 256:
            _CODECS[key] = c
    return c


@functools.lru_cache(maxsize=64)
def _consecutive_offsets(nchunks: int, hs: int) -> bytes:
    """The chunk offset table of a fixed-length dictionary (big-endian i32 k*hs)."""
    return (np.arange(nchunks, dtype=np.int64) * hs).astype(">i4").tobytes()


@functools.lru_cache(maxsize=None)
def _chunk_dtype(be: np.dtype) -> np.dtype:
    return np.dtype(
        [("v", "u1"), ("k", be), ("code", ">i4"), ("off", ">i4"), ("n", ">i4"), ("klen", ">i4"), ("ks", ">i4")]
    )


class _Region:
    """Bytes ``[start, start + size)`` of an index: its first part read at once (``head``), the
    rest read from the source only where asked (a dictionary's keys: a lookup needs one chunk)."""

    def __init__(self, source, start: int, size: int, head: int):
        self.source, self.start, self.size = source, start, size
        self.head = np.frombuffer(source.read_at(start, min(head, size), "range bitmap dictionary"), np.uint8)

    def get(self, lo: int, hi: int):
        """Bytes ``[lo, hi)`` of the region (bounds checked against the source)."""
        if hi <= len(self.head):
            return self.head[lo:hi]
        if lo < 0 or hi > self.size or hi < lo:
            raise IndexFormatError(f"range bitmap dictionary range [{lo}, {hi}) outside its {self.size} bytes", lo)
        return np.frombuffer(self.source.read_at(self.start + lo, hi - lo, "range bitmap dictionary keys"), np.uint8)


class _FixedDictionary:
    """Chunked dictionary of fixed-length keys.  Opening reads only the chunks'
    first keys; a chunk's header is validated and its keys decoded when a
    lookup needs it (codes stay within [0, cardinality] whatever the bytes)."""

    def __init__(self, codec, data, base, nchunks, chunks_at, keys_at, keys_end, card, region=None):
        self.codec = codec
        self.data = data
        self.region = region  # the keys, read per chunk (None: they are in data)
        self.base = base
        self.chunks_at = chunks_at
        self.keys_at = keys_at
        self.keys_len = keys_end - keys_at
        self.card = card
        self.nchunks = nchunks
        dt = _chunk_dtype(codec.be)
        self.head = np.frombuffer(data, dtype=dt, count=nchunks, offset=chunks_at) if nchunks else np.zeros(0, dt)
        self.first = codec.sort_from_file(self.head["k"].tobytes()) if nchunks else np.zeros(0, np.int64)
        self._first = self.first.tolist()
        self._meta = {}
        self._cache = {}
        self._codes = None

    def meta(self, i):
        """``(code, n, keys offset)`` of chunk i, validated."""
        m = self._meta.get(i)
        if m is None:
            v, _, code, off, n, klen, ks = self.head[i].tolist()
            at = self.base + self.chunks_at + i * self.head.dtype.itemsize
            if v > 1:
                raise IndexFormatError("range bitmap dictionary chunk version > 1", at)
            if ks != self.codec.size or n < 0 or klen != n * ks or off < 0 or off + klen > self.keys_len:
                raise IndexFormatError("range bitmap dictionary chunk keys outside the keys area", at)
            if code < 0 or code + n >= self.card:
                raise IndexFormatError(
                    f"range bitmap dictionary chunk codes [{code}, {code + n}] outside the cardinality {self.card}", at
                )
            m = self._meta[i] = (code, n, self.keys_at + off)
        return m

    def _chunk(self, i):
        c = self._cache.get(i)
        if c is None:
            _, n, o = self.meta(i)
            raw = (
                self.data[o : o + n * self.codec.size]
                if self.region is None
                else self.region.get(o, o + n * self.codec.size)
            )
            c = self._cache[i] = self.codec.sort_from_file(raw)
        return c

    def find(self, key):
        """``(found, code)``; when not found ``code`` is the insertion point."""
        i = bisect.bisect_right(self._first, key) - 1
        if i < 0:
            return False, 0
        code = self.meta(i)[0]
        if self._first[i] == key:
            return True, code
        ck = self._chunk(i)
        j = int(np.searchsorted(ck, key, "left"))
        if j < len(ck) and ck[j] == key:
            return True, code + 1 + j
        return False, code + 1 + j

    def key_at(self, code):
        if self._codes is None:
            self._codes = self.head["code"].astype(np.int64)
        i = int(np.searchsorted(self._codes, code, "right")) - 1
        c0, n, _ = self.meta(max(i, 0))
        if code == c0:
            return int(self.first[i])
        if not 0 <= code - c0 - 1 < n:
            raise IndexFormatError(f"range bitmap dictionary has no key for code {code}", self.base + self.chunks_at)
        return int(self._chunk(i)[code - c0 - 1])

    @property
    def chunks(self):
        return self.nchunks


class _StringDictionary:
    """Chunked dictionary of variable-length (string) keys."""

    def __init__(self, data, base, nchunks, offsets, chunks_at, chunks_len, keys_at, keys_end, card, region=None):
        self.data = data
        self.region = region  # the keys, read per chunk (None: they are in data)
        self._keys = {}
        self.base = base
        self.keys_at = keys_at
        self.keys_end = keys_end
        self.first, self.code, self.n, self.off, self.olen, self.klen = [], [], [], [], [], []
        for i in range(nchunks):
            p = chunks_at + int(offsets[i])
            end = chunks_at + (int(offsets[i + 1]) if i + 1 < nchunks else chunks_len)
            if not chunks_at <= p <= end <= chunks_at + chunks_len or end - p < 25:
                raise IndexFormatError("range bitmap dictionary chunk header out of bounds", base + p)
            if data[p] > 1:
                raise IndexFormatError("range bitmap dictionary chunk version > 1", base + p)
            (ln,) = struct.unpack_from(">i", data, p + 1)
            if ln < 0 or p + 5 + ln + 20 > end:
                raise IndexFormatError("range bitmap dictionary chunk key length out of bounds", base + p + 1)
            key = bytes(data[p + 5 : p + 5 + ln])
            code, off, n, olen, klen = struct.unpack_from(">iiiii", data, p + 5 + ln)
            if n < 0 or olen != 4 * n or klen < 0 or off < 0 or keys_at + off + olen + klen > keys_end:
                raise IndexFormatError("range bitmap dictionary chunk keys outside the keys area", base + p)
            exp = (self.code[-1] + self.n[-1] + 1) if self.code else 0
            if code != exp:
                raise IndexFormatError("range bitmap dictionary codes out of sequence", base + p)
            self.first.append(key)
            self.code.append(code)
            self.n.append(n)
            self.off.append(keys_at + off)
            self.olen.append(olen)
            self.klen.append(klen)
        total = (self.code[-1] + self.n[-1] + 1) if self.code else 0
        if total != card:
            raise IndexFormatError("range bitmap dictionary codes do not cover the cardinality", base + chunks_at)

    def _chunk_bytes(self, i):
        """``(bytes, origin)``: chunk i's key offsets and keys, and where they start in data."""
        o = self.off[i]
        if self.region is None:
            return self.data, 0
        got = self._keys.get(i)
        if got is None:
            got = self._keys[i] = (self.region.get(o, o + self.olen[i] + self.klen[i]), o)
        return got

    def _key(self, i, j):
        o = self.off[i]
        buf, at = self._chunk_bytes(i)
        (rel,) = struct.unpack_from(">i", buf, o + 4 * j - at)
        p = o + self.olen[i] + rel
        if rel < 0 or p + 4 > o + self.olen[i] + self.klen[i]:
            raise IndexFormatError("range bitmap dictionary key offset out of bounds", self.base + o + 4 * j)
        (ln,) = struct.unpack_from(">i", buf, p - at)
        if ln < 0 or p + 4 + ln > o + self.olen[i] + self.klen[i]:
            raise IndexFormatError("range bitmap dictionary key length out of bounds", self.base + p)
        return bytes(buf[p - at + 4 : p - at + 4 + ln])

    def find(self, key):
        i = bisect.bisect_right(self.first, key) - 1
        if i < 0:
            return False, 0
        if self.first[i] == key:
            return True, self.code[i]
        lo, hi = 0, self.n[i] - 1
        base = self.code[i] + 1
        while lo <= hi:
            mid = (lo + hi) >> 1
            k = self._key(i, mid)
            if k < key:
                lo = mid + 1
            elif k > key:
                hi = mid - 1
            else:
                return True, base + mid
        return False, base + lo

    def key_at(self, code):
        i = bisect.bisect_right(self.code, code) - 1
        if code == self.code[i]:
            return self.first[i]
        return self._key(i, code - self.code[i] - 1)

    @property
    def chunks(self):
        return len(self.code)
