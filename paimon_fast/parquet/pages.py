"""Only the wanted values of Parquet data pages, for flat columns (the page decoder of
:func:`paimon_fast.parquet.rows.read_rows`).

pyarrow decodes whole pages: to get 10 rows from 1 MB pages of 130,000 values it builds
130,000-value arrays.  This module reads a column chunk's selected data pages itself:
it decompresses each page (:class:`pyarrow.Codec`, one call per page), walks its
definition levels, dictionary indexes or BYTE_ARRAY length prefixes up to the last wanted
row with the kernels of :mod:`paimon_fast._kernels.pagedecode` (pure-Python twin:
:mod:`paimon_fast.reference.pagedecode`) and builds an Arrow array of the wanted rows
only, in the column's Arrow type as pyarrow reads it.

Handled: data pages V1 and V2; PLAIN, PLAIN_DICTIONARY / RLE_DICTIONARY (with the chunk's
PLAIN dictionary page, decoded once and kept across reads of local files) and RLE for BOOLEAN;
REQUIRED or OPTIONAL flat columns; physical types BOOLEAN, INT32, INT64, FLOAT, DOUBLE,
BYTE_ARRAY whose Arrow type is the physical value itself (integers of any width and
sign, floats, bool, date32, time32[ms] / time64, timestamps in the stored unit, string /
binary and their large variants); codecs UNCOMPRESSED, SNAPPY, GZIP, BROTLI, ZSTD,
LZ4_RAW (ZSTD and BROTLI pages, and Snappy ones by our kernel, decompressed only as far as
the wanted rows reach; GZIP and LZ4_RAW pages whole, GZIP so that its CRC-32 is checked).
Anything else raises :class:`Unsupported` and the caller reads the pages with
pyarrow as before: nested columns, DELTA_* and BYTE_STREAM_SPLIT encodings,
FIXED_LEN_BYTE_ARRAY, INT96, decimals, dictionary-typed reads, Hadoop LZ4, LZO.
Corrupt pages raise :class:`~paimon_fast.errors.IndexFormatError` (what and where).
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections import OrderedDict
from typing import Dict, Optional

import numpy as np
import pyarrow as pa

from ..errors import IndexFormatError
from .thrift import _Decoder

# parquet.thrift: Type, Encoding, CompressionCodec, PageType
_BOOLEAN, _INT32, _INT64, _FLOAT, _DOUBLE, _BYTE_ARRAY = 0, 1, 2, 4, 5, 6
_PLAIN, _PLAIN_DICTIONARY, _RLE, _RLE_DICTIONARY = 0, 2, 3, 8
_DATA_PAGE, _INDEX_PAGE, _DICTIONARY_PAGE, _DATA_PAGE_V2 = 0, 1, 2, 3
_CODECS = {0: None, 1: "snappy", 2: "gzip", 4: "brotli", 6: "zstd", 7: "lz4_raw"}
_WIDTH = {_INT32: np.dtype("<i4"), _INT64: np.dtype("<i8"), _FLOAT: np.dtype("<f4"), _DOUBLE: np.dtype("<f8")}
_MAX_PAGE = 1 << 30  # a page claiming more uncompressed bytes is not decompressed here


class Unsupported(Exception):
    """This column chunk's pages are decoded by pyarrow instead (the message says why)."""


def kernels(twin: bool = False):
    """The compiled page kernels, or their pure-Python twin."""
    if twin:
        from ..reference import pagedecode

        return pagedecode
    from .._kernels import load

    return load("pagedecode")


class Plan:
    """How one flat column's values become its Arrow array: the physical type the chunk must
    have, whether it is OPTIONAL, pyarrow's field for it and the numpy storage dtype."""

    __slots__ = ("physical", "optional", "field", "storage", "large")

    def __init__(self, physical: int, optional: bool, fld: pa.Field, storage, large: bool):
        self.physical = physical
        self.optional = optional
        self.field = fld
        self.storage = storage
        self.large = large


