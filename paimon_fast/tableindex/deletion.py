"""Paimon deletion vectors and deletion (index) files, byte for byte like Java.

* 32-bit ``BitmapDeletionVector`` (default): bin = big-endian magic 1581511376
  + run-optimised portable 32-bit roaring bitmap; positions 0 .. 2^31-1.
* 64-bit ``Bitmap64DeletionVector`` (``deletion-vectors.bitmap64``): bin =
  little-endian magic 1681511377 + the dense OptimizedRoaringBitmap64 layout
  (u64 LE count, then for every key 0..count-1 a u32 LE key and a 32-bit
  bitmap, empty ones included).  Positions 0 .. Java's ``MAX_VALUE``
  ``(2^31-2) << 32 | 2^31``.  Its blob (BE size, bin, BE CRC-32) is Iceberg's
  ``deletion-vector-v1`` Puffin blob.
* Deletion file: one version byte (1), then per data file ``i32 BE size, bin,
  i32 BE CRC-32(bin)``.  Index metadata records ``(data file, offset of the size
  field, length, cardinality)`` where length is the bin size for 32-bit and
  size + 8 (the whole blob) for 64-bit vectors.

Vectors are immutable.  In memory a vector is a bit set when it is dense
enough (then serializing is mostly memcpy and probing is one bit test) and a
sorted unique position array otherwise; both give the same bytes.

This module holds the deletion files; the vectors and applying them to Arrow data are in
:mod:`.vectors`, whose names are handed on here at their old path.
"""

from __future__ import annotations

import os
import struct
import uuid
from typing import NamedTuple

from ..io.fsutil import write_atomic
from ..errors import IndexFormatError
from ..io.source import as_source
from .vectors import (  # noqa: F401  (handed on at their old path)
    _CHUNK_BITS,
    _CHUNK_WORDS,
    _EMPTY32,
    _EMPTY_RECORD,
    _MAGIC32_BE,
    _MAX_JAVA_ARRAY,
    _RUN_MIN,
    MAGIC32,
    MAGIC64,
    MAX_POSITION_32,
    MAX_POSITION_64,
    Bitmap64DeletionVector,
    BitmapDeletionVector,
    DeletionVector,
    _as_positions,
    _dense_ok,
    _empty_run,
    _k,
    _alloc,
    _filter_array,
    _fixed_width,
    apply_deletion_vector,
    filter_batches,
)

VERSION = 1
DEFAULT_TARGET_SIZE = 2 * 1024 * 1024  # deletion-vector.index-file.target-size


# ---------------------------------------------------------------- deletion files


class DeletionFileEntry(NamedTuple):
    """One vector of a deletion file as Paimon's index metadata records it."""

    data_file: str | None
    offset: int
    length: int
    cardinality: int
    vector: DeletionVector


def _items(vectors):
    if isinstance(vectors, dict):
        return list(vectors.items())
    return list(vectors)


def serialize_deletion_files(vectors, target_size: int | None = None):
    """In-memory deletion files: ``[(bytes, [(data_file, offset, length, cardinality)])]``.

    Rolls to a new file after a blob makes the file larger than ``target_size``
    (default 2 MiB, ``deletion-vector.index-file.target-size``), as Java's
    ``DeletionVectorIndexFileWriter`` does; no input gives one file holding only
    the version byte (Java 0.9 ``writeSingleFile`` / empty input).
    """
    target = DEFAULT_TARGET_SIZE if target_size is None else int(target_size)
    items = _items(vectors)
    files = []
    buf = [bytes([VERSION])]
    pos = 1
    metas = []
    for i, (name, dv) in enumerate(items):
        if not isinstance(dv, DeletionVector):
            raise TypeError(f"vector of {name!r} is not a DeletionVector")
        blob = dv.to_blob()
        length = len(blob) if dv.bitmap64 else len(blob) - 8
        metas.append((name, pos, length, dv.cardinality))
        buf.append(blob)
        pos += len(blob)
        if pos > target and i + 1 < len(items):
            files.append((b"".join(buf), metas))
            buf, pos, metas = [bytes([VERSION])], 1, []
    files.append((b"".join(buf), metas))
    return files


