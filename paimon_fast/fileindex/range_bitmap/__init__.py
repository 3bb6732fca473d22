"""Range bitmap file index (``range-bitmap``), byte-compatible with Paimon's
``RangeBitmapFileIndex`` / ``RangeBitmap`` / ``ChunkedDictionary`` /
``BitSliceIndexBitmap`` (FORMAT_NOTES.md section 9; all big-endian)::

    i32 header length | u8 version=1 | i32 row count | i32 cardinality
    [key min | key max]  (only when cardinality > 0) | i32 dictionary length
    dictionary: i32 13 | u8 1 | i32 chunks C | i32 4*C | i32 chunks length
                C x i32 chunk offsets | chunk headers | keys area
    bit-sliced codes: i32 header length | u8 1 | u8 slices S | i32 ebm length
                i32 8*S | S x (i32 offset, i32 length) | ebm | slices

Each distinct non-null value gets its rank as dictionary code; slice i holds
the rows whose code has bit i set (``S = max(bitLength(C-1), 1)``; 64 empty
slices when C = 0, as Java).  Keys: TINYINT 1 byte, SMALLINT 2, INT / DATE /
TIME 4, BIGINT / TIMESTAMP(p<=6) / DECIMAL(p<=18) 8 (millis, micros,
unscaled), FLOAT / DOUBLE raw IEEE bits (NaN canonicalised), BOOLEAN 1,
CHAR / VARCHAR / STRING ``i32 length + UTF-8``.  Order: signed numbers,
``Float.compare`` for floats (-0.0 < 0.0 < ... < +Inf < NaN), bytes for strings.

Reader answers are exact row bitmaps (:class:`~paimon_fast.core.result.BitmapResult`)
computed over dense 64-bit words by Cython kernels (O'Neil-Quass slice
comparisons, slice-by-slice top-k).  As Java, comparisons return only non-null
rows (``!=`` / ``NOT IN`` exclude nulls), and a null literal in a value
comparison raises :class:`NullLiteralError` (Java: NullPointerException).
"""

from .._bitslice import NullLiteralError
from .factory import RangeBitmapFactory
from .keys import CHUNK_SIZE, INDEX_TYPE, VERSION, KeyCodec, check_type
from .reader import RangeBitmapReader
from .writer import RangeBitmapWriter, build_index

__all__ = [
    "RangeBitmapWriter",
    "RangeBitmapReader",
    "NullLiteralError",
    "KeyCodec",
    "build_index",
    # also handed on at this path
    "RangeBitmapFactory",
    "INDEX_TYPE",
    "CHUNK_SIZE",
    "VERSION",
    "check_type",
]