def plan(plain: pa.DataType, fld: pa.Field, repetition) -> Optional[Plan]:
    """The plan of a flat column whose Parquet schema alone gives Arrow type ``plain`` and which
    pyarrow reads as ``fld`` (the file's stored Arrow schema applied), or None when its values
    are not the physical values (decimals, unit conversions, dictionaries, INT96, ...)."""
    t = fld.type
    if repetition not in (0, 1):
        return None
    opt = repetition == 1
    if pa.types.is_timestamp(plain):
        if pa.types.is_timestamp(t) and t.unit == plain.unit:
            return Plan(_INT64, opt, fld, np.dtype("<i8"), False)
        return None
    if pa.types.is_string(plain) or pa.types.is_binary(plain):
        if pa.types.is_string(t) or pa.types.is_binary(t):
            return Plan(_BYTE_ARRAY, opt, fld, None, False)
        if pa.types.is_large_string(t) or pa.types.is_large_binary(t):
            return Plan(_BYTE_ARRAY, opt, fld, None, True)
        return None
    if plain != t:
        return None
    if pa.types.is_boolean(t):
        return Plan(_BOOLEAN, opt, fld, None, False)
    if pa.types.is_integer(t):
        kind = "i" if pa.types.is_signed_integer(t) else "u"  # (not to_pandas_dtype: pandas is optional)
        return Plan(_INT64 if t.bit_width == 64 else _INT32, opt, fld, np.dtype(f"<{kind}{t.bit_width // 8}"), False)
    if pa.types.is_float32(t) or pa.types.is_float64(t):
        return Plan(_FLOAT if t.bit_width == 32 else _DOUBLE, opt, fld, np.dtype(f"<f{t.bit_width // 8}"), False)
    if pa.types.is_date32(t) or (pa.types.is_time32(t) and t.unit == "ms"):
        return Plan(_INT32, opt, fld, np.dtype("<i4"), False)
    if pa.types.is_time64(t):
        return Plan(_INT64, opt, fld, np.dtype("<i8"), False)
    return None


# ---------------------------------------------------------------- one page
def _codec(codec_id):
    if codec_id not in _CODECS:
        raise Unsupported(f"codec {codec_id}")
    name = _CODECS[codec_id]
    if name is None:
        return None
    try:
        return pa.Codec(name)
    except (pa.ArrowException, ValueError):
        raise Unsupported(f"codec {name} not available") from None


def _decompress(codec, body, usize: int, cap: int, at: int, what: str):
    if codec is None:
        if len(body) != usize:
            raise IndexFormatError(f"Parquet {what}: {len(body)} bytes stored, {usize} uncompressed (no codec)", at)
        return np.frombuffer(body, dtype=np.uint8)
    if usize > cap:
        raise IndexFormatError(f"Parquet {what} of {usize} uncompressed bytes (at most {cap} expected)", at)
    try:
        out = codec.decompress(body, decompressed_size=usize)
    except (pa.ArrowException, OSError, ValueError) as e:
        raise IndexFormatError(f"Parquet {what} not decompressible: {e}", at) from None
    if out.size != usize:
        raise IndexFormatError(f"Parquet {what}: {out.size} bytes decompressed, {usize} expected", at)
    return np.frombuffer(out, dtype=np.uint8)


# codecs pyarrow decompresses as a stream: a prefix costs a prefix.  Not GZIP: its CRC-32 at the
# end of the stream is what catches a corrupt page (a bit flipped in a page's first quarter: a
# whole decompression raised 58 times in 60, the streamed prefix returned wrong bytes); ZSTD
# and BROTLI pages (and Snappy) carry no checksum, so a whole decompression does not catch
# those either
_STREAMING = ("zstd", "brotli")
# (and Snappy, by the kernel's snappy_prefix)
_STREAM_MIN = 64 << 10  # smaller pages are decompressed in one call
_WHOLE_FRACTION = 0.4  # a first request for this much of a page decompresses it whole, in one call

