"""Pure-Python twin of ``_kernels/bloom.pyx``: FastHash and BloomFilter64 add / probe."""

from __future__ import annotations

import xxhash

_M64 = (1 << 64) - 1


def _signed64(x: int) -> int:
    x &= _M64
    return x - (1 << 64) if x >> 63 else x


def _signed32(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x >> 31 else x


def wang_hash(key: int) -> int:
    """Thomas Wang's 64-bit hash with Java's arithmetic right shifts."""
    k = _signed64(key)
    k = _signed64(~k + (k << 21))
    k = _signed64(k ^ (k >> 24))
    k = _signed64(k + (k << 3) + (k << 8))
    k = _signed64(k ^ (k >> 14))
    k = _signed64(k + (k << 2) + (k << 4))
    k = _signed64(k ^ (k >> 28))
    k = _signed64(k + (k << 31))
    return k


def xxh64(data: bytes) -> int:
    return _signed64(xxhash.xxh64_intdigest(data, seed=0))


def bit_positions(h: int, k: int, num_bits: int):
    h1 = _signed32(h)
    h2 = _signed32((h & _M64) >> 32)
    for i in range(1, k + 1):
        c = _signed32(h1 + i * h2)
        if c < 0:
            c = ~c
        yield c % num_bits


def add(bits: bytearray, k: int, hashes) -> None:
    n = len(bits) * 8
    for h in hashes:
        for p in bit_positions(h, k, n):
            bits[p >> 3] |= 1 << (p & 7)


def test(bits, k: int, hashes):
    n = len(bits) * 8
    return [all((bits[p >> 3] >> (p & 7)) & 1 for p in bit_positions(h, k, n)) for h in hashes]


def hash_longs(values):
    return [wang_hash(v) for v in values]


def hash_bytes(values):
    return [xxh64(v) for v in values]
