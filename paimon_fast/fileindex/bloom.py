"""Bloom filter file index (``bloom-filter``), byte-compatible with Paimon's
``BloomFilterFileIndex`` / ``BloomFilter64`` / ``FastHash``.

Payload: ``i32 BE numHashFunctions`` + the bit set bytes (bit i = bit i&7 of
byte i>>3).  Sizing from options ``items`` (default 1,000,000) and ``fpp``
(default 0.1): ``nb = (int)(-items*ln(fpp)/ln(2)^2)``, ``numBits = nb + 8 -
nb % 8``, ``k = max(1, round(numBits/items*ln 2))``.  Hashes: Thomas Wang's
64-bit mix for integer-like values (timestamps as millis when precision <= 3,
else micros; FLOAT/DOUBLE by their canonical IEEE bits), XXH64 seed 0 for
string and binary bytes.  BOOLEAN and DECIMAL are not supported (as in Java).

Answers: ``=`` and ``IN`` probe the filter; every other predicate REMAINs.
"""

from __future__ import annotations

import math
import struct

import numpy as np

from .._kernels import load as _load
from ..errors import IndexFormatError, OptionError, UnsupportedTypeError
from ..core.result import REMAIN, SKIP
from ..core.types import DataType, binary_buffers, float_bits, long_keys, to_arrow_array, validity_mask
from .base import FileIndexReader, FileIndexWriter
from .registry import IndexFactory, register

_k = _load("bloom")

INDEX_TYPE = "bloom-filter"
DEFAULT_ITEMS = 1_000_000
DEFAULT_FPP = 0.1
# Probing costs k bit tests per value: refuse absurd counts read from a file
# (Java's sizing formula gives k <= ~1100 even for items=1 and fpp=Double.MIN_VALUE).
MAX_HASH_FUNCTIONS = 4096


def bloom_sizing(items: int, fpp: float):
    """``(num_bits, num_hash_functions)`` exactly as Java's BloomFilter64 constructor."""
    if items <= 0:
        raise OptionError(f"bloom-filter items must be > 0, got {items}")
    if not 0.0 < fpp < 1.0:
        raise OptionError(f"bloom-filter fpp must be in (0, 1), got {fpp}")
    nb = int(-items * math.log(fpp) / (math.log(2) * math.log(2)))  # Java (int): truncation
    nb = max(min(nb, 2**31 - 1), -(2**31))
    num_bits = nb + (8 - _java_rem(nb, 8))
    if num_bits <= 0 or num_bits >= 2**31:
        raise OptionError(f"bloom-filter with items={items}, fpp={fpp} needs {num_bits} bits: out of range")
    k = max(1, math.floor(num_bits / items * math.log(2) + 0.5))
    return num_bits, k


def _java_rem(a: int, b: int) -> int:
    r = abs(a) % b
    return r if a >= 0 else -r


def _check_type(dtype: DataType):
    if dtype.root == "BOOLEAN":
        raise UnsupportedTypeError("bloom-filter does not support type BOOLEAN (as Java Paimon)")
    if dtype.root == "DECIMAL":
        raise UnsupportedTypeError("bloom-filter does not support DECIMAL (as Java Paimon)")


def kernel_input(values, dtype: DataType):
    """Column -> ``("long", keys, valid)`` or ``("bin", offsets, data, valid)`` for the kernels."""
    arr = to_arrow_array(values, dtype)
    mask = validity_mask(arr)
    valid = None if mask is None else mask.view(np.uint8)
    if dtype.is_var_width:
        off, data = binary_buffers(arr)
        return ("bin", off, data, valid)
    if dtype.root in ("FLOAT", "DOUBLE"):
        return ("long", float_bits(arr), valid)
    return ("long", np.ascontiguousarray(long_keys(arr, dtype)), valid)


_PROBE_CACHE: dict = {}
_PROBE_CACHE_MAX = 256


def _probe_input(values, dtype: DataType):
    """:func:`kernel_input` of a few probe literals, memoised: a scan probes the
    same literals in every file's filter (the arrays are never written to)."""
    if not isinstance(values, (list, tuple)) or len(values) > 64:
        return kernel_input(values, dtype)
    try:
        # floats by their bits: -0.0 == 0.0 in Python, but Java hashes them differently
        key = (str(dtype), tuple((float, v.hex()) if isinstance(v, float) else (type(v), v) for v in values))
        got = _PROBE_CACHE.get(key)
    except TypeError:  # unhashable literal
        return kernel_input(values, dtype)
    if got is None:
        got = kernel_input(values, dtype)
        if len(_PROBE_CACHE) >= _PROBE_CACHE_MAX:
            _PROBE_CACHE.clear()
        _PROBE_CACHE[key] = got
    return got


def hash_values(values, dtype) -> np.ndarray:
    """Paimon ``FastHash`` of each value (int64; null rows hold the hash of junk)."""
    dtype = DataType.parse(dtype)
    _check_type(dtype)
    inp = kernel_input(values, dtype)
    if inp[0] == "bin":
        return _k.xxh64_hash(inp[1], inp[2])
    return _k.wang_hash(inp[1])