# ZSTD pages stream through the zstandard package where it is installed (the ``codecs`` extra):
# it decompresses as far as asked, where pyarrow's stream decompresses each 64 KB of input whole
# (for an 8:1 page, 512 KB for a first 16 KB).  A 1 MB page of sequential int64s: its first
# 16 KB 1.0 -> 0.35 ms, half of it 2.4 -> 0.85 ms.  A decompressor serves one stream at a time;
# those whose stream ended are kept for the next (a new one costs about 0.5 ms).
try:
    import zstandard as _ZSTD
except ImportError:  # pragma: no cover (the codecs extra is not installed)
    _ZSTD = None
_ZSTD_FREE: list = []
_ZSTD_FREE_MAX = 8
_ZSTD_LOCK = threading.Lock()


def _zstd_stream(comp):
    """``(decompressor, reader)`` streaming the ZSTD frames of ``comp``."""
    with _ZSTD_LOCK:
        d = _ZSTD_FREE.pop() if _ZSTD_FREE else None
    if d is None:
        d = _ZSTD.ZstdDecompressor()
    return d, d.stream_reader(comp, read_across_frames=True)


def _zstd_done(d) -> None:
    with _ZSTD_LOCK:
        if len(_ZSTD_FREE) < _ZSTD_FREE_MAX:
            _ZSTD_FREE.append(d)


# what a failing stream raises (pyarrow's, zstandard's)
_STREAM_ERRORS = (pa.ArrowException, OSError, ValueError) + ((_ZSTD.ZstdError,) if _ZSTD is not None else ())


class _Body:
    """The uncompressed bytes of a page (or of a V2 page's values), decompressed only as far as
    asked when the codec streams: the wanted rows of a page seldom need all of it."""

    __slots__ = ("buf", "usize", "stream", "at", "what", "comp", "kern", "out", "codec", "cap", "zd")

    def __init__(self, codec, comp, usize: int, cap: int, at: int, what: str, kern=None):
        self.usize, self.at, self.what, self.stream, self.comp, self.kern = usize, at, what, None, comp, kern
        self.codec, self.cap = codec, cap
        self.out = None  # a streamed page's whole buffer, filled from the front (buf: its filled part)
        self.zd = None  # the zstandard decompressor of a ZSTD stream (returned when it ends)
        name = codec.name if codec is not None else None
        if usize >= _STREAM_MIN and (name in _STREAMING or (name == "snappy" and kern is not None)):
            if usize > cap:
                raise IndexFormatError(f"Parquet {what} of {usize} uncompressed bytes (at most {cap} expected)", at)
            if name == "snappy":
                self.stream = "snappy"
            elif name == "zstd" and _ZSTD is not None:
                self.zd, self.stream = _zstd_stream(comp)
            else:
                self.stream = pa.CompressedInputStream(pa.BufferReader(pa.py_buffer(comp)), name)
            self.buf = np.zeros(0, dtype=np.uint8)
        else:
            self.buf = _decompress(codec, comp, usize, cap, at, what)

    @property
    def complete(self) -> bool:
        return self.stream is None

    def upto(self, n: int) -> np.ndarray:
        """At least the first ``min(n, size)`` bytes (all of them once complete)."""
        have = len(self.buf)
        if self.stream is None or n <= have:
            return self.buf
        n = min(self.usize, max(n, 2 * have, 16 << 10))  # geometric steps: few copies
        if n >= _WHOLE_FRACTION * self.usize and (not have or self.stream == "snappy"):
            # most of the page asked for at once: one call decompresses all of it faster than a
            # stream gives that much (pyarrow streams in 64 KB steps; a longer Snappy prefix
            # decompresses the page's start again, and Snappy's own library is faster than our
            # prefix kernel: rows spread over 1 MB pages, 0.65 -> 0.2 s for 165 MB of pages)
            self.buf = _decompress(self.codec, self.comp, self.usize, self.cap, self.at, self.what)
            self._ended()
            return self.buf
        if self.stream == "snappy":  # the prefix again, longer (at most twice the work in all)
            data, total = self.kern.snappy_prefix(self.comp, n)
            if total != self.usize or len(data) != n:
                raise IndexFormatError(
                    f"Parquet {self.what}: Snappy data of {total} bytes, {self.usize} expected", self.at
                )
            self.buf = np.frombuffer(data, dtype=np.uint8)
            if n == self.usize:
                self.stream = None
            return self.buf
        if self.out is None:  # allocated once, at the page's stated size (checked against the cap)
            self.out = np.empty(self.usize, dtype=np.uint8)
        got = have
        try:  # into the buffer's next bytes: no copies of what was decompressed before
            while got < n:
                k = self.stream.readinto(memoryview(self.out)[got:n])
                if k <= 0:
                    break
                got += k
        except _STREAM_ERRORS as e:
            if self.zd is None:
                raise IndexFormatError(f"Parquet {self.what} not decompressible: {e}", self.at) from None
            # a zstandard stream refused the page (say, a frame asking for a window past its
            # limit): pyarrow's whole decompression decides, as it did before; the refusing
            # decompressor is dropped, never handed to the next page
            self.zd = None
            self.buf = _decompress(self.codec, self.comp, self.usize, self.cap, self.at, self.what)
            self._ended()
            return self.buf
        if got != n:
            raise IndexFormatError(f"Parquet {self.what}: {got} bytes decompressed, {self.usize} expected", self.at)
        self.buf = self.out[:n]
        if n == self.usize:
            self._ended()
        return self.buf

    def _ended(self) -> None:
        """The page is whole: the stream is dropped, its zstandard decompressor kept for the next."""
        self.stream = None
        if self.zd is not None:
            _zstd_done(self.zd)
            self.zd = None

    def all(self) -> np.ndarray:
        return self.upto(self.usize)

    def attempt(self, need: int, fn):
        """``fn(buffer)`` on a prefix of about ``need`` bytes; on the whole when that is too short
        (a kernel reading a prefix sees the same bytes as on the whole, or fails)."""
        buf = self.upto(need)
        if self.complete:
            return fn(buf)
        try:
            return fn(buf)
        except IndexFormatError:
            return fn(self.all())


