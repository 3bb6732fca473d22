"""Pure-Python twin of ``paimon_fast/_kernels/pqread.pyx``: the native Parquet reader of
``csrc/pq_read.h`` and the Snappy / LZ4_RAW decoders of ``csrc/pq_codec.h``, with the same names,
inputs, outputs and per-chunk statuses, one Python step per value.  The oracle of the reader's
tests and the baseline of its benchmark.

It follows the C function by function (the names in comments are the C's), down to how far a
page body is decompressed: Snappy and LZ4_RAW bodies are decoded element by element only as far
as each ``need`` asks (so a body corrupt past its wanted prefix is OK here exactly when it is OK
there).  ZSTD, GZIP and BROTLI bodies are decompressed whole by pyarrow's codec on their first
use and must hold exactly the page's stated size, as in the C; but the C streams ZSTD and stops
at the wanted prefix (a ZSTD body corrupt or too long only past it is CORRUPT here and may be OK
there).  ``threads`` is ignored: pages are decoded in the order of a one-thread run, so ``err_at`` and the error texts
are a one-thread run's too.

Where the C departs from what it means to do (the bugs tests/io/parquet/test_native_reader.py marks xfail)
the twin does what it means: a page's wanted rows are "every row of the page" only when they are
(not merely as many: repeated positions), an OffsetIndex's offsets and sizes are compared
without int64 overflow, and a header's claimed sizes allocate nothing (no NOMEM here).
"""

from __future__ import annotations

import os

import numpy as np

# the columns of the chunk table (csrc/pq_read.h, CK_*)
FIELDS = (
    "file",
    "col",
    "physical",
    "type_len",
    "codec",
    "max_def",
    "conv",
    "start",
    "len",
    "oi_off",
    "oi_len",
    "rg_rows",
    "num_values",
    "rows_off",
    "nsel",
    "all",
    "out_at",
)
(
    _CK_FILE,
    _CK_COL,
    _CK_PHYSICAL,
    _CK_TYPE_LEN,
    _CK_CODEC,
    _CK_MAX_DEF,
    _CK_CONV,
    _CK_START,
    _CK_LEN,
    _CK_OI_OFF,
    _CK_OI_LEN,
    _CK_RG_ROWS,
    _CK_NUM_VALUES,
    _CK_ROWS_OFF,
    _CK_NSEL,
    _CK_ALL,
    _CK_OUT_AT,
) = range(17)
# which rows of its row group a chunk wants (``all``; csrc/pq_read.h): the positions in ``rows``,
# every row, or ``nsel`` rows from the group's row ``rows_off`` on
CK_POSITIONS, CK_EVERY, CK_RANGE = 0, 1, 2
# statuses (csrc/pq_codec.h)
OK, CORRUPT, UNSUPPORTED, NOMEM, IO = 0, 1, 2, 3, 4
# output kinds and conversions (csrc/pq_read.h)
OUT_FIXED, OUT_BOOL, OUT_BYTES, OUT_LBYTES = 0, 1, 2, 3
(
    CV_COPY,
    CV_I32_1,
    CV_I32_2,
    CV_INT96_NS,
    CV_DEC_I32,
    CV_DEC_I64,
    CV_DEC_BE,
    CV_I32_I64,
    CV_U32_I64,
    CV_F32_F64,
    CV_NULL,
) = range(11)

# parquet.thrift CompressionCodec, Type, Encoding, PageType
_UNCOMPRESSED, _SNAPPY, _GZIP, _LZO, _BROTLI, _LZ4, _ZSTD, _LZ4_RAW = range(8)
_PT_BOOLEAN, _PT_INT32, _PT_INT64, _PT_INT96, _PT_FLOAT, _PT_DOUBLE, _PT_BYTE_ARRAY, _PT_FLBA = range(8)
_EN_PLAIN, _EN_PLAIN_DICT, _EN_RLE, _EN_RLE_DICT = 0, 2, 3, 8
_EN_DELTA_BINARY, _EN_DELTA_LENGTH = 5, 6
_PG_DATA, _PG_INDEX, _PG_DICT, _PG_DATA_V2 = 0, 1, 2, 3

_MAX_PAGE = 1 << 31
_MAX_INDEX = 64 << 20
_MAX_HEADER = 16 << 20
_M64 = (1 << 64) - 1
_PYARROW_CODECS = {_GZIP: "gzip", _BROTLI: "brotli", _ZSTD: "zstd"}


def _i32(v: int) -> int:
    """``v`` as C's (int) cast makes it."""
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >> 31 else v


def _i64(v: int) -> int:
    v &= _M64
    return v - (1 << 64) if v >> 63 else v


def _le32(buf, at: int) -> int:
    return int.from_bytes(bytes(buf[at : at + 4]), "little")


# ---------------------------------------------------------------- codecs (csrc/pq_codec.h)
def _pyarrow_codec(codec: int):
    import pyarrow as pa

    name = _PYARROW_CODECS.get(codec)
    if name is None or not pa.Codec.is_available(name):
        return None
    return pa.Codec(name)


def _decompress_whole(codec: int, src, usize: int):
    """The bytes of a ZSTD, GZIP or BROTLI body as the C takes them, or None for bytes that are
    not a stream.  ZSTD and GZIP: pyarrow's codec read as a stream, to its end (the C's zlib
    inflates one member after another; ``Codec.decompress`` would fill whatever size it is told).
    BROTLI: the C's one-shot BrotliDecoderDecompress takes one stream and ignores bytes after
    it; pyarrow's does the same, so a stream of exactly ``usize`` bytes is one that fits in
    ``usize`` bytes and not in one less."""
    import pyarrow as pa

    src = bytes(src)
    name = _PYARROW_CODECS[codec]
    try:
        if codec == _BROTLI:
            got = pa.Codec(name).decompress(src, decompressed_size=usize, asbytes=True)
            if usize == 0:
                return got
            try:
                pa.Codec(name).decompress(src, decompressed_size=usize - 1, asbytes=True)
            except (pa.ArrowException, OSError, ValueError):
                return got  # exactly usize bytes
            return None
        with pa.CompressedInputStream(pa.BufferReader(src), name) as stream:
            return stream.read()
    except (pa.ArrowException, OSError, ValueError):  # bytes that are not a stream of this codec
        return None


def codec_available(codec: int) -> bool:
    """Whether this twin decompresses pages of ``codec`` (parquet.thrift's number): Snappy,
    LZ4_RAW and UNCOMPRESSED always; ZSTD, GZIP and BROTLI when pyarrow has them."""
    if codec in (_UNCOMPRESSED, _SNAPPY, _LZ4_RAW):
        return True
    return _pyarrow_codec(codec) is not None


def release_memory():
    """Nothing to free: the twin keeps no buffers between reads."""


def set_buffer_cache(max_bytes: int, decay_seconds: float) -> None:
    """Nothing to bound: the twin keeps no buffers between reads (the arguments are checked as
    the kernel checks them)."""
    if max_bytes < 0:
        raise OverflowError("max_bytes must be >= 0")
    if not decay_seconds >= 0:
        raise ValueError("decay_seconds must be >= 0")


def buffer_cache():
    """``(0, 0)``: the twin keeps nothing."""
    return 0, 0


def _snappy_to(src, ipos: int, out: bytearray, usize: int, target: int):
    """pq_snappy_to: decode elements onto ``out`` until at least ``target`` bytes are out (or
    all ``usize``).  Returns ``(rc, input position)``."""
    ie = len(src)
    ot = min(target, usize)
    while len(out) < ot:
        if ipos >= ie:
            return CORRUPT, ipos
        tag = src[ipos]
        ipos += 1
        if tag & 3 == 0:  # literal
            n = (tag >> 2) + 1
            if n > 60:
                nb = n - 60
                if ie - ipos < nb:
                    return CORRUPT, ipos
                n = int.from_bytes(bytes(src[ipos : ipos + nb]), "little") + 1
                ipos += nb
            if n > ie - ipos or n > usize - len(out):
                return CORRUPT, ipos
            out += src[ipos : ipos + n]
            ipos += n
            continue
        if tag & 3 == 1:
            if ipos >= ie:
                return CORRUPT, ipos
            n = ((tag >> 2) & 7) + 4
            off = ((tag >> 5) << 8) | src[ipos]
            ipos += 1
        elif tag & 3 == 2:
            if ie - ipos < 2:
                return CORRUPT, ipos
            n = (tag >> 2) + 1
            off = int.from_bytes(bytes(src[ipos : ipos + 2]), "little")
            ipos += 2
        else:
            if ie - ipos < 4:
                return CORRUPT, ipos
            n = (tag >> 2) + 1
            off = _le32(src, ipos)
            ipos += 4
        if off == 0 or off > len(out) or n > usize - len(out):
            return CORRUPT, ipos
        _copy_back(out, off, n)
    if len(out) == usize and ipos != ie:  # bytes after the whole output
        return CORRUPT, ipos
    return OK, ipos


