"""Helpers shared by the range-bitmap and BSI file indexes: dense row sets
(uint64 words) <-> pyroaring bitmaps, and reading sliced bitmaps from a Source."""

from __future__ import annotations

import numpy as np
from pyroaring import BitMap

from ..core import roaring as _roaring
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
    return BitMap.deserialize(_k.encode_plain(words))


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


BLOCK_WORDS = 4  # 256 rows per block in the top-k summary


def topk_candidate_words(bmax: np.ndarray, bmin: np.ndarray, k: int, largest: bool, nw: int):
    """Word indices that hold every top-k (bottom-k) row and its ties, from
    per-block maxima (minima) of the values; None when it cannot prune.

    With at least k non-empty blocks, the k-th largest block maximum T is a
    lower bound of the k-th largest value (k blocks each hold a row >= T), so
    only blocks whose maximum is >= T can hold answers (symmetrically for k-th
    smallest with minima)."""
    nonempty = bmax >= 0
    m = int(nonempty.sum())
    if k <= 0 or m < k:
        return None
    if largest:
        vals = bmax[nonempty]
        t = np.partition(vals, m - k)[m - k]
        blocks = np.flatnonzero(bmax >= t)
    else:
        vals = bmin[nonempty]
        t = np.partition(vals, k - 1)[k - 1]
        blocks = np.flatnonzero(nonempty & (bmin <= t))
    if len(blocks) * BLOCK_WORDS * 4 > nw:  # not worth it
        return None
    words = (blocks[:, None] * BLOCK_WORDS + np.arange(BLOCK_WORDS)).ravel()
    return words[words < nw]