def _header(buf, at: int):
    """``(PageHeader dict, header length)`` of the page at the start of ``buf``."""
    dec = _Decoder(buf, 0, len(buf), at, "Parquet page header")
    h = dec.struct(1)
    t, usize, csize = h.get(1), h.get(2), h.get(3)
    if (
        not isinstance(t, int)
        or not isinstance(usize, int)
        or not isinstance(csize, int)
        or usize < 0
        or csize < 0
        or dec.pos + csize > len(buf)
    ):
        raise IndexFormatError("Parquet page header without its type or sizes, or a page past its end", at)
    return h, dec.pos


class Dictionary:
    """A column chunk's decoded dictionary page: fixed-width values (``values``, or a page
    ``body`` of ``size`` values decompressed as far as the indexes asked for need), or
    BYTE_ARRAY values as the page's bytes with each value's start and length."""

    __slots__ = ("values", "buf", "starts", "lens", "size", "body", "dtype", "lock", "broken")

    def __init__(self, values=None, buf=None, starts=None, lens=None, body=None, size=0, dtype=None):
        self.values, self.buf, self.starts, self.lens = values, buf, starts, lens
        self.body, self.dtype = body, dtype
        self.size = len(values) if values is not None else len(starts) if starts is not None else size
        self.lock = threading.Lock() if body is not None else None  # a shared body grows under it
        self.broken = False  # its page failed to decompress: never served from the cache again

    @property
    def nbytes(self) -> int:
        """The memory it holds (a partly decompressed page counts whole, with its compressed bytes)."""
        if self.body is not None:
            return self.body.usize + len(self.body.comp)
        if self.values is not None:
            return self.values.nbytes
        return self.buf.nbytes + self.starts.nbytes + self.lens.nbytes

    def take(self, idx: np.ndarray) -> np.ndarray:
        """The fixed-width values at dictionary indexes ``idx`` (checked)."""
        if not len(idx):
            return np.zeros(0, dtype=self.dtype if self.values is None else self.values.dtype)
        m = int(idx.max()) + 1
        if m > self.size:
            raise IndexFormatError(
                f"Parquet dictionary index {m - 1} out of range (a dictionary of {self.size} values)", None
            )
        if self.values is not None:
            return self.values[idx]
        with self.lock:
            try:
                buf = self.body.upto(m * self.dtype.itemsize)
            except IndexFormatError:
                self.broken = True
                raise
            return np.frombuffer(buf, dtype=self.dtype, count=m)[idx]


