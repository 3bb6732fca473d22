"""Deletion vectors of a pypaimon split, 32-bit and 64-bit.

pypaimon 2.1 reads only 32-bit deletion vectors (``BitmapDeletionVector``)
and raises on the 64-bit ones Java writes with
``deletion-vectors.bitmap64 = true``.  Pruned scans read both kinds here
(through :mod:`paimon_fast.tableindex`) and fold them into the row ranges
they hand pypaimon, so pypaimon never opens a deletion file it cannot parse.

Blob layout (FORMAT_NOTES section 12): ``i32 BE size``, ``size`` bytes of
bin, ``i32 BE CRC-32`` of the bin; a 32-bit bin starts with the BE magic
1581511376, a 64-bit one with the LE magic 1681511377.  The index metadata
records the bin size (32-bit) or size + 8 (64-bit).

Upstream fix: give pypaimon's ``DeletionVector.read`` a second branch for the
LE magic 1681511377 (``Bitmap64DeletionVector``: length == size + 8, the
bitmap an OptimizedRoaringBitmap64 read into a 64-bit roaring map).
"""

from __future__ import annotations

import struct

from pyroaring import BitMap

from ..errors import IndexFormatError
from ..core.roaring import bitmap_of
from ..tableindex.deletion import MAGIC64 as MAGIC_64
from ..tableindex.deletion import DeletionVector

# a deletion blob larger than this is not plausible for one data file
_MAX_BLOB = 1 << 31


def parse_deletion_blob(blob: bytes, expected_length=None, base: int = 0) -> DeletionVector:
    """The vector in one blob (size + bin + CRC); ``expected_length`` is the
    index metadata's length, checked as Java does."""
    if len(blob) < 8:
        raise IndexFormatError("deletion vector truncated", base)
    (size,) = struct.unpack_from(">i", blob, 0)
    if size < 4 or size + 8 > len(blob):
        raise IndexFormatError(f"deletion vector size {size} does not fit in {len(blob)} bytes", base)
    dv = DeletionVector.from_blob(bytes(blob[: size + 8]), base)
    if expected_length is not None:
        want = size + 8 if dv.bitmap64 else size
        if expected_length != want:
            raise IndexFormatError(
                f"deletion vector size {size} does not match the recorded length {expected_length}", base
            )
    return dv


def is_64bit(file_io, deletion_file) -> bool:
    """Whether the deletion vector is a 64-bit one (reads 8 bytes)."""
    with file_io.new_input_stream(deletion_file.dv_index_path) as f:
        f.seek(deletion_file.offset)
        head = f.read(8)
    return len(head) == 8 and struct.unpack_from("<i", head, 4)[0] == MAGIC_64


def read_deletion_vector(file_io, deletion_file) -> BitMap:
    """Deleted row positions of one data file (a pypaimon ``DeletionFile``) as a
    32-bit ``BitMap``.  64-bit vectors are accepted when every position fits in
    32 bits (a data file has fewer rows than that); otherwise IndexFormatError."""
    with file_io.new_input_stream(deletion_file.dv_index_path) as f:
        f.seek(deletion_file.offset)
        head = f.read(4)
        if len(head) < 4:
            raise IndexFormatError("deletion vector truncated", deletion_file.offset)
        (size,) = struct.unpack(">i", head)
        if size < 4 or size > _MAX_BLOB:
            raise IndexFormatError(f"deletion vector size {size} out of range", deletion_file.offset)
        rest = f.read(size + 4)
    dv = parse_deletion_blob(head + rest, deletion_file.length, deletion_file.offset)
    pos = dv.positions()
    if len(pos) and int(pos[-1]) >= (1 << 32):
        raise IndexFormatError("64-bit deletion vector has positions beyond 2^32", deletion_file.offset)
    return bitmap_of(pos)