def _copy_back(out: bytearray, off: int, n: int):
    """Append ``n`` bytes copied from ``off`` bytes back (overlapping: the pattern repeats)."""
    start = len(out) - off
    if off >= n:
        out += out[start : start + n]
    else:
        pattern = bytes(out[start:])
        out += (pattern * (n // off + 1))[:n]


def _snappy_head(src):
    """pq_snappy_head: ``(rc, stated length, first element)``."""
    v = 0
    for i in range(min(5, len(src))):
        v |= (src[i] & 0x7F) << (7 * i)
        if not src[i] & 0x80:
            return (OK if v <= 0xFFFFFFFF else CORRUPT), v, i + 1
    return CORRUPT, 0, 0


def _lz4_to(src, ipos: int, out: bytearray, usize: int, target: int):
    """pq_lz4_to: decode sequences onto ``out`` until at least ``target`` bytes are out, all
    ``usize``, or the input ends after literals.  Returns ``(rc, input position)``."""
    ie = len(src)
    ot = min(target, usize)
    while len(out) < ot:
        if ipos >= ie:
            return CORRUPT, ipos
        token = src[ipos]
        ipos += 1
        lit = token >> 4
        if lit == 15:
            while True:
                if ipos >= ie:
                    return CORRUPT, ipos
                b = src[ipos]
                ipos += 1
                lit += b
                if not (b == 255 and lit < 1 << 40):
                    break
        if lit > ie - ipos or lit > usize - len(out):
            return CORRUPT, ipos
        out += src[ipos : ipos + lit]
        ipos += lit
        if ipos == ie:  # the last sequence: literals only
            break
        if ie - ipos < 2:
            return CORRUPT, ipos
        off = int.from_bytes(bytes(src[ipos : ipos + 2]), "little")
        ipos += 2
        n = (token & 15) + 4
        if token & 15 == 15:
            while True:
                if ipos >= ie:
                    return CORRUPT, ipos
                b = src[ipos]
                ipos += 1
                n += b
                if not (b == 255 and n < 1 << 40):
                    break
        if off == 0 or off > len(out) or n > usize - len(out):
            return CORRUPT, ipos
        _copy_back(out, off, n)
    return OK, ipos


class _Body:
    """pq_body: a page body, decompressed on demand (``out[:done]`` is ready)."""

    __slots__ = ("codec", "src", "usize", "out", "done", "ipos")

    def __init__(self, codec: int, src, usize: int):
        self.codec = codec
        self.src = src
        self.usize = usize
        self.out = bytearray()
        self.done = 0
        self.ipos = 0

    def init(self) -> int:
        """pq_body_init."""
        if self.codec == _UNCOMPRESSED:
            if len(self.src) != self.usize:
                return CORRUPT
            self.out = self.src
            self.done = self.usize
            return OK
        if self.codec == _SNAPPY:
            rc, n, start = _snappy_head(self.src)
            if rc != OK or n != self.usize:
                return CORRUPT
            self.ipos = start
        elif self.codec in _PYARROW_CODECS:
            if self.codec == _ZSTD and _pyarrow_codec(_ZSTD) is None:
                return UNSUPPORTED
        elif self.codec != _LZ4_RAW:
            return UNSUPPORTED
        return OK

    def need(self, n: int) -> int:
        """pq_body_need: make at least the first ``n`` bytes ready."""
        if n <= self.done:
            return OK
        if n > self.usize:
            return CORRUPT  # past the page's stated size
        rc = OK
        if self.codec == _SNAPPY:
            want = n + (n >> 2) + 4096  # a little past what is asked, as the C does
            rc, self.ipos = _snappy_to(self.src, self.ipos, self.out, self.usize, want)
            self.done = len(self.out) if rc == OK else self.done
        elif self.codec == _LZ4_RAW:
            want = n + (n >> 2) + 4096
            rc, self.ipos = _lz4_to(self.src, self.ipos, self.out, self.usize, want)
            if rc == OK:
                self.done = len(self.out)
            if rc == OK and self.done < n:
                rc = CORRUPT
            if rc == OK and self.ipos == len(self.src) and self.done != self.usize:
                rc = CORRUPT
        elif self.codec in _PYARROW_CODECS:
            got = _decompress_whole(self.codec, self.src, self.usize)
            if got is None or len(got) != self.usize:  # the C wants a stream of exactly usize bytes
                return CORRUPT
            self.out = bytearray(got)
            self.done = self.usize
        else:
            return UNSUPPORTED
        if rc == OK and self.done < n:
            rc = CORRUPT
        return rc


_CODEC_NAMES = ("UNCOMPRESSED", "SNAPPY", "", "", "", "", "", "LZ4_RAW")


def decompress(codec: int, src, usize: int, upto: int = -1) -> bytes:
    """The first ``upto`` bytes (default all ``usize``) of a page body compressed with ``codec``
    (Snappy, LZ4_RAW or UNCOMPRESSED), at least: as many as the compiled decoder makes ready;
    raises ValueError for bytes that are not a valid stream of ``usize`` bytes."""
    if codec not in (0, 1, 7):
        raise ValueError(f"codec {codec}: only UNCOMPRESSED, SNAPPY and LZ4_RAW are decoded here")
    if usize < 0 or usize > (1 << 31):
        raise ValueError(f"uncompressed size {usize}")
    if upto < 0 or upto > usize:
        upto = usize
    src = bytes(memoryview(src).cast("B"))
    b = _Body(codec, src, usize)
    rc = b.init()
    if rc == OK:
        rc = b.need(upto)
    if rc != OK:
        raise ValueError(f"not a valid {_CODEC_NAMES[codec]} stream of {usize} bytes")
    if codec == _UNCOMPRESSED:
        return src[:usize]
    return bytes(b.out[: max(b.done, upto) if b.done < usize else usize])


# ---------------------------------------------------------------- Thrift compact (the C's tc_*)
class _TC:
    """pq_tc: a Thrift compact reader over ``buf[p:end]`` with the C's sticky ``bad`` and
    ``trunc`` flags (truncation: more bytes may help)."""

    __slots__ = ("buf", "p", "end", "bad", "trunc")

    def __init__(self, buf, p: int, end: int):
        self.buf, self.p, self.end = buf, p, end
        self.bad = self.trunc = False

    def varint(self) -> int:
        v = s = 0
        while self.p < self.end:
            c = self.buf[self.p]
            self.p += 1
            v |= (c & 0x7F) << s
            if not c & 0x80:
                return v & _M64
            s += 7
            if s > 63:
                self.bad = True
                return 0
        self.bad = self.trunc = True
        return 0

    def zz(self) -> int:
        v = self.varint()
        return (v >> 1) ^ -(v & 1)

    def byte(self):
        if self.p >= self.end:
            self.bad = self.trunc = True
            return None
        self.p += 1
        return self.buf[self.p - 1]

    def skip_struct(self, depth: int):
        if depth > 32:
            self.bad = True
            return
        while not self.bad:
            h = self.byte()
            if h is None:
                return
            t = h & 15
            if t == 0:
                return
            if not h >> 4:
                self.zz()
            self.skip(t, depth + 1)

    def skip(self, t: int, depth: int):
        if depth > 32:
            self.bad = True
            return
        if t in (1, 2):  # booleans in a field header
            return
        if t == 3:
            self.byte()
        elif t in (4, 5, 6):
            self.varint()
        elif t == 7:
            if self.end - self.p < 8:
                self.bad = self.trunc = True
            else:
                self.p += 8
        elif t == 8:
            n = self.varint()
            if self.bad:
                return
            if n > self.end - self.p:
                self.bad = self.trunc = True
            else:
                self.p += n
        elif t in (9, 10):
            h = self.byte()
            if h is None:
                return
            et, n = h & 15, h >> 4
            if n == 15:
                n = self.varint()
            if n > self.end - self.p + 1:  # every element takes a byte at least (but bools of 1)
                self.bad = self.trunc = True
                return
            i = 0
            while i < n and not self.bad:
                if et in (1, 2):  # booleans in a list: one byte each
                    self.byte()
                else:
                    self.skip(et, depth + 1)
                i += 1
        elif t == 11:
            n = self.varint()
            if self.bad or n == 0:
                return
            kv = self.byte()
            if kv is None:
                return
            if n > self.end - self.p:
                self.bad = self.trunc = True
                return
            i = 0
            while i < n and not self.bad:
                self.skip(kv >> 4, depth + 1)
                self.skip(kv & 15, depth + 1)
                i += 1
        elif t == 12:
            self.skip_struct(depth + 1)
        else:
            self.bad = True

    def field(self, fid: int):
        """tc_field: ``(type, field id)``; type 0 at the struct's end (or truncation)."""
        h = self.byte()
        if h is None:
            return 0, fid
        t = h & 15
        if t == 0:
            return 0, fid
        if h >> 4:
            fid = _i32(fid + (h >> 4))
        else:
            fid = _i32(self.zz())
        return t, fid

    def int(self, t: int) -> int:
        if t in (4, 5, 6):
            return self.zz()
        if t == 3:
            b = self.byte()
            if b is None:
                return 0
            return b - 256 if b > 127 else b
        self.bad = True
        return 0


class _PH:
    """pq_ph: what the reader takes of a PageHeader."""

    __slots__ = (
        "type",
        "usize",
        "csize",
        "hlen",
        "nvalues",
        "nnulls",
        "nrows",
        "encoding",
        "def_enc",
        "def_len",
        "rep_len",
        "is_compressed",
    )

    def __init__(self):
        self.type = -1
        self.usize = self.csize = -1
        self.hlen = 0
        self.nvalues = self.nrows = -1
        self.nnulls = 0
        self.encoding = -1
        self.def_enc = 0
        self.def_len = self.rep_len = 0
        self.is_compressed = True


def _page_header(buf, p: int, end: int):
    """pq_page_header: ``(rc, header)`` of the PageHeader at ``buf[p:end]``: OK, CORRUPT, or IO
    when more bytes may help."""
    t = _TC(buf, p, end)
    h = _PH()
    fid = 0
    while True:
        typ, fid = t.field(fid)
        if typ == 0 or t.bad:
            break
        if fid == 1 and typ == 5:
            h.type = _i32(t.zz())
        elif fid == 2 and typ == 5:
            h.usize = t.zz()
        elif fid == 3 and typ == 5:
            h.csize = t.zz()
        elif fid in (5, 7, 8) and typ == 12:
            sf = 0
            while True:
                st, sf = t.field(sf)
                if st == 0 or t.bad:
                    break
                if fid == 5:  # DataPageHeader
                    if sf == 1:
                        h.nvalues = t.int(st)
                    elif sf == 2:
                        h.encoding = _i32(t.int(st))
                    elif sf == 3:
                        h.def_enc = _i32(t.int(st))
                    else:
                        t.skip(st, 1)
                elif fid == 7:  # DictionaryPageHeader
                    if sf == 1:
                        h.nvalues = t.int(st)
                    elif sf == 2:
                        h.encoding = _i32(t.int(st))
                    else:
                        t.skip(st, 1)
                else:  # DataPageHeaderV2
                    if sf == 1:
                        h.nvalues = t.int(st)
                    elif sf == 2:
                        h.nnulls = t.int(st)
                    elif sf == 3:
                        h.nrows = t.int(st)
                    elif sf == 4:
                        h.encoding = _i32(t.int(st))
                    elif sf == 5:
                        h.def_len = t.int(st)
                    elif sf == 6:
                        h.rep_len = t.int(st)
                    elif sf == 7 and st in (1, 2):
                        h.is_compressed = st == 1
                    else:
                        t.skip(st, 1)
        else:
            t.skip(typ, 0)
    if t.bad:
        return (IO if t.trunc else CORRUPT), h
    h.hlen = t.p - p
    if h.type < 0 or h.usize < 0 or h.csize < 0 or h.usize >= _MAX_PAGE or h.csize >= _MAX_PAGE:
        return CORRUPT, h
    if h.type in (_PG_DATA, _PG_DICT):
        if h.nvalues < 0 or h.encoding < 0:
            return CORRUPT, h
    elif h.type == _PG_DATA_V2:
        if (
            h.nvalues < 0
            or h.nrows < 0
            or h.encoding < 0
            or h.def_len < 0
            or h.rep_len < 0
            or h.def_len + h.rep_len > h.csize
            or h.def_len + h.rep_len > h.usize
        ):
            return CORRUPT, h
    return OK, h


# ---------------------------------------------------------------- bytes of a file
class _File:
    """pq_file: ``fd`` >= 0 read with os.pread, else ``segments`` of the file in memory."""

    __slots__ = ("fd", "size", "segments")

    def __init__(self, fd, size, segments):
        self.fd = fd if segments is None else -1
        self.size = size
        self.segments = [] if segments is None else [(int(o), memoryview(b).cast("B")) for o, b in segments]

    def fetch(self, off: int, n: int):
        """pq_fetch: ``(bytes-like, OK)`` or ``(None, status)``."""
        if off < 0 or n < 0 or off > self.size or n > self.size - off:
            return None, CORRUPT
        if self.fd < 0:
            for so, mv in self.segments:
                if off >= so and off + n <= so + len(mv):
                    return mv[off - so : off - so + n], OK
            return None, UNSUPPORTED  # not fetched: the caller reads it another way
        out = bytearray()
        while len(out) < n:
            try:
                got = os.pread(self.fd, n - len(out), off + len(out))
            except OSError:
                return None, IO
            if not got:  # the file is shorter than it was
                return None, IO
            out += got
        return bytes(out), OK


def _read_header(f: _File, off: int, end: int):
    """pq_read_header: the page header at ``off``, its bytes read as needed."""
    probe = 256
    while True:
        n = min(probe, end - off)
        if n <= 0:
            return CORRUPT, None
        p, rc = f.fetch(off, n)
        if p is None:
            return rc, None
        rc, h = _page_header(p, 0, n)
        if rc != IO:
            return rc, h
        if n >= end - off or probe >= _MAX_HEADER:
            return CORRUPT, h
        probe *= 16


# ---------------------------------------------------------------- RLE / bit-packed hybrid
def _bits(out, data: int, k: int, bw: int) -> int:
    """pq_bits: value ``k`` of ``bw`` bits packed from ``out[data]``."""
    if bw == 0:
        return 0
    bit = k * bw
    at = data + (bit >> 3)
    need = ((bit & 7) + bw + 7) >> 3
    v = int.from_bytes(bytes(out[at : at + need]), "little")
    return (v >> (bit & 7)) & ((1 << bw) - 1)


class _Hyb:
    """pq_hyb: RLE / bit-packed runs at ``body.out[pos:end]`` of bit width ``bw``."""

    __slots__ = ("b", "pos", "end", "bw")

    def __init__(self, b: _Body, pos: int, end: int, bw: int):
        self.b, self.pos, self.end, self.bw = b, pos, end, bw

    def run(self):
        """hyb_run: ``(rc, count, packed, value, data)`` of the next run."""
        if self.b.need(min(self.pos + 10, self.end)) != OK:
            return CORRUPT, 0, False, 0, 0
        o = self.b.out
        v = s = 0
        while True:
            if self.pos >= self.end or s > 63:
                return CORRUPT, 0, False, 0, 0
            c = o[self.pos]
            self.pos += 1
            v |= (c & 0x7F) << s
            if not c & 0x80:
                break
            s += 7
        v &= _M64
        if v & 1:
            groups = v >> 1
            if groups > self.end - self.pos or groups * self.bw > self.end - self.pos:
                return CORRUPT, 0, False, 0, 0
            data = self.pos
            self.pos += groups * self.bw
            return OK, groups * 8, True, 0, data
        vb = (self.bw + 7) >> 3
        if vb > self.end - self.pos or (v >> 1) > (1 << 40):
            return CORRUPT, 0, False, 0, 0
        if self.b.need(self.pos + vb) != OK:
            return CORRUPT, 0, False, 0, 0
        value = int.from_bytes(bytes(self.b.out[self.pos : self.pos + vb]), "little")
        if self.bw < 64 and value >> self.bw:  # a value wider than the bit width
            return CORRUPT, 0, False, 0, 0
        self.pos += vb
        return OK, v >> 1, False, value, 0

    def gather(self, count: int, idx) -> "list | None":
        """hyb_gather: the values at the sorted indexes ``idx`` of the runs holding ``count``
        values, or None (corrupt)."""
        out = [0] * len(idx)
        base = i = 0
        n = len(idx)
        while i < n:
            if idx[i] >= count or idx[i] < base:
                return None
            rc, c, packed, value, data = self.run()
            if rc != OK:
                return None
            stop = base + c
            j = i
            while j < n and idx[j] < stop:
                j += 1
            if j > i:
                if packed:
                    last = data + ((((idx[j - 1] - base) + 1) * self.bw + 7) >> 3)
                    if self.b.need(last) != OK:
                        return None
                    for q in range(i, j):
                        out[q] = _bits(self.b.out, data, idx[q] - base, self.bw)
                else:
                    for q in range(i, j):
                        out[q] = value & 0xFFFFFFFF
                i = j
            base = stop
        return out

    def all(self, count: int) -> "list | None":
        """hyb_all: every value of the runs holding ``count`` values, or None (corrupt)."""
        out = []
        base = 0
        while base < count:
            rc, c, packed, value, data = self.run()
            if rc != OK:
                return None
            m = min(c, count - base)
            if packed:
                if self.b.need(data + ((m * self.bw + 7) >> 3)) != OK:
                    return None
                out.extend(_bits(self.b.out, data, k, self.bw) for k in range(m))
            else:
                out.extend([value & 0xFFFFFFFF] * m)
            base += m
        return out


def _levels(h: _Hyb, nrows: int, lr):
    """pq_levels: for the page-local rows ``lr`` (sorted), each one's value number or -1 for a
    null, and the values up to the last wanted one; None when corrupt."""
    n = len(lr)
    vidx = [0] * n
    base = ones = i = 0
    while i < n:
        want = lr[i]
        if want >= nrows or want < base:
            return None
        rc, c, packed, value, data = h.run()
        if rc != OK or value > 1:
            return None
        stop = min(base + c, nrows)
        if packed:
            upto = stop - base  # bits of this run that are rows
            if h.b.need(data + ((upto + 7) >> 3)) != OK:
                return None
            bits = [_bits(h.b.out, data, k, 1) for k in range(upto)]
            before = [0] * (upto + 1)
            for k, bit in enumerate(bits):
                before[k + 1] = before[k] + bit
            while i < n and lr[i] < stop:
                k = lr[i] - base
                vidx[i] = ones + before[k] if bits[k] else -1
                i += 1
            ones += before[upto]
        else:
            while i < n and lr[i] < stop:
                vidx[i] = ones + (lr[i] - base) if value else -1
                i += 1
            if value:
                ones += stop - base
        base = stop
    nvals = 0
    for v in reversed(vidx):
        if v >= 0:
            nvals = v + 1
            break
    return vidx, nvals


# ---------------------------------------------------------------- values
def _body_varint(b: _Body, pos: int):
    """pq_body_varint: ``(value, next position)`` of the unsigned varint at ``pos`` (_Corrupt)."""
    r = 0
    for sh in range(0, 70, 7):
        if b.need(pos + 1) != OK:
            raise _Corrupt
        x = b.out[pos]
        pos += 1
        if sh == 63 and x & 0x7E:
            raise _Corrupt
        r |= (x & 0x7F) << sh
        if not x & 0x80:
            return r, pos
    raise _Corrupt


def _unzigzag(u: int) -> int:
    return (u >> 1) ^ -(u & 1)


def _wrap(v: int, w32: bool) -> int:
    """``v`` as the signed 32- or 64-bit integer its low bits are."""
    bits = 32 if w32 else 64
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def _dbp(b: _Body, pos: int, want: int, w32: bool, walk_to_end: bool):
    """pq_dbp: ``(the first want values, the values stated, where the run ends or None)`` of the
    DELTA_BINARY_PACKED run at ``pos`` (_Corrupt)."""
    bs, pos = _body_varint(b, pos)
    nmb, pos = _body_varint(b, pos)
    cnt, pos = _body_varint(b, pos)
    first, pos = _body_varint(b, pos)
    if bs == 0 or bs % 128 or bs > 1 << 20 or nmb == 0 or bs % nmb or (bs // nmb) % 32:
        raise _Corrupt
    if cnt > 0x7FFFFFFF or want > cnt:  # (a page's values: an i32)
        raise _Corrupt
    per, maxbw = bs // nmb, 32 if w32 else 64
    v = _wrap(_unzigzag(first), w32)
    out = []
    left = cnt
    if left:
        if want:
            out.append(v)
        left -= 1
    while left > 0:
        if len(out) >= want and not walk_to_end:
            break
        md, pos = _body_varint(b, pos)
        mind = _unzigzag(md)
        if b.need(pos + nmb) != OK:
            raise _Corrupt
        widths = bytes(b.out[pos : pos + nmb])
        pos += nmb
        for bw in widths:
            if left <= 0:
                break
            if bw > maxbw:
                raise _Corrupt
            nbytes = per * bw // 8
            m = min(left, per)
            if len(out) < want:
                if b.need(pos + nbytes) != OK:
                    raise _Corrupt
                packed = int.from_bytes(bytes(b.out[pos : pos + nbytes]), "little")
                mask = (1 << bw) - 1
                for j in range(m):
                    if len(out) >= want:
                        break
                    v = _wrap(v + mind + ((packed >> (j * bw)) & mask), w32)
                    out.append(v)
            pos += nbytes
            left -= m
    if len(out) < want:
        raise _Corrupt
    if walk_to_end and pos > b.usize:
        raise _Corrupt
    return out, cnt, pos if walk_to_end else None


def _phys_width(physical: int, type_len: int) -> int:
    if physical in (_PT_INT32, _PT_FLOAT):
        return 4
    if physical in (_PT_INT64, _PT_DOUBLE):
        return 8
    if physical == _PT_INT96:
        return 12
    if physical == _PT_FLBA:
        return type_len
    return 0


def _emit(conv: int, src: bytes, pw: int, ow: int) -> bytes:
    """pq_emit: one physical value -> its ``ow`` output bytes."""
    if conv == CV_COPY:
        return bytes(src[:ow])
    if conv == CV_I32_1:
        return bytes(src[:1])
    if conv == CV_I32_2:
        return bytes(src[:2])
    if conv == CV_INT96_NS:
        nanos = int.from_bytes(src[0:8], "little")
        day = int.from_bytes(src[8:12], "little")
        return _i64((day - 2440588) * 86400000000000 + nanos).to_bytes(8, "little", signed=True)
    if conv == CV_DEC_I32:
        return int.from_bytes(src[0:4], "little", signed=True).to_bytes(16, "little", signed=True)
    if conv == CV_DEC_I64:
        return int.from_bytes(src[0:8], "little", signed=True).to_bytes(16, "little", signed=True)
    if conv == CV_DEC_BE:
        fill = 0xFF if pw > 0 and src[0] & 0x80 else 0
        return bytes(src[pw - 1 - k] if k < pw else fill for k in range(ow))
    if conv == CV_I32_I64:
        return int.from_bytes(src[0:4], "little", signed=True).to_bytes(8, "little", signed=True)
    if conv == CV_U32_I64:
        return int.from_bytes(src[0:4], "little").to_bytes(8, "little", signed=True)
    if conv == CV_F32_F64:
        return np.frombuffer(bytes(src[0:4]), dtype="<f4").astype("<f8").tobytes()
    return bytes(ow)


# ---------------------------------------------------------------- the job
class _Col:
    """pq_col: an output column and the numpy buffers it writes."""

    __slots__ = ("kind", "width", "n", "values", "valid", "offsets", "data", "overflow")

    def __init__(self, kind, width, n, values, valid, offsets):
        self.kind, self.width, self.n = kind, width, n
        self.values, self.valid, self.offsets = values, valid, offsets
        self.data = None
        self.overflow = False

    def set_len(self, slot: int, n: int):
        """pq_set_len: a byte array's length, where phase C makes it an offset."""
        self.offsets[slot + 1] = n if self.kind == OUT_LBYTES else _i32(n)


class _Page:
    """pq_page: a data page of a chunk and its wanted rows ``[k0, k1)``."""

    __slots__ = ("off", "size", "first_row", "nrows", "k0", "k1", "chunk", "zero", "data")

    def __init__(self, off, size, first_row, nrows):
        self.off, self.size, self.first_row, self.nrows = off, size, first_row, nrows
        self.k0 = self.k1 = 0
        self.chunk = -1
        self.zero = False
        self.data = []  # byte arrays: the wanted values' bytes


class _Dict:
    """pq_dict: a chunk's dictionary page, decoded once (state 0 not read, 1 ready, 2 failed)."""

    __slots__ = ("state", "n", "buf", "offs", "fixed")

    def __init__(self):
        self.state = 0
        self.n = 0
        self.buf = b""
        self.offs = []
        self.fixed = []  # fixed-width values in the output width


class _Chunk:
    """pq_chunk: a column chunk's inputs (``f``, one value per :data:`FIELDS`), results and work."""

    __slots__ = (
        "f",
        "status",
        "err_at",
        "err",
        "pages_total",
        "pages_read",
        "bytes_read",
        "nulls",
        "pages",
        "dict_off",
        "dict_size",
        "dict",
    )

    def __init__(self, fields):
        self.f = [int(x) for x in fields]
        self.status = OK
        self.err_at = 0
        self.err = ""
        self.pages_total = self.pages_read = self.bytes_read = 0
        self.nulls = 0  # slots of the output it made null
        self.pages = []
        self.dict_off = -1
        self.dict_size = 0
        self.dict = _Dict()

    def fail(self, status: int, at: int, what: str):
        """pq_fail: the first failure is reported."""
        if self.status != OK:
            return
        self.status = status
        self.err_at = at
        self.err = what


def _lower(a, lo: int, hi: int, v: int) -> int:
    while lo < hi:
        m = lo + ((hi - lo) >> 1)
        if a[m] < v:
            lo = m + 1
        else:
            hi = m
    return lo


def _range_lo(c: _Chunk) -> int:
    """PQ_RANGE_LO: the group's row of a chunk's first wanted row (CK_RANGE; CK_EVERY: 0)."""
    return c.f[_CK_ROWS_OFF] if c.f[_CK_ALL] == CK_RANGE else 0


def _select_pages(rows, c: _Chunk):
    """pq_select_pages: each page's wanted rows; the pages holding none dropped."""
    nsel, k = c.f[_CK_NSEL], 0
    base = c.f[_CK_ROWS_OFF]
    every = c.f[_CK_ALL] != CK_POSITIONS
    mine = None if every else rows[base : base + nsel]
    lo = _range_lo(c)  # (a range: wanted row k is the group's row lo + k)
    kept = []
    for p in c.pages:
        end = p.first_row + p.nrows
        k1 = min(max(end - lo, 0), nsel) if every else _lower(mine, k, nsel, end)
        k0 = min(max(p.first_row - lo, 0), nsel) if every else k
        if k1 > k0:
            p.k0, p.k1 = k0, k1
            kept.append(p)
        k = k1
    c.pages_total = len(c.pages)
    c.pages = kept


def _offset_index(c: _Chunk, p, olen: int):
    """The OffsetIndex's page locations ``[(offset, size, first row)]``, or None where the C
    finds it unusable (then the page headers are walked)."""
    t = _TC(p, 0, olen)
    fid, got = 0, False
    locs = []
    while True:
        typ, fid = t.field(fid)
        if typ == 0 or t.bad:
            break
        if fid == 1 and typ == 9 and not got:
            hb = t.byte()
            if hb is None:
                t.bad = True
                break
            n = hb >> 4
            if n == 15:
                n = t.varint()
            if hb & 15 != 12 or n > t.end - t.p or n == 0:
                t.bad = True
                break
            for _ in range(n):
                if t.bad:
                    break
                sf = 0
                po = ps = pf = -1
                while True:
                    st, sf = t.field(sf)
                    if st == 0 or t.bad:
                        break
                    if sf == 1:
                        po = t.int(st)
                    elif sf == 2:
                        ps = t.int(st)
                    elif sf == 3:
                        pf = t.int(st)
                    else:
                        t.skip(st, 1)
                if t.bad:
                    break
                if po < 0 or ps <= 0 or pf < 0:
                    t.bad = True
                    break
                locs.append((po, ps, pf))
            got = True
        else:
            t.skip(typ, 0)
    if t.bad or not got:
        return None
    return locs


def _conv_fits(conv: int, physical: int, pw: int, ow: int) -> bool:
    """The C's check that a conversion writes what its output column holds."""
    if conv == CV_I32_1:
        return physical == _PT_INT32 and ow == 1
    if conv == CV_I32_2:
        return physical == _PT_INT32 and ow == 2
    if conv == CV_INT96_NS:
        return physical == _PT_INT96 and ow == 8
    if conv == CV_DEC_I32:
        return physical == _PT_INT32 and ow == 16
    if conv == CV_DEC_I64:
        return physical == _PT_INT64 and ow == 16
    if conv == CV_DEC_BE:
        return physical == _PT_FLBA and ow >= pw and ow in (16, 32)
    if conv in (CV_I32_I64, CV_U32_I64):
        return physical == _PT_INT32 and ow == 8
    if conv == CV_F32_F64:
        return physical == _PT_FLOAT and ow == 8
    return conv == CV_COPY


def _usize_plausible(codec: int, src, csize: int, usize: int) -> bool:
    """pq_usize_plausible: can ``csize`` bytes of ``codec`` decompress to ``usize`` (checked before
    the reader allocates a buffer of ``usize`` bytes)?"""
    if codec == _UNCOMPRESSED:
        return usize == csize
    if codec == _SNAPPY:
        rc, stated, _ = _snappy_head(bytes(src[: min(len(src), 5)]))
        return rc == OK and stated == usize and usize // 22 <= csize + 64
    if codec == _LZ4_RAW:
        return usize // 256 <= csize + 64
    if codec == _GZIP:
        return usize // 1100 <= csize + 1024
    return usize // 32768 <= csize + 64


def _chunk_pages(files, cols, rows, c: _Chunk):
    """pq_chunk_pages (phase A): where the chunk's data pages are and which hold wanted rows."""
    f = files[c.f[_CK_FILE]]
    start, n = c.f[_CK_START], c.f[_CK_LEN]
    end, rg_rows = start + n, c.f[_CK_RG_ROWS]
    col = cols[c.f[_CK_COL]]
    physical, conv = c.f[_CK_PHYSICAL], c.f[_CK_CONV]
    c.dict_off = -1
    if conv == CV_NULL:
        if col.valid is None:
            c.fail(UNSUPPORTED, start, "no validity for a column of nulls")
        return
    if c.f[_CK_MAX_DEF] > 1 or (c.f[_CK_MAX_DEF] == 1 and col.valid is None):
        c.fail(UNSUPPORTED, start, "definition levels not handled")
        return
    pw = _phys_width(physical, _i32(c.f[_CK_TYPE_LEN]))
    if (
        (physical == _PT_BYTE_ARRAY) != (col.kind >= OUT_BYTES)
        or (physical == _PT_BOOLEAN) != (col.kind == OUT_BOOL)
        or (col.kind == OUT_FIXED and (pw <= 0 or col.width <= 0 or (conv == CV_COPY and col.width != pw)))
    ):
        c.fail(UNSUPPORTED, start, "output type does not fit the physical type")
        return
    every, nsel, lo = c.f[_CK_ALL], c.f[_CK_NSEL], c.f[_CK_ROWS_OFF]
    fits = {CK_POSITIONS: True, CK_EVERY: nsel == rg_rows, CK_RANGE: 0 <= lo and 0 <= nsel and lo <= rg_rows - nsel}
    if not _conv_fits(conv, physical, pw, col.width) or not fits.get(every, False):
        c.fail(UNSUPPORTED, start, "conversion does not fit the column")
        return
    if not codec_available(c.f[_CK_CODEC]):
        c.fail(UNSUPPORTED, start, "codec not available to the native reader")
        return
    if start < 4 or n <= 0 or end > f.size:
        c.fail(CORRUPT, start, "column chunk outside the file")
        return
    if c.f[_CK_OI_OFF] >= 0:
        ooff, olen = c.f[_CK_OI_OFF], c.f[_CK_OI_LEN]
        if olen <= 0 or olen > _MAX_INDEX:
            c.fail(UNSUPPORTED, ooff, "offset index size")
            return
        p, rc = f.fetch(ooff, olen)
        if p is None:
            c.fail(UNSUPPORTED if rc == CORRUPT else rc, ooff, "offset index not readable")
            return
        locs = _offset_index(c, p, olen)
        pages = [_Page(po, ps, pf, 0) for po, ps, pf in locs or ()]
        ok = bool(pages) and pages[0].first_row == 0 and pages[0].off >= start
        for i, pg in enumerate(pages):
            if not ok:
                break
            nxt = pages[i + 1].first_row if i + 1 < len(pages) else rg_rows
            if (
                nxt <= pg.first_row
                or pg.off + pg.size > end
                or (i + 1 < len(pages) and pages[i + 1].off < pg.off + pg.size)
            ):
                ok = False
            else:
                pg.nrows = nxt - pg.first_row
        if ok:
            if pages[0].off > start:
                c.dict_off, c.dict_size = start, pages[0].off - start
            c.pages = pages
            _select_pages(rows, c)
            return
        # pyarrow ignores a page index it cannot use: walk the pages instead
    pos, row = start, 0
    pages = []
    while pos < end:
        rc, h = _read_header(f, pos, end)
        if rc != OK:
            c.fail(IO if rc == IO else CORRUPT, pos, "page header not readable")
            return
        size = h.hlen + h.csize
        if size > end - pos:
            c.fail(CORRUPT, pos, "page runs past its column chunk")
            return
        if h.type == _PG_DICT:
            if pages or c.dict_off >= 0:
                c.fail(UNSUPPORTED, pos, "dictionary page after data pages")
                return
            c.dict_off, c.dict_size = pos, size
        elif h.type in (_PG_DATA, _PG_DATA_V2):
            r = h.nrows if h.type == _PG_DATA_V2 else h.nvalues
            if r > 0:
                if r > rg_rows - row:
                    c.fail(CORRUPT, pos, "pages hold more rows than the row group")
                    return
                pages.append(_Page(pos, size, row, r))
                row += r
        elif h.type != _PG_INDEX:
            c.fail(CORRUPT, pos, "page of an unknown type")
            return
        pos += size
    if row != rg_rows:
        c.fail(CORRUPT, start, "the pages' rows are not the row group's")
        return
    c.pages = pages
    _select_pages(rows, c)


def _dict_load(files, cols, c: _Chunk) -> int:
    """pq_dict_load: decode the chunk's dictionary page into ``c.dict``."""
    d = c.dict
    f = files[c.f[_CK_FILE]]
    physical, conv = c.f[_CK_PHYSICAL], c.f[_CK_CONV]
    col = cols[c.f[_CK_COL]]
    if c.dict_off < 0:
        return UNSUPPORTED
    pos, end = c.dict_off, c.dict_off + c.dict_size
    while True:  # an index page may come first
        rc, h = _read_header(f, pos, end)
        if rc != OK or (h.type != _PG_DICT and (h.type != _PG_INDEX or h.hlen + h.csize > end - pos)):
            return NOMEM if rc == NOMEM else CORRUPT
        if h.type == _PG_DICT:
            break
        pos += h.hlen + h.csize
    rc = OK
    if h.hlen + h.csize > end - pos:
        rc = CORRUPT
    elif h.encoding not in (_EN_PLAIN, _EN_PLAIN_DICT):
        rc = UNSUPPORTED
    if rc != OK:
        return rc
    p, rc = f.fetch(pos + h.hlen, h.csize)
    if p is None:
        return rc
    c.bytes_read += h.hlen + h.csize  # the dictionary page counts as read
    if not _usize_plausible(c.f[_CK_CODEC], p, h.csize, h.usize):
        return CORRUPT
    b = _Body(c.f[_CK_CODEC], p, h.usize)
    rc = b.init()
    if rc == OK:
        rc = b.need(h.usize)
    if rc != OK:
        return rc
    buf = bytes(b.out[: h.usize])
    n = h.nvalues
    d.n = n
    d.buf = buf
    if physical == _PT_BYTE_ARRAY:
        if n > h.usize // 4:
            return CORRUPT
        at = 0
        offs = []
        for _ in range(n):
            if h.usize - at < 4:
                return CORRUPT
            n_ = _le32(buf, at)
            if n_ > h.usize - at - 4:
                return CORRUPT
            offs.append(at)
            at += 4 + n_
        offs.append(at)
        d.offs = offs
    elif physical == _PT_BOOLEAN:
        return UNSUPPORTED
    else:
        pw = _phys_width(physical, _i32(c.f[_CK_TYPE_LEN]))
        ow = col.width
        if pw <= 0 or n > h.usize // pw:
            return CORRUPT
        d.fixed = [_emit(conv, buf[i * pw : (i + 1) * pw], pw, ow) for i in range(n)]
    return OK


def _dict_get(files, cols, c: _Chunk) -> int:
    """pq_dict_get: the dictionary, loaded by the first page that needs it."""
    d = c.dict
    if d.state == 0:
        rc = _dict_load(files, cols, c)
        d.state = 1 if rc == OK else 2
        if rc != OK:
            return rc
    return OK if d.state == 1 else CORRUPT


class _Corrupt(Exception):
    """The C's ``goto corrupt``: the page is not decodable."""


def _null_unit(cols, c: _Chunk, u: _Page):
    """pq_null_unit: nulls at the unit's slots (a column the file lacks)."""
    col = cols[c.f[_CK_COL]]
    a, n = c.f[_CK_OUT_AT] + u.k0, u.k1 - u.k0
    if col.valid is not None:
        col.valid[a : a + n] = 0
        c.nulls += n
    if col.kind == OUT_FIXED:
        col.values[a * col.width : (a + n) * col.width] = 0
    elif col.kind == OUT_BOOL:
        col.values[a : a + n] = 0
    else:
        col.offsets[a + 1 : a + n + 1] = 0  # lengths 0


def _page_run(files, cols, rows, c: _Chunk, pg: _Page):
    """pq_page_run (phase B): decode a page's wanted rows into their output slots."""
    if c.status != OK:
        return
    if c.f[_CK_CONV] == CV_NULL:
        _null_unit(cols, c, pg)
        return
    try:
        _page_values(files, cols, rows, c, pg)
    except _Corrupt:
        c.fail(CORRUPT, pg.off, "data page not decodable")


def _page_values(files, cols, rows, c: _Chunk, pg: _Page):
    f = files[c.f[_CK_FILE]]
    col = cols[c.f[_CK_COL]]
    physical, conv, max_def = c.f[_CK_PHYSICAL], c.f[_CK_CONV], c.f[_CK_MAX_DEF]
    pw = _phys_width(physical, _i32(c.f[_CK_TYPE_LEN]))
    ow = col.width
    n = pg.k1 - pg.k0  # wanted rows of the page
    slot0 = c.f[_CK_OUT_AT] + pg.k0  # the output slot of the first
    if c.f[_CK_ALL] != CK_POSITIONS:
        lo = _range_lo(c)
        local = list(range(lo + pg.k0 - pg.first_row, lo + pg.k1 - pg.first_row))
    else:
        at = c.f[_CK_ROWS_OFF] + pg.k0
        local = [int(r) - pg.first_row for r in rows[at : at + n]]
    # every row of the page, once each, in order (the C's `dense`)
    identity = local == list(range(pg.nrows)) if n == pg.nrows else False

    raw, rc = f.fetch(pg.off, pg.size)
    if raw is None:
        c.fail(rc, pg.off, "data page not readable")
        return
    rc, h = _page_header(raw, 0, pg.size)
    if (
        rc != OK
        or h.type not in (_PG_DATA, _PG_DATA_V2)
        or h.hlen + h.csize != pg.size
        or (h.nvalues if h.type == _PG_DATA else h.nrows) != pg.nrows
    ):
        c.fail(CORRUPT, pg.off, "data page disagrees with its column chunk's page locations")
        return
    lv = h.rep_len + h.def_len if h.type == _PG_DATA_V2 else 0
    codec = _UNCOMPRESSED if h.type == _PG_DATA_V2 and not h.is_compressed else c.f[_CK_CODEC]
    if not _usize_plausible(codec, raw[h.hlen + lv :], h.csize - lv, h.usize - lv):
        c.fail(CORRUPT, pg.off, "data page claims more bytes than its body can hold")
        return
    # the levels and the values' body
    bodysrc = raw[h.hlen :]
    vat = 0  # where the values start in `body`
    has_levels = max_def > 0
    if h.type == _PG_DATA:
        body = _Body(c.f[_CK_CODEC], bodysrc[: h.csize], h.usize)
        rc = body.init()
        if rc == UNSUPPORTED:
            c.fail(UNSUPPORTED, pg.off, "codec not available to the native reader")
            return
        if rc != OK:
            raise _Corrupt
        if has_levels:
            if h.def_enc != _EN_RLE:
                c.fail(UNSUPPORTED, pg.off, "definition levels not RLE-encoded")
                return
            if body.need(4) != OK:
                raise _Corrupt
            ll = _le32(body.out, 0)
            if ll > h.usize - 4:
                raise _Corrupt
            lh = _Hyb(body, 4, 4 + ll, 1)
            vat = 4 + ll
    else:
        lv = h.rep_len + h.def_len
        if h.rep_len != 0:
            raise _Corrupt  # a flat column has no repetition levels
        lev = _Body(_UNCOMPRESSED, bodysrc[:lv], lv)
        if lev.init() != OK:
            raise _Corrupt
        codec = c.f[_CK_CODEC] if h.is_compressed else _UNCOMPRESSED
        body = _Body(codec, bodysrc[lv : h.csize], h.usize - lv)
        rc = body.init()
        if rc == UNSUPPORTED:
            c.fail(UNSUPPORTED, pg.off, "codec not available to the native reader")
            return
        if rc != OK:
            raise _Corrupt
        if has_levels:
            lh = _Hyb(lev, 0, h.def_len, 1)
        if max_def == 0 and h.def_len != 0:
            raise _Corrupt
    # value numbers of the wanted rows (-1: null)
    if has_levels:
        got = _levels(lh, pg.nrows, local)
        if got is None:
            raise _Corrupt
        vidx, nvals = got
        identity = False
    else:
        vidx = local
        nvals = vidx[-1] + 1 if n else 0
    if nvals > h.nvalues:
        raise _Corrupt
    if col.valid is not None:
        col.valid[slot0 : slot0 + n] = [1 if v >= 0 else 0 for v in vidx] if has_levels else 1
        c.nulls += sum(v < 0 for v in vidx) if has_levels else 0
    c.pages_read += 1
    c.bytes_read += pg.size

    enc = h.encoding
    if enc == _EN_PLAIN and physical not in (_PT_BYTE_ARRAY, _PT_BOOLEAN):
        if body.need(vat + nvals * pw) != OK:
            raise _Corrupt
        v = body.out
        out = bytearray()
        for k in vidx:
            out += _emit(conv, bytes(v[vat + k * pw : vat + (k + 1) * pw]), pw, ow) if k >= 0 else bytes(ow)
        col.values[slot0 * ow : slot0 * ow + len(out)] = np.frombuffer(bytes(out), dtype=np.uint8)
        return
    if enc == _EN_PLAIN and physical == _PT_BOOLEAN:
        if body.need(vat + ((nvals + 7) >> 3)) != OK:
            raise _Corrupt
        v = body.out
        for i, k in enumerate(vidx):
            col.values[slot0 + i] = (v[vat + (k >> 3)] >> (k & 7)) & 1 if k >= 0 else 0
        return
    if enc == _EN_RLE and physical == _PT_BOOLEAN:
        if body.need(vat + 4) != OK:
            raise _Corrupt
        ll = _le32(body.out, vat)
        if ll > body.usize - vat - 4:
            raise _Corrupt
        vh = _Hyb(body, vat + 4, vat + 4 + ll, 1)
        got = vh.gather(h.nvalues, [k for k in vidx if k >= 0])
        if got is None:
            raise _Corrupt
        q = 0
        for i, k in enumerate(vidx):
            if k >= 0:
                col.values[slot0 + i] = got[q] & 0xFF
                q += 1
            else:
                col.values[slot0 + i] = 0
        return
    if enc == _EN_PLAIN and physical == _PT_BYTE_ARRAY:
        at, k = vat, 0
        for i, want in enumerate(vidx):
            if want < 0:
                col.set_len(slot0 + i, 0)
                continue
            while True:
                if body.need(at + 4) != OK:
                    raise _Corrupt
                ln = _le32(body.out, at)
                if ln > body.usize - at - 4:
                    raise _Corrupt
                if k == want:
                    if body.need(at + 4 + ln) != OK:
                        raise _Corrupt
                    pg.data.append(bytes(body.out[at + 4 : at + 4 + ln]))
                    col.set_len(slot0 + i, ln)
                    break  # the same value may be wanted again: k and at stay
                at += 4 + ln
                k += 1
        return
    if enc == _EN_DELTA_BINARY and physical in (_PT_INT32, _PT_INT64):
        vals, total, _ = _dbp(body, vat, nvals, physical == _PT_INT32, False)
        if total > h.nvalues:
            raise _Corrupt
        out = bytearray()
        for k in vidx:
            raw_v = (vals[k] & ((1 << (8 * pw)) - 1)).to_bytes(pw, "little") if k >= 0 else None
            out += _emit(conv, raw_v, pw, ow) if k >= 0 else bytes(ow)
        col.values[slot0 * ow : slot0 * ow + len(out)] = np.frombuffer(bytes(out), dtype=np.uint8)
        return
    if enc == _EN_DELTA_LENGTH and physical == _PT_BYTE_ARRAY:
        lens, total, bat = _dbp(body, vat, nvals, True, True)
        if total > h.nvalues:
            raise _Corrupt
        avail, pos, k = body.usize - bat, 0, 0
        for i, want in enumerate(vidx):
            if want < 0:
                col.set_len(slot0 + i, 0)
                continue
            if want < k:
                raise _Corrupt
            while k < want:
                if lens[k] < 0 or lens[k] > avail - pos:
                    raise _Corrupt
                pos += lens[k]
                k += 1
            ln = lens[k]
            if ln < 0 or ln > avail - pos or body.need(bat + pos + ln) != OK:
                raise _Corrupt
            pg.data.append(bytes(body.out[bat + pos : bat + pos + ln]))
            col.set_len(slot0 + i, ln)
        return
    if enc in (_EN_RLE_DICT, _EN_PLAIN_DICT):
        rc = _dict_get(files, cols, c)
        if rc != OK:
            c.fail(
                rc if rc in (UNSUPPORTED, NOMEM) else CORRUPT,
                c.dict_off,
                "dictionary page not handled" if rc == UNSUPPORTED else "dictionary page not readable",
            )
            return
        d = c.dict
        if body.need(vat + 1) != OK:
            raise _Corrupt
        bw = body.out[vat]
        if bw > 32:
            raise _Corrupt
        vh = _Hyb(body, vat + 1, body.usize, bw)
        if identity:
            ix = vh.all(n)
        else:
            ix = vh.gather(h.nvalues, [k for k in vidx if k >= 0])
        if ix is None:
            raise _Corrupt
        if any(x >= d.n for x in ix):
            raise _Corrupt
        q = 0
        for i, k in enumerate(vidx):
            slot = slot0 + i
            if k < 0:
                if physical == _PT_BYTE_ARRAY:
                    col.set_len(slot, 0)
                else:
                    col.values[slot * ow : (slot + 1) * ow] = 0
                continue
            x = ix[q]
            q += 1
            if physical == _PT_BYTE_ARRAY:
                a, b = d.offs[x] + 4, d.offs[x + 1]
                pg.data.append(d.buf[a:b])
                col.set_len(slot, b - a)
            else:
                col.values[slot * ow : (slot + 1) * ow] = np.frombuffer(d.fixed[x], dtype=np.uint8)
        return
    c.fail(UNSUPPORTED, pg.off, "page encoding not handled by the native reader")


# ---------------------------------------------------------------- read
def _check_job(files, chunks, rows, cols):
    """The checks of pqread.pyx's read() before it runs the job (ValueError)."""
    if chunks.ndim != 2 or chunks.shape[1] != len(FIELDS):
        raise ValueError(f"chunk table of {chunks.shape[-1]} columns, {len(FIELDS)} expected")
    for i, (kind, width, n, values, valid, offsets) in enumerate(cols):
        if values is not None:
            if len(values) < (n * width if kind == OUT_FIXED else n):
                raise ValueError(f"output column {i}: values buffer too small")
        elif kind <= OUT_BOOL:
            raise ValueError(f"output column {i} without a values buffer")
        if valid is not None and len(valid) < n:
            raise ValueError(f"output column {i}: validity buffer too small")
        if kind in (OUT_BYTES, OUT_LBYTES):
            want = np.int32 if kind == OUT_BYTES else np.int64
            if offsets is None or offsets.dtype != want:
                raise ValueError(f"output column {i}: offsets of {want.__name__} expected")
            if len(offsets) < n + 1:
                raise ValueError(f"output column {i}: offsets too small")
    for i in range(chunks.shape[0]):
        f = [int(x) for x in chunks[i]]
        if f[0] < 0 or f[0] >= len(files) or f[1] < 0 or f[1] >= len(cols):
            raise ValueError(f"chunk {i} names file {f[0]} / column {f[1]}")
        if f[14] < 0 or f[13] < 0 or f[13] + f[14] > len(rows) and not f[15]:
            raise ValueError(f"chunk {i}: rows outside the rows array")
        if f[16] < 0 or f[16] + f[14] > cols[f[1]][2]:
            raise ValueError(f"chunk {i}: output slots outside its column")


def read(files, chunks, rows, cols, threads=1):
    """Run one read, as the compiled ``read``: ``files`` per file ``(fd, size, segments)``,
    ``chunks`` one row of :data:`FIELDS` per column chunk, ``rows`` the wanted rows of each
    chunk's row group, ``cols`` per output column ``(kind, width, n, values, valid, offsets)``
    (numpy buffers written in place).  ``threads`` is ignored.

    Returns ``(status, err_at, errors, stats, data, overflow, summary)``: per chunk its status,
    the file offset and text of its error, ``[pages in the chunk, pages read, bytes read, slots
    made null]``; per column the ``bytes`` of its byte arrays (or None) and whether int32 offsets
    overflowed; ``summary``: ``(pages in the chunks, pages read, bytes read, bytes of the chunks
    read (not columns of nulls), chunks read that decoded, [slots made null per column], [chunks
    that did not decode])``."""
    chunks = np.asarray(chunks, dtype=np.int64)
    rows = np.asarray(rows, dtype=np.int64)
    _check_job(files, chunks, rows, cols)
    fl = [_File(fd, size, segments) for fd, size, segments in files]
    cl = [_Col(*col) for col in cols]
    rows_l = rows.tolist()
    ck = [_Chunk(chunks[i]) for i in range(chunks.shape[0])]
    # A: pages
    for c in ck:
        _chunk_pages(fl, cl, rows_l, c)
    # the units of B: every selected page, and one unit for each chunk of nulls
    units = []
    for i, c in enumerate(ck):
        if c.status != OK:
            continue
        if c.f[_CK_CONV] == CV_NULL and c.f[_CK_NSEL] > 0:
            u = _Page(0, 0, 0, c.f[_CK_NSEL])
            u.k0, u.k1 = 0, c.f[_CK_NSEL]
            c.pages = [u]
        for p in c.pages:
            p.chunk = i
            units.append(p)
    # B: pages
    for u in units:
        c = ck[u.chunk]
        _page_run(fl, cl, rows_l, c, u)
    for c in ck:
        c.dict = _Dict()  # the last page frees the dictionary
    # C: byte arrays: each column's values in slot order, lengths made offsets
    any_bytes = any(cl[c.f[_CK_COL]].kind >= OUT_BYTES for c in ck)
    if any_bytes:
        todo = [u for u in units if cl[ck[u.chunk].f[_CK_COL]].kind >= OUT_BYTES and ck[u.chunk].status == OK]
        for i, c in enumerate(ck):
            if c.status == OK or cl[c.f[_CK_COL]].kind < OUT_BYTES or c.f[_CK_NSEL] <= 0:
                continue
            u = _Page(0, 0, 0, 0)  # a failed chunk: empty values over its slots
            u.chunk, u.zero, u.k0, u.k1 = i, True, 0, c.f[_CK_NSEL]
            todo.append(u)
        todo.sort(key=lambda u: ck[u.chunk].f[_CK_OUT_AT] + u.k0)
        parts = {t: [] for t, col in enumerate(cl) if col.kind >= OUT_BYTES}
        total = dict.fromkeys(parts, 0)
        for u in todo:
            c = ck[u.chunk]
            t = c.f[_CK_COL]
            col = cl[t]
            a, m = c.f[_CK_OUT_AT] + u.k0, u.k1 - u.k0
            run = total[t]
            for k in range(m):
                if not u.zero:
                    run += int(col.offsets[a + k + 1])
                col.offsets[a + k + 1] = run if col.kind == OUT_LBYTES else _i32(run)
            parts[t].extend(u.data)
            total[t] += sum(len(p) for p in u.data)
        for t, col in enumerate(cl):
            if col.kind < OUT_BYTES:
                continue
            col.data = b"".join(parts[t])
            col.overflow = col.kind == OUT_BYTES and total[t] > 0x7FFFFFFF
    nk = len(ck)
    status = np.array([c.status for c in ck], dtype=np.int32)
    err_at = np.array([c.err_at for c in ck], dtype=np.int64)
    stats = np.array([[c.pages_total, c.pages_read, c.bytes_read, c.nulls] for c in ck], dtype=np.int64).reshape(nk, 4)
    errors = {i: c.err for i, c in enumerate(ck) if c.status != OK}
    data = [col.data for col in cl]
    overflow = [bool(col.overflow) for col in cl]
    nulls = [0] * len(cl)
    for c in ck:
        nulls[c.f[_CK_COL]] += c.nulls
    real = [c for c in ck if c.f[_CK_CONV] != CV_NULL]
    summary = (
        sum(c.pages_total for c in ck),
        sum(c.pages_read for c in ck),
        sum(c.bytes_read for c in ck),
        sum(c.f[_CK_LEN] for c in real),
        sum(c.status == OK for c in real),
        nulls,
        [i for i, c in enumerate(ck) if c.status != OK],
    )
    return status, err_at, errors, stats, data, overflow, summary


__all__ = [
    "read",
    "decompress",
    "codec_available",
    "release_memory",
    "set_buffer_cache",
    "buffer_cache",
    "FIELDS",
    "OK",
    "CORRUPT",
    "UNSUPPORTED",
    "NOMEM",
    "IO",
    "OUT_FIXED",
    "OUT_BOOL",
    "OUT_BYTES",
    "OUT_LBYTES",
    "CV_COPY",
    "CV_I32_1",
    "CV_I32_2",
    "CV_INT96_NS",
    "CV_DEC_I32",
    "CV_DEC_I64",
    "CV_DEC_BE",
    "CV_I32_I64",
    "CV_U32_I64",
    "CV_F32_F64",
    "CV_NULL",
]