# Decoded dictionary pages of local files, shared by read_rows calls: point reads on the same
# files (a table's lookups) decompress each dictionary once.  Keyed by (path, size, mtime,
# decoder, row group, column): a file rewritten in place with the same size and modification
# time is not noticed (as for the cached footers).  At most DICTIONARY_CACHE_BYTES (0: off).
DICTIONARY_CACHE_BYTES = 64 << 20
_DICTS: "OrderedDict[tuple, Dictionary]" = OrderedDict()
_DICTS_HELD = [0]
_DICTS_LOCK = threading.Lock()
_SCANNING = contextvars.ContextVar("paimon_fast_scanning", default=False)


@contextlib.contextmanager
def scanning(held: Optional[dict] = None):
    """Within this block (this thread's context) reads add no dictionary to the shared cache: a
    streamed read visits each file once, so keeping its dictionaries would only hold memory (up
    to :data:`DICTIONARY_CACHE_BYTES`) and push out the ones point lookups reuse.  Dictionaries
    already cached are still used.  ``held``: a dict of the caller's that keeps the dictionaries
    decoded here instead (a stream passes one per file: its ranges decode each dictionary once)."""
    token = _SCANNING.set(True if held is None else held)
    try:
        yield
    finally:
        _SCANNING.reset(token)


def clear_dictionary_cache() -> None:
    """Forget the dictionary pages kept across reads."""
    with _DICTS_LOCK:
        _DICTS.clear()
        _DICTS_HELD[0] = 0


class ChunkDictionaries:
    """The dictionaries one read decodes, per ``(row group, leaf)`` key (``get`` / ``[]=``, as a
    dict): also kept in the shared cache when the file has a cache key (a local path)."""

    __slots__ = ("file_key", "local")

    def __init__(self, file_key=None):
        self.file_key = file_key
        self.local: Dict[tuple, Dictionary] = {}

    def get(self, key):
        d = self.local.get(key)
        if d is None and self.file_key is not None:
            held = _SCANNING.get()
            if held is not True and held is not False:
                d = held.get(self.file_key + key)
                if d is not None and not d.broken:
                    self.local[key] = d
                    return d
                d = None
        if d is None and self.file_key is not None and DICTIONARY_CACHE_BYTES > 0:
            k = self.file_key + key
            with _DICTS_LOCK:
                d = _DICTS.get(k)
                if d is not None:
                    if d.broken:
                        _DICTS_HELD[0] -= _DICTS.pop(k).nbytes
                        return None
                    _DICTS.move_to_end(k)
            if d is not None:
                self.local[key] = d
        return d

    def __setitem__(self, key, d: Dictionary):
        self.local[key] = d
        held = _SCANNING.get()
        if held is not True and held is not False and self.file_key is not None:
            held[self.file_key + key] = d  # the scanning caller's, for the file's next ranges
            return
        if self.file_key is None or d.nbytes > DICTIONARY_CACHE_BYTES or held:
            return
        k = self.file_key + key
        with _DICTS_LOCK:
            old = _DICTS.pop(k, None)
            if old is not None:
                _DICTS_HELD[0] -= old.nbytes
            _DICTS[k] = d
            _DICTS_HELD[0] += d.nbytes
            while _DICTS_HELD[0] > DICTIONARY_CACHE_BYTES and _DICTS:
                _DICTS_HELD[0] -= _DICTS.popitem(last=False)[1].nbytes


