"""The old import path of the compressible block codec, now part of the SST layer
(:mod:`paimon_fast.globalindex.sst`): the same names, handed on."""

from .sst import (
    BY_NAME,
    LZ4,
    LZO,
    LZO_LIB_HINT,
    MAX_RATIO,
    MIN_BOUND,
    NAMES,
    NONE,
    TRAILER,
    ZSTD,  # noqa: F401
    BlockEncoder,
    _crc32,  # noqa: F401 (handed on)
    _lz4,  # noqa: F401 (handed on)
    _zstd,  # noqa: F401 (handed on)
    compression_type,
    decode,
    lzo_module,
    trailer,
)

__all__ = [
    "BY_NAME",
    "LZ4",
    "LZO",
    "LZO_LIB_HINT",
    "MAX_RATIO",
    "MIN_BOUND",
    "NAMES",
    "NONE",
    "TRAILER",
    "ZSTD",
    "BlockEncoder",
    "compression_type",
    "decode",
    "lzo_module",
    "trailer",
]
