"""How the native Parquet reader's values become Arrow: the Parquet physical types and the
encodings and codecs it decodes, the compiled reader (loaded once), :class:`Mapping` (a flat
column's output kind, width and conversion), :func:`mapping` and :func:`converted` (which
mapping reads a column, into which Arrow type), the all-null outputs, and the Arrow arrays made
from the reader's buffers.  :mod:`paimon_fast.io.parquet.native` hands these names on."""

from __future__ import annotations

from typing import NamedTuple, Optional

import numpy as np
import pyarrow as pa

# parquet.thrift Type and Encoding
_BOOLEAN, _INT32, _INT64, _INT96, _FLOAT, _DOUBLE, _BYTE_ARRAY, _FLBA = range(8)
# PLAIN, PLAIN_DICTIONARY, RLE, BIT_PACKED (levels), DELTA_BINARY_PACKED (INT32 / INT64),
# DELTA_LENGTH_BYTE_ARRAY, RLE_DICTIONARY
_HANDLED_ENCODINGS = frozenset((0, 2, 3, 4, 5, 6, 8))
_CODECS = {0: "UNCOMPRESSED", 1: "SNAPPY", 2: "GZIP", 3: "LZO", 4: "BROTLI", 5: "LZ4", 6: "ZSTD", 7: "LZ4_RAW"}

_K = None


def _kernel():
    global _K
    if _K is None:
        from ..._kernels import load

        _K = load("pqread")
    return _K


# ---------------------------------------------------------------- how a column's values become Arrow
class Mapping(NamedTuple):
    kind: int  # OUT_FIXED / OUT_BOOL / OUT_BYTES / OUT_LBYTES
    width: int  # bytes a value (fixed)
    conv: int  # the reader's conversion from the physical value


def mapping(physical: int, type_len: int, plain: pa.DataType, typed: pa.DataType) -> Optional[Mapping]:
    """How the native reader makes a flat column's Arrow values: the Parquet physical type, its
    length (FIXED_LEN_BYTE_ARRAY), the Arrow type the Parquet schema alone gives (``plain``) and
    the one pyarrow reads (``typed``: its stored ``ARROW:schema`` applied).  None where the
    values are not the physical values or a conversion the reader knows."""
    K = _kernel()
    t = typed
    if isinstance(t, pa.ExtensionType) or pa.types.is_dictionary(t):
        return None
    if physical == _BOOLEAN:
        return Mapping(K.OUT_BOOL, 1, K.CV_COPY) if pa.types.is_boolean(t) else None
    if physical == _INT32:
        if pa.types.is_decimal(t) and pa.types.is_decimal(plain) and t.bit_width == 128:
            return Mapping(K.OUT_FIXED, 16, K.CV_DEC_I32)
        if not (pa.types.is_integer(plain) or pa.types.is_date32(plain) or pa.types.is_time32(plain)):
            return None
        if pa.types.is_integer(t) and pa.types.is_integer(plain):
            if t.bit_width == 8:
                return Mapping(K.OUT_FIXED, 1, K.CV_I32_1)
            if t.bit_width == 16:
                return Mapping(K.OUT_FIXED, 2, K.CV_I32_2)
            if t.bit_width == 32:
                return Mapping(K.OUT_FIXED, 4, K.CV_COPY)
            if t.bit_width == 64 and plain.bit_width == 32:
                return Mapping(K.OUT_FIXED, 8, K.CV_I32_I64 if pa.types.is_signed_integer(plain) else K.CV_U32_I64)
            return None
        if t == plain and (pa.types.is_date32(t) or pa.types.is_time32(t)):
            return Mapping(K.OUT_FIXED, 4, K.CV_COPY)
        return None
    if physical == _INT64:
        if pa.types.is_decimal(t) and pa.types.is_decimal(plain) and t.bit_width == 128:
            return Mapping(K.OUT_FIXED, 16, K.CV_DEC_I64)
        if pa.types.is_timestamp(t):
            ok = pa.types.is_timestamp(plain) and plain.unit == t.unit
        elif pa.types.is_time64(t):
            ok = pa.types.is_time64(plain) and plain.unit == t.unit
        elif pa.types.is_duration(t):
            ok = pa.types.is_int64(plain)
        elif pa.types.is_integer(t) and t.bit_width == 64:
            ok = pa.types.is_integer(plain) and plain.bit_width == 64
        else:
            ok = False
        return Mapping(K.OUT_FIXED, 8, K.CV_COPY) if ok else None
    if physical == _INT96:
        return Mapping(K.OUT_FIXED, 8, K.CV_INT96_NS) if pa.types.is_timestamp(t) and t.unit == "ns" else None
    if physical == _FLOAT:
        return Mapping(K.OUT_FIXED, 4, K.CV_COPY) if pa.types.is_float32(t) else None
    if physical == _DOUBLE:
        return Mapping(K.OUT_FIXED, 8, K.CV_COPY) if pa.types.is_float64(t) else None
    if physical == _BYTE_ARRAY:
        if not (pa.types.is_string(plain) or pa.types.is_binary(plain) or pa.types.is_large_string(plain)):
            return None
        if pa.types.is_string(t) or pa.types.is_binary(t):
            return Mapping(K.OUT_BYTES, 0, K.CV_COPY)
        if pa.types.is_large_string(t) or pa.types.is_large_binary(t):
            return Mapping(K.OUT_LBYTES, 0, K.CV_COPY)
        return None
    if physical == _FLBA and type_len > 0:
        if pa.types.is_fixed_size_binary(t) and t.byte_width == type_len and not pa.types.is_decimal(t):
            return Mapping(K.OUT_FIXED, type_len, K.CV_COPY)
        if pa.types.is_float16(t) and type_len == 2:
            return Mapping(K.OUT_FIXED, 2, K.CV_COPY)
        if pa.types.is_decimal(t) and pa.types.is_decimal(plain):
            width = t.bit_width // 8
            if t.bit_width in (128, 256) and type_len <= width:
                return Mapping(K.OUT_FIXED, width, K.CV_DEC_BE)
        return None
    return None