def plain_values(physical: int, buf, start: int, end: int, nvals: int, at: int, kern) -> "np.ndarray | tuple":
    """All ``nvals`` PLAIN values of ``buf[start:end]`` (a dictionary page's)."""
    if physical == _BYTE_ARRAY:
        if nvals > (end - start) // 4:
            raise IndexFormatError(f"Parquet dictionary page: {nvals} values in {end - start} bytes", at)
        return kern.ba_walk(buf, start, end, nvals, np.arange(nvals, dtype=np.int64))
    dt = _WIDTH.get(physical)
    if dt is None:
        raise Unsupported(f"dictionary of physical type {physical}")
    if nvals * dt.itemsize > end - start:
        raise IndexFormatError(
            f"Parquet dictionary page: {nvals} values of {dt.itemsize} bytes in {end - start} bytes", at
        )
    return np.frombuffer(buf, dtype=dt, count=nvals, offset=start)


def read_dictionary(raw, at: int, physical: int, codec, cap: int, kern) -> Dictionary:
    """The dictionary page in ``raw`` (the bytes of a chunk before its first data page, at file
    offset ``at``; an index page may come first)."""
    pos = 0
    while pos < len(raw):
        h, hlen = _header(memoryview(raw)[pos:], at + pos)
        csize = h[3]
        if h[1] == _DICTIONARY_PAGE:
            d = h.get(7)
            if not isinstance(d, dict) or not isinstance(d.get(1), int) or d[1] < 0:
                raise IndexFormatError("Parquet dictionary page without its header", at + pos)
            if d.get(2, _PLAIN) not in (_PLAIN, _PLAIN_DICTIONARY):
                raise Unsupported(f"dictionary page encoding {d.get(2)}")
            body = _Body(
                codec,
                np.frombuffer(raw, dtype=np.uint8, count=csize, offset=pos + hlen),
                h[2],
                cap,
                at + pos,
                "dictionary page",
                kern,
            )
            dt = _WIDTH.get(physical)
            if dt is not None and not body.complete:  # decompressed as far as the indexes need
                if d[1] * dt.itemsize > h[2]:
                    raise IndexFormatError(
                        f"Parquet dictionary page: {d[1]} values of {dt.itemsize} bytes in {h[2]} bytes", at + pos
                    )
                return Dictionary(body=body, size=d[1], dtype=dt)
            page = body.all()
            vals = plain_values(physical, page, 0, len(page), d[1], at + pos, kern)
            if physical == _BYTE_ARRAY:
                return Dictionary(buf=page, starts=vals[0], lens=vals[1])
            return Dictionary(values=vals)
        if h[1] != _INDEX_PAGE:
            raise Unsupported("a data page before the dictionary page")
        pos += hlen + csize
    raise Unsupported("no dictionary page before the data pages")


