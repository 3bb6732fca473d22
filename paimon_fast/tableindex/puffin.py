"""Iceberg Puffin files holding deletion vectors (``deletion-vector-v1`` blobs).

A 64-bit Paimon deletion vector's blob (BE length, LE magic + bitmap, BE CRC)
is byte for byte Iceberg's deletion-vector-v1 blob, so a Puffin file of our
blobs is readable by any Iceberg implementation (tested with pyiceberg).

Layout: ``PFA1`` + blobs + footer (``PFA1`` + JSON payload + i32 LE payload
size + 4 flag bytes (0 = uncompressed) + ``PFA1``).
"""

from __future__ import annotations

import json
import struct

from ..errors import IndexFormatError
from ..io.fsutil import write_atomic
from ..io.source import as_source
from .deletion import Bitmap64DeletionVector, BitmapDeletionVector, DeletionVector

MAGIC = b"PFA1"
BLOB_TYPE = "deletion-vector-v1"
ROW_POSITION_FIELD_ID = 2147483645  # Iceberg's _pos metadata column
_MAX_FOOTER = 64 * 1024 * 1024


def write_puffin(
    vectors, path=None, snapshot_id: int = -1, sequence_number: int = -1, properties: dict | None = None
) -> bytes:
    """Puffin bytes holding one deletion-vector-v1 blob per ``(data_file, vector)``.

    32-bit vectors are widened to 64-bit (Java ``fromBitmapDeletionVector``):
    Iceberg only knows the 64-bit layout.  With ``path`` the file is also
    written (temporary name + rename).
    """
    items = list(vectors.items()) if isinstance(vectors, dict) else list(vectors)
    parts = [MAGIC]
    pos = len(MAGIC)
    blobs = []
    for data_file, dv in items:
        if isinstance(dv, BitmapDeletionVector):
            dv = dv.to_bitmap64()
        if not isinstance(dv, Bitmap64DeletionVector):
            raise TypeError(f"vector of {data_file!r} is not a DeletionVector")
        blob = dv.to_blob()
        blobs.append(
            {
                "type": BLOB_TYPE,
                "fields": [ROW_POSITION_FIELD_ID],
                "snapshot-id": snapshot_id,
                "sequence-number": sequence_number,
                "offset": pos,
                "length": len(blob),
                "properties": {"referenced-data-file": str(data_file), "cardinality": str(dv.cardinality)},
            }
        )
        parts.append(blob)
        pos += len(blob)
    footer = {"blobs": blobs}
    if properties:
        footer["properties"] = {str(k): str(v) for k, v in properties.items()}
    payload = json.dumps(footer, separators=(",", ":")).encode("utf-8")
    parts += [MAGIC, payload, struct.pack("<i", len(payload)), b"\0\0\0\0", MAGIC]
    data = b"".join(parts)
    if path is not None:
        write_atomic(path, data)
    return data


def read_puffin(path_or_bytes) -> list[tuple[str, DeletionVector]]:
    """``[(referenced data file, DeletionVector), ...]`` of a Puffin file's
    deletion-vector-v1 blobs (other blob types are skipped; CRCs checked)."""
    src = as_source(path_or_bytes)
    n = src.size
    if n < 16:
        raise IndexFormatError(f"Puffin file too small ({n} bytes)", 0)
    if bytes(src.read_at(0, 4)) != MAGIC or bytes(src.read_at(n - 4, 4)) != MAGIC:
        raise IndexFormatError("not a Puffin file (magic PFA1 missing)", 0)
    flags = bytes(src.read_at(n - 8, 4))
    if flags[0] & 1:
        raise IndexFormatError("compressed Puffin footers are not supported", n - 8)
    (size,) = struct.unpack("<i", bytes(src.read_at(n - 12, 4)))
    if size < 0 or size > min(_MAX_FOOTER, n - 16):
        raise IndexFormatError(f"Puffin footer size {size} does not fit the file", n - 12)
    start = n - 12 - size
    if bytes(src.read_at(start - 4, 4)) != MAGIC:
        raise IndexFormatError("Puffin footer magic missing", start - 4)
    try:
        footer = json.loads(bytes(src.read_at(start, size)).decode("utf-8"))
        blobs = footer["blobs"]
    except (ValueError, KeyError, TypeError) as e:
        raise IndexFormatError(f"Puffin footer is not valid JSON metadata: {e}", start) from None
    if not isinstance(blobs, list):
        raise IndexFormatError("Puffin footer: 'blobs' is not a list", start)
    out = []
    for b in blobs:
        try:
            if b.get("type") != BLOB_TYPE:
                continue
            if b.get("compression-codec"):
                raise IndexFormatError("compressed deletion-vector blobs are not allowed", start)
            off, length = int(b["offset"]), int(b["length"])
            name = b.get("properties", {}).get("referenced-data-file")
        except (AttributeError, KeyError, TypeError, ValueError) as e:
            if isinstance(e, IndexFormatError):
                raise
            raise IndexFormatError(f"Puffin blob metadata is malformed: {e!r}", start) from None
        dv = DeletionVector.from_blob(src.read_at(off, length, "Puffin blob"), off, name)
        out.append((name, dv))
    return out
