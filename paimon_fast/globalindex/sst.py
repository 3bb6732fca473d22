"""Paimon's SST layer, shared by the bitmap and BTree global indexes.

**Compressible blocks and their trailer** (both indexes): a stored block is the raw bytes,
or (when compression saves more than an eighth) ``varint raw length`` + codec payload;
then a 5-byte trailer: ``u8 type`` (0 none, 1 zstd, 2 lz4, 3 lzo) and ``u32 LE`` CRC-32
(zlib / IEEE, despite its Java name crc32c) over the stored bytes followed by the type byte.
Payloads: zstd = one zstd frame; lz4 / lzo = ``u32 LE compressed length``, ``u32 LE raw
length``, then a raw LZ4 block / LZO1X block.  Compressed bytes depend on the codec library,
so only the decompressed content is comparable with Java's.  Codecs: ``zstandard`` and
``lz4`` (the ``codecs`` extra), ``python-lzo`` (the ``lzo`` extra).  The bitmap index frames
its dictionary and index blocks this way (:mod:`.format`).

**SST blocks** (the BTree index's data and index blocks, Java's ``org.apache.paimon.sst``):
entries ``varint key length, key, varint value length, value``, then a tail: ``i32 LE entry
size`` + byte 0 when every entry has the same encoded length ("aligned"), else one ``i32
LE`` start offset per entry, ``i32 LE`` count and byte 1 (an empty block is never aligned).
A writer closes a data block right after the entry that makes ``entry bytes + 5 (+ 4 per
entry when not aligned)`` exceed the block size; the index block holds each data block's
last key and its handle ``varint64 offset, varint32 stored size`` (trailer excluded).  The
kernels (``paimon_fast/_kernels/sst.pyx``, twins ``paimon_fast/reference/sst.py``) lay out
many blocks in one call and walk one block per call: :data:`kernels`.
"""

from __future__ import annotations


import struct

from .._kernels import load as _load
from ..errors import IndexFormatError, MissingCodecError, OptionError, missing, require
from ..io.serde import encode_varint

_kg = _load("globalindex")
kernels = _load("sst")  # SST block kernels (see the module docstring)
_crc32 = _kg.crc32  # zlib.crc32's value, several times faster on 16 kb blocks
_block_trailer = _kg.block_trailer

TRAILER = 5
NONE, ZSTD, LZ4, LZO = 0, 1, 2, 3
NAMES = {NONE: "none", ZSTD: "zstd", LZ4: "lz4", LZO: "lzo"}
BY_NAME = {v: k for k, v in NAMES.items()}
# A block never inflates by more than this factor from a valid payload we accept;
# bounds the allocation a corrupt raw-length field can cause.
MAX_RATIO = 1024
MIN_BOUND = 16 << 20


def _zstd():
    return require("zstandard", "zstd compression", MissingCodecError)


def _zstd_at_most(data: bytes, raw_len: int, offset: int) -> bytes:
    """The zstd frames of ``data`` decompressed, never to more than ``raw_len + 1`` bytes: a frame
    declaring another size is refused before anything is allocated, and one declaring none is
    streamed only that far (zstandard's one-shot decompress sizes its output by the frame header,
    whatever ``max_output_size`` says: a 49 KB block could claim and fill 1.5 GB)."""
    zstandard = _zstd()
    declared = zstandard.frame_content_size(data)  # -1: the frame does not say
    if declared >= 0 and declared != raw_len:
        raise IndexFormatError(f"zstd block declares {declared} raw bytes, {raw_len} expected", offset)
    out = bytearray()
    with zstandard.ZstdDecompressor().stream_reader(data, read_across_frames=True) as r:
        while len(out) <= raw_len:
            chunk = r.read(raw_len + 1 - len(out))
            if not chunk:
                break
            out += chunk
    return bytes(out)


def _lz4():
    require("lz4", "lz4 compression", MissingCodecError)
    import lz4.block

    return lz4.block


LZO_LIB_HINT = (
    "it builds against liblzo2: first `apt-get install liblzo2-dev` (Debian/Ubuntu), "
    "`dnf install lzo-devel` (Fedora/RHEL) or `brew install lzo` (macOS)"
)


def lzo_module():
    """The ``lzo`` module, or a :class:`MissingCodecError` (an OptionError) naming the ``lzo``
    extra and, when the C library is what is missing, the command that installs liblzo2."""
    try:
        import lzo
    except ImportError as e:
        if "liblzo" in str(e):  # python-lzo is installed but its shared library is gone
            raise MissingCodecError(
                f"LZO compression needs the liblzo2 C library ({e}): "
                "`apt-get install liblzo2-2` (Debian/Ubuntu), `dnf install lzo` (Fedora/RHEL), "
                "`brew install lzo` (macOS)",
                name="lzo",
            ) from None
        raise missing("lzo", "LZO compression", MissingCodecError, f" ({LZO_LIB_HINT})") from None
    return lzo