def write_deletion_files(out_dir, vectors, target_size: int | None = None, prefix: str = "index-"):
    """Write deletion files into ``out_dir`` (temporary name + atomic rename).

    ``vectors``: ``[(data_file, DeletionVector), ...]`` or a dict, in write order.
    Returns ``[(file_name, [(data_file, offset, length, cardinality), ...]), ...]``
    exactly as Paimon's ``IndexFileMeta`` deletion-vector ranges record them.
    File names are ``<prefix><uuid>-<n>`` like Paimon's index path factory.
    """
    os.makedirs(out_dir, exist_ok=True)
    stem = f"{prefix}{uuid.uuid4()}-"
    out = []
    for n, (data, metas) in enumerate(serialize_deletion_files(vectors, target_size)):
        name = f"{stem}{n}"
        write_atomic(os.path.join(out_dir, name), data)
        out.append((name, metas))
    return out


def _check_version(src):
    if src.size < 1:
        raise IndexFormatError("deletion file is empty (no version byte)", 0)
    v = bytes(src.read_at(0, 1, "version byte"))[0]
    if v != VERSION:
        raise IndexFormatError(f"deletion file version {v}, expected {VERSION}", 0)


def read_deletion_vector(path_or_bytes, offset: int, length: int, data_file: str | None = None) -> DeletionVector:
    """One vector of a deletion file, located by its index metadata ``(offset, length)``.

    Checks the version byte, the size field against ``length`` (bin size for
    32-bit, size + 8 for 64-bit, as Java) and the CRC; errors name the data file.
    """
    src = as_source(path_or_bytes)
    who = f" of data file {data_file!r}" if data_file is not None else ""
    _check_version(src)
    head = bytes(src.read_at(offset, 8, f"deletion vector{who} header"))
    size, magic_be = struct.unpack(">ii", head)
    magic_le = struct.unpack("<i", head[4:])[0]
    if magic_be == MAGIC32:
        expected = length
    elif magic_le == MAGIC64:
        expected = length - 8
    else:
        raise IndexFormatError(f"deletion vector{who}: invalid magic {magic_be}", offset + 4)
    if size != expected:
        raise IndexFormatError(
            f"deletion vector{who}: size {size} does not match the recorded length {length} (expected size {expected})",
            offset,
        )
    if size < 4 or offset + 8 + size > src.size:
        raise IndexFormatError(
            f"deletion vector{who}: size {size} runs past the end of the {src.size}-byte file", offset
        )
    blob = src.read_at(offset, size + 8, f"deletion vector{who}")
    return DeletionVector.from_blob(blob, offset, data_file)


def read_deletion_file(path_or_bytes, metas=None) -> list[DeletionFileEntry]:
    """Every vector of a deletion file in file order.

    Without ``metas`` the file is walked blob by blob (``data_file`` is None);
    with ``metas = [(data_file, offset, length[, cardinality]), ...]`` those
    ranges are read and checked (cardinality too, when given).
    """
    src = as_source(path_or_bytes)
    _check_version(src)
    out = []
    if metas is not None:
        for m in metas:
            name, off, length = m[0], int(m[1]), int(m[2])
            dv = read_deletion_vector(src, off, length, name)
            if len(m) > 3 and m[3] is not None and int(m[3]) != dv.cardinality:
                raise IndexFormatError(
                    f"deletion vector of data file {name!r}: cardinality {dv.cardinality}, index metadata says {m[3]}",
                    off,
                )
            out.append(DeletionFileEntry(name, off, length, dv.cardinality, dv))
        return out
    p = 1
    while p < src.size:
        if src.size - p < 8:
            raise IndexFormatError("deletion file truncated (blob header)", p)
        (size,) = struct.unpack(">i", bytes(src.read_at(p, 4)))
        if size < 4 or size > src.size - p - 8:
            raise IndexFormatError(f"deletion file: blob size {size} does not fit in the file", p)
        blob = src.read_at(p, size + 8, "deletion vector")
        dv = DeletionVector.from_blob(blob, p, f"#{len(out)}")
        length = size + 8 if dv.bitmap64 else size
        out.append(DeletionFileEntry(None, p, length, dv.cardinality, dv))
        p += size + 8
    return out
