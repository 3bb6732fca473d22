"""A lean reader of Avro object containers (Paimon's manifest lists and manifests):
every record decoded with the file's own writer schema by fastavro's schemaless reader,
block by block, every length checked (:class:`~paimon_fast.errors.IndexFormatError`); a codec
it cannot decode raises :class:`~.pruning.Fallback`.  Parsed schemas and headers are cached
(the manifests of a table share a few), so many small manifests stay cheap."""

from __future__ import annotations

import io
import json
import threading
import zlib
from typing import Dict, List

from ..errors import IndexFormatError, MissingDependencyError, require
from .pruning import Fallback

_AVRO_MAGIC = b"Obj\x01"
_SCHEMA_CACHE: Dict[bytes, object] = {}
_SCHEMA_LOCK = threading.Lock()
_HEADER_CACHE: Dict[bytes, tuple] = {}  # metadata map bytes -> (parsed schema, codec)
_ZSTD = threading.local()


def _zigzag(buf, pos):
    """(value, new pos) of an Avro long at ``pos``."""
    shift = 0
    acc = 0
    n = len(buf)
    while True:
        if pos >= n:
            raise IndexFormatError("Avro long truncated", pos)
        b = buf[pos]
        pos += 1
        acc |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
        if shift > 63:
            raise IndexFormatError("Avro long too long", pos)
    return (acc >> 1) ^ -(acc & 1), pos


def _decompress(codec: bytes, blk: bytes, at: int) -> bytes:
    if codec in (b"null", b""):
        return blk
    if codec == b"deflate":
        return zlib.decompress(blk, -15)
    if codec == b"zstandard":
        dctx = getattr(_ZSTD, "dctx", None)
        if dctx is None:  # one decompression context per thread, reused
            zstandard = require("zstandard", "reading a zstd-compressed Avro manifest")

            dctx = _ZSTD.dctx = zstandard.ZstdDecompressor()
        return dctx.decompressobj().decompress(blk)
    if codec == b"snappy":
        try:
            import snappy
        except ImportError:
            raise Fallback("snappy-compressed manifest and python-snappy is not installed")
        return snappy.decompress(blk[:-4])
    raise Fallback(f"Avro codec {codec!r}")


def _parse_avro_header(data: bytes, fastavro):
    """``(parsed schema, codec, position of the sync marker)``; remembers the header."""
    pos = 4
    meta = {}
    while True:
        n, pos = _zigzag(data, pos)
        if n == 0:
            break
        if n < 0:
            n = -n
            _, pos = _zigzag(data, pos)
        for _ in range(n):
            klen, pos = _zigzag(data, pos)
            if klen < 0 or pos + klen > len(data):
                raise IndexFormatError("Avro header truncated", pos)
            key = bytes(data[pos : pos + klen])
            pos += klen
            vlen, pos = _zigzag(data, pos)
            if vlen < 0 or pos + vlen > len(data):
                raise IndexFormatError("Avro header truncated", pos)
            meta[key] = bytes(data[pos : pos + vlen])
            pos += vlen
    schema_text = meta.get(b"avro.schema")
    if schema_text is None or pos + 16 > len(data):
        raise IndexFormatError("Avro header without a schema", pos)
    parsed = _SCHEMA_CACHE.get(schema_text)
    if parsed is None:
        try:
            parsed = fastavro.parse_schema(json.loads(schema_text))
        except Exception as e:  # JSON or schema errors
            raise IndexFormatError(f"Avro schema does not parse: {e}", 4)
        with _SCHEMA_LOCK:
            _SCHEMA_CACHE[schema_text] = parsed
    codec = meta.get(b"avro.codec", b"null")
    with _SCHEMA_LOCK:
        if len(_HEADER_CACHE) >= 64:
            _HEADER_CACHE.clear()
        _HEADER_CACHE[bytes(data[4:pos])] = (parsed, codec)
    return parsed, codec, pos


def read_avro(data: bytes) -> List[dict]:
    """Every record of an Avro object container, decoded with its writer schema.

    Parsed schemas are cached by their JSON text (manifests of one table share
    a few schemas), which is what makes many small manifests cheap."""
    import fastavro

    data = bytes(data)
    if data[:4] != _AVRO_MAGIC:
        raise IndexFormatError("not an Avro object container", 0)
    # the files of a table share a few headers (metadata map: schema, codec); only the
    # sync marker after it differs, so a header seen before is matched by one compare
    for meta_bytes, known in tuple(_HEADER_CACHE.items()):  # a snapshot: other threads may add
        if data.startswith(meta_bytes, 4):
            parsed, codec = known
            pos = 4 + len(meta_bytes)
            break
    else:
        parsed, codec, pos = _parse_avro_header(data, fastavro)
    sync = data[pos : pos + 16]
    if len(sync) != 16:
        raise IndexFormatError("Avro header truncated", pos)
    pos += 16
    out = []
    n = len(data)
    while pos < n:
        count, pos = _zigzag(data, pos)
        size, pos = _zigzag(data, pos)
        if count < 0 or size < 0 or pos + size + 16 > n:
            raise IndexFormatError("Avro block truncated", pos)
        at = pos
        try:
            blk = _decompress(codec, data[pos : pos + size], pos)
        except (Fallback, MissingDependencyError):  # not a corrupt file: a codec this install lacks
            raise
        except Exception as e:  # zlib.error, zstandard.ZstdError, ...
            raise IndexFormatError(f"Avro block does not decompress ({codec.decode(errors='replace')}): {e}", at)
        pos += size
        if data[pos : pos + 16] != sync:
            raise IndexFormatError("Avro sync marker mismatch", pos)
        pos += 16
        if count > len(blk):  # every manifest record takes at least one byte
            raise IndexFormatError(f"Avro block claims {count} records in {len(blk)} bytes", at)
        bio = io.BytesIO(blk)
        for _ in range(count):
            try:
                out.append(fastavro.schemaless_reader(bio, parsed, None))
            except (EOFError, ValueError, IndexError, KeyError, TypeError, OverflowError, UnicodeDecodeError) as e:
                raise IndexFormatError(f"Avro record does not decode: {e}", at)
        if bio.tell() != len(blk):
            raise IndexFormatError(f"Avro block of {count} records has {len(blk) - bio.tell()} bytes left over", at)
    return out