def compression_type(name, option: str = "bitmap-index.compression") -> int:
    """The compression type byte of a codec name (``option``: the option it came from, for the error)."""
    n = str(name or "none").strip().lower()
    if n not in BY_NAME:
        raise OptionError(f"unknown {option} {name!r}; use none, lz4, zstd or lzo")
    return BY_NAME[n]


def trailer(stored: bytes, ctype: int) -> bytes:
    crc = _crc32(bytes((ctype,)), _crc32(stored))
    return struct.pack("<BI", ctype, crc)


class BlockEncoder:
    """Encodes raw blocks as Java's ``writeCompressibleBlock`` (callable: raw -> stored + trailer)."""

    def __init__(self, ctype: int = NONE, level: int = 1):
        self.ctype = ctype
        self.level = level
        self._compress = None
        if ctype == ZSTD:
            self._compress = _zstd().ZstdCompressor(level=level, write_content_size=False).compress
        elif ctype == LZ4:
            blk = _lz4()

            def c(raw):
                body = blk.compress(raw, mode="default", store_size=False)
                return struct.pack("<II", len(body), len(raw)) + body

            self._compress = c
        elif ctype == LZO:
            lzo = lzo_module()

            def c(raw):
                body = lzo.compress(raw, 1, False)
                return struct.pack("<II", len(body), len(raw)) + body

            self._compress = c

    def __call__(self, raw: bytes) -> bytes:
        stored, ctype = raw, NONE
        if self._compress is not None:
            comp = encode_varint(len(raw)) + self._compress(raw)
            if len(comp) < len(raw) - len(raw) // 8:
                stored, ctype = comp, self.ctype
        return stored + trailer(stored, ctype)


def decode(stored_and_trailer, length: int, offset: int) -> tuple:
    """Check the trailer and decompress: returns ``(raw bytes, compression type)``.

    ``stored_and_trailer`` holds ``length`` stored bytes + the trailer; ``offset``
    (absolute, for messages) is where the block starts in the file."""
    ctype = _block_trailer(stored_and_trailer, length, offset)  # size and CRC checked
    stored = memoryview(stored_and_trailer)[:length]
    if ctype == NONE:
        return stored, NONE
    if ctype not in NAMES:
        raise IndexFormatError(f"unknown block compression type {ctype}", offset + length)
    # varint raw length
    raw_len, shift, p = 0, 0, 0
    while True:
        if p >= length:
            raise IndexFormatError("compressed block truncated (raw length)", offset)
        b = stored[p]
        p += 1
        raw_len |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
        if shift > 28:
            raise IndexFormatError("compressed block raw length is not a valid var-int", offset)
    if raw_len >= 1 << 31 or raw_len > max(MIN_BOUND, MAX_RATIO * length):
        raise IndexFormatError(f"compressed block claims {raw_len} raw bytes from {length} stored bytes", offset)
    payload = stored[p:]
    try:
        if ctype == ZSTD:
            out = _zstd_at_most(bytes(payload), raw_len, offset)
        else:
            if len(payload) < 8:
                raise IndexFormatError("compressed block truncated (codec header)", offset + p)
            clen, olen = struct.unpack_from("<ii", payload, 0)
            if olen < 0 or clen < 0 or (olen == 0) != (clen == 0) or olen != raw_len or clen > len(payload) - 8:
                raise IndexFormatError(
                    f"compressed block has inconsistent lengths ({clen}, {olen}, raw {raw_len})", offset + p
                )
            body = bytes(payload[8 : 8 + clen])
            if ctype == LZ4:
                out = _lz4().decompress(body, uncompressed_size=olen)
            else:
                out = lzo_module().decompress(body, False, olen)
    except IndexFormatError:
        raise
    except OptionError:
        raise
    except Exception as e:  # codec libraries raise their own error types
        raise IndexFormatError(f"{NAMES[ctype]} block does not decompress: {e}", offset) from None
    if len(out) != raw_len:
        raise IndexFormatError(f"{NAMES[ctype]} block decompressed to {len(out)} bytes, expected {raw_len}", offset)
    return bytes(out), ctype


def read_block(source, offset: int, length: int, what: str):
    """Read a stored block and its trailer from ``source`` (a :class:`~paimon_fast.io.source.Source`),
    check it and decompress it: ``(raw bytes, compression type)``."""
    if offset < 0 or length < 0:
        raise IndexFormatError(f"{what} has a negative offset or length", offset)
    blob = source.read_at(offset, length + TRAILER, what)
    return decode(blob, length, offset)