class BloomFilterWriter(FileIndexWriter):
    """Adds every non-null value of the batches to a BloomFilter64."""

    index_type = INDEX_TYPE

    def __init__(self, dtype, options):
        super().__init__(dtype, options)
        items = options.get_int("items", DEFAULT_ITEMS)
        fpp = options.get_float("fpp", DEFAULT_FPP)
        self.num_bits, self.num_hash_functions = bloom_sizing(items, fpp)
        # the kernels set bits through 32-bit words: padded to whole words, they need no
        # test for a partly held last word; the filter is the first num_bits // 8 bytes
        nbytes = self.num_bits // 8
        self._words = np.zeros(-(-nbytes // 4) * 4, dtype=np.uint8)
        self.bits = self._words[:nbytes]

    def write_batch(self, values):
        inp = kernel_input(values, self.dtype)
        if inp[0] == "bin":
            n = len(inp[1]) - 1
            _k.add_binary(self._words, self.num_hash_functions, inp[1], inp[2], inp[3], self.num_bits)
        else:
            n = len(inp[1])
            _k.add_longs(self._words, self.num_hash_functions, inp[1], inp[2], self.num_bits)
        self.row_count += n

    def add_hashes(self, hashes):
        """Add precomputed FastHash values (int64 array)."""
        _k.add_hashes(self._words, self.num_hash_functions, np.ascontiguousarray(hashes, dtype=np.int64), self.num_bits)

    def finish(self) -> bytes:
        return struct.pack(">i", self.num_hash_functions) + self.bits.tobytes()


class BloomFilterReader(FileIndexReader):
    """Probes a serialized BloomFilter64; reads the payload once, on first use.

    The bytes do not record the column type (nor can Java tell it): ``dtype`` must
    be the type the filter was written for.  Read as another type, the filter
    answers for that type's hashes without any error: integer types share the hash
    of the value as a long (INT and BIGINT answer alike), but a STRING filter read
    as INT, or a DOUBLE one as BIGINT, skips files holding the value.  The table
    layers pass the type recorded with the index (a Paimon data file's schema, the
    dataset catalog's build types, which refuse a column whose type changed).
    """

    index_type = INDEX_TYPE

    def __init__(self, dtype, source, options):
        super().__init__(dtype, source, options)
        if source.size < 4:
            raise IndexFormatError(
                f"bloom filter payload of {source.size} bytes is shorter than its 4-byte header",
                getattr(source, "base", 0),
            )
        if source.size == 4:
            raise IndexFormatError("bloom filter payload has no bit set", getattr(source, "base", 0))
        if (source.size - 4) * 8 >= 2**31:
            raise IndexFormatError(
                f"bloom filter bit set of {source.size - 4} bytes exceeds Java's int range", getattr(source, "base", 0)
            )
        head = bytes(source.read_at(0, 4, "bloom filter header"))
        # Java rebuilds the int by adding *signed* bytes; do the same so answers agree.
        k = 0
        for b in head:
            k = ((k << 8) + (b - 256 if b >= 128 else b)) & 0xFFFFFFFF
        k = k - (1 << 32) if k >= 1 << 31 else k
        if not 1 <= k <= MAX_HASH_FUNCTIONS:
            raise IndexFormatError(
                f"bloom filter number of hash functions {k} out of range [1, {MAX_HASH_FUNCTIONS}]",
                getattr(source, "base", 0),
            )
        self.num_hash_functions = k
        self.num_bits = (source.size - 4) * 8
        self._bits = None

    @property
    def bits(self) -> np.ndarray:
        if self._bits is None:
            self._bits = np.frombuffer(
                self.source.read_at(4, self.source.size - 4, "bloom filter bits"), dtype=np.uint8
            )
        return self._bits

    @property
    def bits_loaded(self) -> bool:
        """Have the filter's bits been read (and, through a checksummed source, checked)?"""
        return self._bits is not None

    def might_contain_batch(self, values) -> np.ndarray:
        """Bool mask: may each probe value be in the file? (null probes: True, as ``equal(null)`` REMAINs)."""
        inp = _probe_input(values, self.dtype)
        if inp[0] == "bin":
            return _k.test_binary(self.bits, self.num_hash_functions, inp[1], inp[2], inp[3])
        return _k.test_longs(self.bits, self.num_hash_functions, inp[1], inp[2])

    def might_contain(self, value) -> bool:
        return bool(self.might_contain_batch([value])[0])

    def might_contain_hashes(self, hashes) -> np.ndarray:
        return _k.test_hashes(self.bits, self.num_hash_functions, np.ascontiguousarray(hashes, dtype=np.int64))

    def visit_equal(self, leaf):
        if leaf.literal is None:
            return REMAIN
        return REMAIN if self.might_contain(leaf.literal) else SKIP

    def visit_in(self, leaf):
        lits = list(leaf.literals)
        if not lits or any(v is None for v in lits):
            return REMAIN if lits else SKIP
        return REMAIN if self.might_contain_batch(lits).any() else SKIP

    def describe(self):
        d = super().describe()
        bits = self.bits
        set_bits = int(np.unpackbits(bits).sum())
        d.update(
            num_bits=self.num_bits,
            num_hash_functions=self.num_hash_functions,
            bits_set=set_bits,
            fill_ratio=round(set_bits / self.num_bits, 6),
        )
        return d


@register
class BloomFilterFactory(IndexFactory):
    name = INDEX_TYPE
    writer_class = BloomFilterWriter
    reader_class = BloomFilterReader

    def check_type(self, dtype):
        _check_type(dtype)