def converted(m: Mapping, have: pa.DataType, want: pa.DataType) -> Optional[Mapping]:
    """The mapping that reads a column pyarrow would read as ``have`` into ``want`` (a dataset's
    type for it), where the reader converts on its own; None otherwise."""
    K = _kernel()
    if have == want:
        return m
    if m.conv == K.CV_COPY and m.kind == K.OUT_FIXED:
        if pa.types.is_int32(have) and pa.types.is_int64(want):
            return Mapping(K.OUT_FIXED, 8, K.CV_I32_I64)
        if pa.types.is_uint32(have) and pa.types.is_int64(want):
            return Mapping(K.OUT_FIXED, 8, K.CV_U32_I64)
        if pa.types.is_float32(have) and pa.types.is_float64(want):
            return Mapping(K.OUT_FIXED, 8, K.CV_F32_F64)
        if pa.types.is_timestamp(have) and pa.types.is_timestamp(want) and have.unit == want.unit:
            return m  # the zone is the type's, not the values'
    if m.kind in (K.OUT_BYTES, K.OUT_LBYTES):
        same = (pa.types.is_string(have) or pa.types.is_large_string(have)) == (
            pa.types.is_string(want) or pa.types.is_large_string(want)
        )
        if same and (pa.types.is_large_string(want) or pa.types.is_large_binary(want)):
            return Mapping(K.OUT_LBYTES, 0, K.CV_COPY)
        if same and (pa.types.is_string(want) or pa.types.is_binary(want)):
            return Mapping(K.OUT_BYTES, 0, K.CV_COPY)
    return None


