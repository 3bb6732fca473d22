"""Twins of the clustering kernels (:mod:`paimon_fast._kernels.order`): one Python integer per key,
Skilling's Hilbert transform written out, ``sorted`` for the argsort."""

from __future__ import annotations

from typing import List, Sequence

MASK64 = (1 << 64) - 1


def radix_argsort(keys: Sequence[Sequence[int]]) -> List[int]:
    """The stable ascending order of the keys (``keys[w][i]``: word ``w`` of key ``i``)."""
    if not keys:
        return []
    n = len(keys[0])
    return sorted(range(n), key=lambda i: tuple(int(w[i]) for w in keys))


def interleave_row(words: Sequence[int]) -> List[int]:
    """One row's words interleaved bit by bit, most significant first (column 0's bit, then 1's ...)."""
    nc = len(words)
    bits = []
    for b in range(63, -1, -1):
        for c in range(nc):
            bits.append((int(words[c]) >> b) & 1)
    out = []
    for w in range(nc):
        v = 0
        for bit in bits[64 * w : 64 * (w + 1)]:
            v = (v << 1) | bit
        out.append(v)
    return out


def interleave(cols: Sequence[Sequence[int]]) -> List[List[int]]:
    nc = len(cols)
    n = len(cols[0]) if nc else 0
    rows = [interleave_row([cols[c][i] for c in range(nc)]) for i in range(n)]
    return [[rows[i][c] for i in range(n)] for c in range(nc)]


def hilbert_index(point: Sequence[int], bits: int = 63) -> int:
    """The Hilbert index of ``point`` (the low ``bits`` bits of each coordinate), an integer of
    ``bits * len(point)`` bits (Skilling's AxesToTranspose, then the transposed bits read out)."""
    n = len(point)
    x = [int(v) & MASK64 for v in point]
    m = 1 << (bits - 1)
    q = m
    while q > 1:
        p = q - 1
        for i in range(n):
            if x[i] & q:
                x[0] ^= p
            else:
                t = (x[0] ^ x[i]) & p
                x[0] ^= t
                x[i] ^= t
        q >>= 1
    for i in range(1, n):
        x[i] ^= x[i - 1]
    t = 0
    q = m
    while q > 1:
        if x[n - 1] & q:
            t ^= q - 1
        q >>= 1
    x = [v ^ t for v in x]
    idx = 0
    for b in range(bits - 1, -1, -1):
        for i in range(n):
            idx = (idx << 1) | ((x[i] >> b) & 1)
    return idx


def hilbert(cols: Sequence[Sequence[int]]) -> List[List[int]]:
    """As the kernel: per row the index left-aligned in ``len(cols)`` 64-bit words."""
    nd = len(cols)
    n = len(cols[0]) if nd else 0
    out = [[0] * n for _ in range(nd)]
    for i in range(n):
        idx = hilbert_index([cols[d][i] for d in range(nd)])
        idx <<= 64 * nd - 63 * nd
        for w in range(nd):
            out[w][i] = (idx >> (64 * (nd - 1 - w))) & MASK64
    return out


def first_bytes(values, width: int, right: bool, null_word: int) -> List[int]:
    """Each bytes value's first ``width`` bytes as a big-endian word (None: ``null_word``)."""
    out = []
    for v in values:
        if v is None:
            out.append(null_word)
            continue
        b = bytes(v[:width])
        w = int.from_bytes(b, "big") if b else 0
        out.append(w if right else w << (8 * (8 - len(b))) if b else 0)
    return out


def take_bytes(values: Sequence[bytes], idx: Sequence[int]) -> List[bytes]:
    """The values at ``idx`` (repeats allowed), in that order."""
    n = len(values)
    out = []
    for k in idx:
        if not 0 <= k < n:
            raise IndexError(f"position {k} outside {n} values")
        out.append(values[k])
    return out
