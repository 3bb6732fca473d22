"""Helpers shared by the range-bitmap and BSI file indexes: dense row sets
(uint64 words) <-> pyroaring bitmaps, and reading sliced bitmaps from a Source."""
from __future__ import annotations

import numpy as np
from pyroaring import BitMap

from .. import roaring as _roaring
from .._kernels import load as _load
from ..errors import IndexFormatError, PaimonFastError

_k = _load("bitslice")


class NullLiteralError(PaimonFastError, ValueError):
    """A null literal reached a value comparison of a range-bitmap / BSI index.

    Java Paimon throws ``NullPointerException`` in that case (e.g. ``IN`` /
    ``NOT IN`` lists holding a null); we raise this instead of guessing an answer.
    """


def nwords(nbits: int) -> int:
    return (nbits + 63) >> 6


def to_bitmap(words: np.ndarray) -> BitMap:
    """A pyroaring BitMap of a dense row set (via portable bytes, no per-row Python work)."""
    if not words.any():
        return BitMap()
    return BitMap.deserialize(_k.encode(words))


def positions_bitmap(pos: np.ndarray) -> BitMap:
    """A BitMap of sorted uint32 positions (via Java-exact portable bytes)."""
    if pos.size == 0:
        return BitMap()
    return BitMap.deserialize(_roaring.serialize_sorted32(pos))


def from_bitmap(bm: BitMap, nbits: int) -> np.ndarray:
    """Dense words of ``bm`` restricted to rows < nbits."""
    words = np.zeros(nwords(nbits), dtype=np.uint64)
    if len(bm) == 0 or nbits == 0:
        return words
    if bm.max() >= nbits:
        bm = bm & range_bitmap(0, nbits)
    if len(bm) == 0:
        return words
    raw = np.frombuffer(bm.serialize(), dtype=np.uint8)
    _k.decode_into(raw, 0, -1, words, nbits)
    return words


def range_bitmap(start: int, end: int) -> BitMap:
    bm = BitMap()
    if end > start:
        bm.add_range(start, end)
    return bm


def read_roaring_dense(data: np.ndarray, offset: int, limit: int, nbits: int, base: int, what: str):
    """Decode the portable bitmap at ``data[offset:limit]`` into new dense words.

    Returns ``(words, serialized size, cardinality)``."""
    words = np.zeros(nwords(nbits), dtype=np.uint64)
    try:
        size, card = _k.decode_into(data, offset, limit, words, nbits, base)
    except IndexFormatError as e:
        raise IndexFormatError(f"{what}: {e.what}", e.offset) from None
    return words, size, card