def decode_page(raw, at: int, rows: np.ndarray, p: Plan, codec, cap: int, dictionary, kern) -> pa.Array:
    """The values at page rows ``rows`` (sorted, repeats allowed) of the data page ``raw``
    (its header and body, at file offset ``at``) as an Arrow array of the plan's field type.
    ``dictionary``: a callable giving the chunk's :class:`Dictionary` (read on first need).
    Streaming codecs decompress the page only as far as the wanted rows need."""
    h, hlen = _header(raw, at)
    t, usize, csize = h[1], h[2], h[3]
    comp = np.frombuffer(raw, dtype=np.uint8, count=csize, offset=hlen)
    if t == _DATA_PAGE:
        d = h.get(5)
        if not isinstance(d, dict) or not isinstance(d.get(1), int) or not isinstance(d.get(2), int):
            raise IndexFormatError("Parquet data page without its header", at)
        nvals, enc = d[1], d[2]
        body = _Body(codec, comp, usize, cap, at, "data page", kern)
        vs = 0
        if p.optional:
            if d.get(3, _RLE) != _RLE:
                raise Unsupported(f"definition level encoding {d.get(3)}")
            head = body.upto(4)
            if len(head) < 4:
                raise IndexFormatError("Parquet data page too short for its definition levels", at)
            n = int.from_bytes(bytes(head[:4]), "little")
            levels = body.upto(4 + n)
            if n > len(levels) - 4:
                raise IndexFormatError(f"Parquet data page: {n} bytes of definition levels past its end", at)
            ls, le, vs = 4, 4 + n, 4 + n
    elif t == _DATA_PAGE_V2:
        d = h.get(8)
        if not isinstance(d, dict) or not all(isinstance(d.get(k), int) for k in (1, 3, 4, 5, 6)):
            raise IndexFormatError("Parquet data page V2 without its header", at)
        nvals, enc, dl, rl = d[1], d[4], d[5], d[6]
        if rl != 0:
            raise Unsupported("repetition levels in a flat column")
        if dl < 0 or dl > csize or usize < dl:
            raise IndexFormatError(f"Parquet data page V2: {dl} bytes of definition levels in {csize}", at)
        if p.optional:
            levels, ls, le = comp, 0, dl
        comp_values = d.get(7, True) is not False
        body = _Body(codec if comp_values else None, comp[dl:], usize - dl, cap, at, "data page V2", kern)
        vs = 0
    else:
        raise IndexFormatError(f"Parquet page of type {t} where a data page should be", at)
    n = len(rows)
    if p.optional:
        valid, vidx = kern.def_levels(levels, ls, le, nvals, rows)
        keep = valid.view(bool)
        nvalid = int(np.count_nonzero(keep))
        want = vidx[keep] if nvalid < n else vidx
    else:
        if n and int(rows[-1]) >= nvals:
            raise IndexFormatError(f"Parquet data page of {nvals} values: row {int(rows[-1])} asked for", at)
        keep, nvalid, want = None, n, rows
    last = int(want[-1]) + 1 if nvalid else 0  # values the wanted rows reach
    if enc in (_PLAIN_DICTIONARY, _RLE_DICTIONARY):
        if nvalid:
            head = body.upto(vs + 1)
            if vs >= len(head):
                raise IndexFormatError("Parquet data page: dictionary indexes without their bit width", at)
            bw = int(head[vs])
            idx = body.attempt(
                vs + 1 + (last * bw + 7) // 8 + last // 4 + 64,
                lambda b: kern.hybrid_gather(b, vs + 1, len(b), bw, nvals, want),
            ).astype(np.int64)
        else:
            idx = np.zeros(0, dtype=np.int64)
        dic = dictionary()
        if p.physical == _BYTE_ARRAY:
            return _binary(p, n, keep, nvalid, dic.buf, dic.starts, dic.lens, idx, kern)
        return _fixed(p, n, keep, nvalid, dic.take(idx))
    if enc == _PLAIN:
        if p.physical == _BYTE_ARRAY:
            avg = (usize - vs) // max(nvals, 1) + 1

            def walk(b):
                return kern.ba_walk(b, vs, len(b), nvals, want)

            starts, lens = body.attempt(vs + last * avg + last // 4 + 256, walk)
            values = body.buf
            return _binary(p, n, keep, nvalid, values, starts, lens, np.arange(nvalid, dtype=np.int64), kern)
        if p.physical == _BOOLEAN:
            values = body.upto(vs + (last + 7) // 8)
            ve = len(values)
            if nvalid and vs + (int(want[-1]) >> 3) >= ve:
                raise IndexFormatError(f"Parquet data page: boolean value {int(want[-1])} past its end", at)
            b = np.frombuffer(values, dtype=np.uint8, count=ve - vs, offset=vs)
            return _fixed(p, n, keep, nvalid, (b[want >> 3] >> (want & 7).astype(np.uint8)) & 1)
        dt = _WIDTH[p.physical]
        values = body.upto(vs + last * dt.itemsize)
        have = (len(values) - vs) // dt.itemsize
        if nvalid and int(want[-1]) >= have:
            raise IndexFormatError(f"Parquet data page: value {int(want[-1])} past its {have} values", at)
        return _fixed(p, n, keep, nvalid, np.frombuffer(values, dtype=dt, count=have, offset=vs)[want])
    if enc == _RLE and p.physical == _BOOLEAN:
        head = body.upto(vs + 4)
        if len(head) - vs < 4:
            raise IndexFormatError("Parquet data page: RLE booleans without their length", at)
        m = int.from_bytes(bytes(head[vs : vs + 4]), "little")
        if not nvalid:
            return _fixed(p, n, keep, nvalid, np.zeros(0, np.uint32))

        def bits(b):
            if m > len(b) - vs - 4 and len(b) == body.usize:
                raise IndexFormatError(f"Parquet data page: {m} bytes of RLE booleans past its end", at)
            return kern.hybrid_gather(b, vs + 4, min(vs + 4 + m, len(b)), 1, nvals, want)

        return _fixed(p, n, keep, nvalid, body.attempt(vs + 4 + last // 4 + 64, bits))
    raise Unsupported(f"encoding {enc}")


def _validity(keep, n, nvalid):
    if keep is None or nvalid == n:
        return None
    return pa.py_buffer(np.packbits(keep, bitorder="little"))


def _spread(keep, n, vals, dtype):
    """Values of the valid rows -> one slot per row (zero for a null)."""
    if keep is None or len(vals) == n:
        return np.ascontiguousarray(vals, dtype=dtype)
    out = np.zeros(n, dtype=dtype)
    out[keep] = vals
    return out


def _fixed(p: Plan, n: int, keep, nvalid: int, vals) -> pa.Array:
    if p.physical == _BOOLEAN:
        data = pa.py_buffer(np.packbits(_spread(keep, n, vals, np.uint8), bitorder="little"))
    else:
        data = pa.py_buffer(_spread(keep, n, vals, p.storage))
    return pa.Array.from_buffers(p.field.type, n, [_validity(keep, n, nvalid), data], null_count=n - nvalid)


def _binary(p: Plan, n: int, keep, nvalid: int, buf, starts, lens, idx, kern) -> pa.Array:
    if keep is not None and nvalid < n:
        full = np.full(n, -1, dtype=np.int64)
        full[keep] = idx
        idx = full
    offsets, data = kern.gather(buf, starts, lens, idx)
    if not p.large:
        if offsets[-1] >= 1 << 31:
            raise Unsupported("more than 2 GB of strings in one page's rows")
        offsets = offsets.astype(np.int32)
    return pa.Array.from_buffers(
        p.field.type, n, [_validity(keep, n, nvalid), pa.py_buffer(offsets), pa.py_buffer(data)], null_count=n - nvalid
    )


# ---------------------------------------------------------------- a column chunk
def read_chunk(
    src,
    pg,
    sel: np.ndarray,
    page_of: np.ndarray,
    local: np.ndarray,
    p: Plan,
    dicts: Dict[tuple, Dictionary],
    key: tuple,
    kern,
) -> tuple:
    """``(array of the rows local, bytes read)`` of one column chunk whose selected pages are
    ``pg``'s pages ``sel``; ``page_of[i]`` is the page of row ``local[i]``."""
    meta = pg.meta
    if meta.get(1) != p.physical:
        raise Unsupported(f"physical type {meta.get(1)} for an Arrow {p.field.type}")
    codec = _codec(meta.get(4))
    cap = meta.get(6)
    cap = min(cap, _MAX_PAGE) if isinstance(cap, int) and cap > 0 else _MAX_PAGE
    nbytes = 0

    def dictionary():
        nonlocal nbytes
        d = dicts.get(key)
        if d is None:
            if pg.dict_range is None:
                raise IndexFormatError(
                    "Parquet dictionary-encoded page in a column chunk without a dictionary page", int(pg.offset[0])
                )
            start, length = pg.dict_range
            d = dicts[key] = read_dictionary(
                src.read_at(start, length, "Parquet dictionary page"), start, p.physical, codec, cap, kern
            )
            nbytes += length
        return d

    cuts = np.searchsorted(page_of, sel, side="left").tolist() + [len(local)]
    arrays = []
    for i, k in enumerate(sel.tolist()):
        off, size = int(pg.offset[k]), int(pg.size[k])
        rows = local[cuts[i] : cuts[i + 1]] - pg.first_row[k]
        arrays.append(
            decode_page(src.read_at(off, size, "Parquet data page"), off, rows, p, codec, cap, dictionary, kern)
        )
        nbytes += size
    arr = arrays[0] if len(arrays) == 1 else pa.concat_arrays(arrays)
    return arr, nbytes