def _null_mapping(t: pa.DataType) -> Optional[Mapping]:
    """An output that holds only nulls of type ``t`` (a column some files lack)."""
    K = _kernel()
    if pa.types.is_boolean(t):
        return Mapping(K.OUT_BOOL, 1, K.CV_NULL)
    if pa.types.is_string(t) or pa.types.is_binary(t):
        return Mapping(K.OUT_BYTES, 0, K.CV_NULL)
    if pa.types.is_large_string(t) or pa.types.is_large_binary(t):
        return Mapping(K.OUT_LBYTES, 0, K.CV_NULL)
    if isinstance(t, pa.ExtensionType) or pa.types.is_dictionary(t) or pa.types.is_nested(t):
        return None
    try:
        w = t.bit_width
    except ValueError:
        return None
    if w % 8 or w <= 0:
        return None
    return Mapping(K.OUT_FIXED, w // 8, K.CV_NULL)


def _fits(K, kind: int, width: int, t: pa.DataType) -> bool:
    """Whether buffers of this kind are an Arrow array of type ``t`` (checked before
    ``from_buffers``, which aborts the process on a mismatch)."""
    if isinstance(t, pa.ExtensionType) or pa.types.is_dictionary(t) or pa.types.is_nested(t):
        return False
    if kind == K.OUT_BOOL:
        return pa.types.is_boolean(t)
    if kind == K.OUT_BYTES:
        return pa.types.is_string(t) or pa.types.is_binary(t)
    if kind == K.OUT_LBYTES:
        return pa.types.is_large_string(t) or pa.types.is_large_binary(t)
    if pa.types.is_boolean(t) or pa.types.is_string(t) or pa.types.is_binary(t):
        return False
    if pa.types.is_large_string(t) or pa.types.is_large_binary(t) or pa.types.is_null(t):
        return False
    try:
        return t.bit_width == 8 * width
    except ValueError:
        return False


_FITS: dict = {}  # (kind, width, type id, byte width of a fixed-size binary) -> _fits of them
_FIXED_SIZE_BINARY = pa.binary(1).id


def _fits_key(kind: int, width: int, t: pa.DataType) -> tuple:
    """What :func:`_fits` depends on, cheaply: a type's id decides it but for a fixed-size binary,
    whose width is its own (a schema hands out a new type object every read, and hashing one costs
    more than the check: 1.3 against 0.1 us)."""
    tid = t.id
    return (kind, width, tid, t.byte_width if tid == _FIXED_SIZE_BINARY else 0)


def _arrow(K, col, data, t: pa.DataType, nulls: Optional[int] = None) -> pa.Array:
    """The Arrow array of a column the reader decoded (``col``: its output buffers, ``data``: its
    byte arrays' bytes); ``nulls``: its null count as the reader counted it (None: counted here
    from the validity bytes)."""
    kind, width, n, values, valid, offsets = col
    key = _fits_key(kind, width, t)  # (the kernels and their twin share the constants _fits compares)
    got = _FITS.get(key)
    if got is None:
        if len(_FITS) >= 1024:  # (fixed-size binaries of many widths)
            _FITS.clear()
        got = _FITS[key] = _fits(K, kind, width, t)
    if not got:
        raise AssertionError(f"native reader: output of kind {kind} / width {width} is not an Arrow {t}")
    vbuf = None
    if valid is None:
        nulls = 0
    else:
        if nulls is None:
            nulls = n - int(np.count_nonzero(valid))
        if nulls:
            vbuf = pa.py_buffer(np.packbits(valid, bitorder="little"))
    if kind == K.OUT_FIXED:
        return pa.Array.from_buffers(t, n, [vbuf, pa.py_buffer(values)], null_count=nulls)
    if kind == K.OUT_BOOL:
        return pa.Array.from_buffers(
            t, n, [vbuf, pa.py_buffer(np.packbits(values, bitorder="little"))], null_count=nulls
        )
    dbuf = pa.py_buffer(data) if data is not None else pa.py_buffer(b"")
    return pa.Array.from_buffers(t, n, [vbuf, pa.py_buffer(offsets), dbuf], null_count=nulls)
