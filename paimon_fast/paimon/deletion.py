"""Deletion vectors of a pypaimon split, 32-bit and 64-bit.

pypaimon 2.1 reads only 32-bit deletion vectors (``BitmapDeletionVector``)
and raises on the 64-bit ones Java writes with
``deletion-vectors.bitmap64 = true``.  Pruned scans read both kinds here and
fold them into the row ranges they hand pypaimon, so pypaimon never opens a
deletion file it cannot parse.

Blob layout (FORMAT_NOTES section 12): ``i32 BE size``, ``size`` bytes of
bin, ``i32 BE CRC-32`` of the bin.  A 32-bit bin starts with the BE magic
1581511376 followed by a portable roaring bitmap; a 64-bit bin starts with
the LE magic 1681511377 followed by an OptimizedRoaringBitmap64 (u64 LE count,
then u32 LE key + 32-bit portable bitmap per key), which has the layout of
``Roaring64NavigableMap``'s portable form.

Upstream fix: give pypaimon's ``DeletionVector.read`` a second branch for the
LE magic 1681511377 (``Bitmap64DeletionVector``: length == size + 8, bitmap
read with a 64-bit roaring map).
"""
from __future__ import annotations

import struct
import zlib

from pyroaring import BitMap, BitMap64

from ..errors import IndexFormatError
from .. import roaring

MAGIC_32 = 1581511376
MAGIC_64 = 1681511377
# a deletion blob larger than this is not plausible for one data file
_MAX_BLOB = 1 << 31


def parse_deletion_blob(blob: bytes, expected_length=None, base: int = 0):
    """Positions (``BitMap`` or ``BitMap64``) from one blob that starts at
    its size field; ``expected_length`` is the index metadata's length."""
    if len(blob) < 8:
        raise IndexFormatError("deletion vector truncated", base)
    (size,) = struct.unpack_from(">i", blob, 0)
    if size < 4 or size + 8 > len(blob):
        raise IndexFormatError(f"deletion vector size {size} does not fit in {len(blob)} bytes", base)
    bin_ = blob[4:4 + size]
    (crc,) = struct.unpack_from(">I", blob, 4 + size)
    if zlib.crc32(bin_) & 0xFFFFFFFF != crc:
        raise IndexFormatError("deletion vector CRC mismatch", base + 4 + size)
    (magic_be,) = struct.unpack_from(">i", bin_, 0)
    (magic_le,) = struct.unpack_from("<i", bin_, 0)
    if magic_be == MAGIC_32:
        if expected_length is not None and expected_length != size:
            raise IndexFormatError(f"32-bit deletion vector: size {size} != metadata length {expected_length}", base)
        return roaring.deserialize32(bin_, 4, len(bin_), base + 4)
    if magic_le == MAGIC_64:
        if expected_length is not None and expected_length != size + 8:
            raise IndexFormatError(f"64-bit deletion vector: size {size} != metadata length {expected_length} - 8",
                                   base)
        return roaring.deserialize64(bin_, 4, len(bin_), base + 4)
    raise IndexFormatError(f"unknown deletion vector magic 0x{magic_be & 0xFFFFFFFF:08x}", base + 4)


def is_64bit(file_io, deletion_file) -> bool:
    """Whether the deletion vector is a 64-bit one (reads 8 bytes)."""
    with file_io.new_input_stream(deletion_file.dv_index_path) as f:
        f.seek(deletion_file.offset)
        head = f.read(8)
    return len(head) == 8 and struct.unpack_from("<i", head, 4)[0] == MAGIC_64


def read_deletion_vector(file_io, deletion_file) -> BitMap:
    """Deleted row positions of one data file as a 32-bit ``BitMap``.

    64-bit vectors are accepted when every position fits in 32 bits (a data
    file has fewer than 2^32 rows in practice); otherwise IndexFormatError.
    """
    length = deletion_file.length
    with file_io.new_input_stream(deletion_file.dv_index_path) as f:
        f.seek(deletion_file.offset)
        head = f.read(4)
        if len(head) < 4:
            raise IndexFormatError("deletion vector truncated", deletion_file.offset)
        (size,) = struct.unpack(">i", head)
        if size < 4 or size > _MAX_BLOB:
            raise IndexFormatError(f"deletion vector size {size} out of range", deletion_file.offset)
        rest = f.read(size + 4)
    bm = parse_deletion_blob(head + rest, length, deletion_file.offset)
    if isinstance(bm, BitMap64):
        if len(bm) and bm.max() >= (1 << 32):
            raise IndexFormatError("64-bit deletion vector has positions beyond 2^32", deletion_file.offset)
        out = BitMap()
        if len(bm):
            import numpy as np

            out = BitMap(np.asarray(bm.to_array(), dtype=np.uint64).astype(np.uint32))
        return out
    return bm
