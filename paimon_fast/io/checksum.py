"""Checksums of the files a table's metadata names, checked on the bytes a reader reads anyway.

* **Index files read in ranges** (file index containers, global index files): the file is cut into
  blocks of equal size (16 KiB, doubled until there are at most 64 blocks) and a 32-bit checksum of
  each block (the low half of its XXH3-64: about 10 GB/s, five times zlib's CRC-32) is recorded
  beside the file's size (:func:`block_checksums`: ``{"xxh3": "<base64 of big-endian uint32s>",
  "block": 16384}``).  :class:`ChecksummedSource` reads whole blocks, checks each one it touches
  (once) and hands the ranges asked for on, so a reader that reads a container's header and one
  index body checks those blocks only.
* **Files read whole** (deletion files): the same checksum of the whole file (:func:`digest32`).
* **Commit objects** (a dataset's catalog, a global index listing, a Hudi sidecar manifest): JSON
  whose last member is ``"checksum": "xxh3:<8 hex digits>"``, the checksum of the file's bytes
  before that member (:func:`seal_json`, :func:`open_json`).

A mismatch raises :class:`ChecksumMismatchError` (an :class:`~paimon_fast.errors.IndexFormatError`)
naming the file and where; a damaged commit object :class:`~paimon_fast.errors.DamagedFileError`.
"""

from __future__ import annotations

import base64
import json
import struct
import threading
import zlib
from typing import Mapping, Optional, Tuple

from ..errors import DamagedFileError, IndexFormatError
from .source import FileSource, Source

MIN_BLOCK = 16384
MAX_BLOCKS = 64
_SEAL = b',\n "checksum": "'
_SEAL_COMPACT = b',"checksum":"'


class ChecksumMismatchError(IndexFormatError):
    """Bytes read from an index file do not have the checksum its catalog recorded."""


def _xxh3(data) -> int:
    import xxhash

    return xxhash.xxh3_64_intdigest(data) & 0xFFFFFFFF


def digest32(data) -> int:
    """The 32-bit checksum of a whole file (the low half of its XXH3-64): bytes or
    :class:`paimon_fast.io.fsutil.Chunks`."""
    return _xxh3(bytes(data) if hasattr(data, "parts") else data)


def crc32(data) -> int:
    """CRC-32 (zlib's) of bytes or of :class:`paimon_fast.io.fsutil.Chunks`."""
    parts = getattr(data, "parts", None)
    if parts is None:
        return zlib.crc32(data) & 0xFFFFFFFF
    c = 0
    for p in parts:
        c = zlib.crc32(p, c)
    return c & 0xFFFFFFFF


def block_size_for(size: int) -> int:
    b = MIN_BLOCK
    while size > b * MAX_BLOCKS:
        b *= 2
    return b


def block_checksums(data) -> dict:
    """The per-block CRC-32s of ``data`` (bytes or :class:`~paimon_fast.io.fsutil.Chunks`) to record
    beside the file (see the module docstring)."""
    mv = memoryview(bytes(data) if hasattr(data, "parts") else data).cast("B")
    b = block_size_for(len(mv))
    sums = [_xxh3(mv[i : i + b]) for i in range(0, len(mv), b)]
    return {"xxh3": base64.b64encode(struct.pack(f">{len(sums)}I", *sums)).decode("ascii"), "block": b}


def _parse(spec: Mapping, size: int, what: str) -> Tuple[int, Tuple[int, ...]]:
    try:
        key = (spec["xxh3"], spec["block"], size)
        got = _PARSED.get(key)
    except (KeyError, TypeError):
        key = got = None
    if got is not None:
        return got
    got = _parse_now(spec, size, what)
    if key is not None:
        if len(_PARSED) >= 4096:
            _PARSED.clear()
        _PARSED[key] = got
    return got


# recorded checksums -> their parse: a plan opens the same index files query after query
_PARSED: dict = {}


def _parse_now(spec: Mapping, size: int, what: str) -> Tuple[int, Tuple[int, ...]]:
    try:
        b = int(spec["block"])
        raw = base64.b64decode(spec["xxh3"], validate=True)
        crcs = struct.unpack(f">{len(raw) // 4}I", raw)
    except (KeyError, TypeError, ValueError, struct.error) as e:
        raise ChecksumMismatchError(f"{what}: the recorded checksum is unreadable ({e})") from None
    if b <= 0 or len(raw) % 4 or len(crcs) != (size + b - 1) // b:
        raise ChecksumMismatchError(f"{what}: the recorded checksum does not fit a {size}-byte file")
    return b, crcs


class ChecksummedSource(Source):
    """A :class:`~paimon_fast.io.source.Source` whose reads are checked against recorded block
    checksums (:func:`block_checksums`): each block a read touches is read whole and checked once;
    a mismatch raises :class:`ChecksumMismatchError`.  ``size`` (recorded with the checksums) must
    be the file's size."""

    def __init__(self, inner: Source, spec: Mapping, size: int, what: str = "index file"):
        self.inner = inner
        self.what = what
        if inner.size != size:
            raise ChecksumMismatchError(f"{what}: {inner.size} bytes, the catalog recorded {size}")
        self.size = size
        self.block, self.crcs = _parse(spec, size, what)
        self._blocks = {}  # block number -> its verified bytes
        self._held = 0
        self._lock = threading.Lock()

    def _own(self, data):
        """Bytes read, as this source keeps them once checked: a copy unless nothing else can
        write them (bytes; a local file's read into memory of its own)."""
        if isinstance(data, bytes) or isinstance(self.inner, FileSource):
            return data
        return bytes(data)

    def _block(self, n: int):
        got = self._blocks.get(n)
        if got is not None:
            return got
        lo = n * self.block
        data = self._own(self.inner.read_at(lo, min(self.block, self.size - lo), self.what))
        if _xxh3(data) != self.crcs[n]:
            raise ChecksumMismatchError(
                f"{self.what}: checksum mismatch in bytes [{lo}, {lo + len(data)}) (the file is damaged or "
                "not the one the catalog names)",
                lo,
            )
        with self._lock:
            if self._held + len(data) > (64 << 20):  # a bound on what one open index keeps
                self._blocks.clear()
                self._held = 0
            self._blocks[n] = data
            self._held += len(data)
        return data

    def _read(self, offset, length):
        if length == 0:
            return b""
        first, last = offset // self.block, (offset + length - 1) // self.block
        if first == last:
            lo = first * self.block
            return memoryview(self._block(first))[offset - lo : offset - lo + length]
        # several blocks: read in one request and checked in place, block by block (no copies)
        lo = first * self.block
        hi = min((last + 1) * self.block, self.size)
        data = memoryview(self._own(self.inner.read_at(lo, hi - lo, self.what)))
        for n in range(first, last + 1):
            a = (n - first) * self.block
            piece = data[a : min(a + self.block, hi - lo)]
            if n not in self._blocks and _xxh3(piece) != self.crcs[n]:
                raise ChecksumMismatchError(
                    f"{self.what}: checksum mismatch in bytes [{lo + a}, {lo + a + len(piece)}) (the file is "
                    "damaged or not the one the catalog names)",
                    lo + a,
                )
        return data[offset - lo : offset - lo + length]

    def close(self):
        self._blocks.clear()
        self.inner.close()


def verify_whole(data, expected: Optional[int], what: str) -> None:
    """Check a file read whole against its recorded :func:`digest32` (None: nothing recorded)."""
    if expected is not None and digest32(data) != int(expected):
        raise ChecksumMismatchError(f"{what}: checksum mismatch (the file is damaged or not the one the catalog names)")


def seal_json(obj: Mapping, compact: bool = False) -> bytes:
    """``obj`` as JSON (indented, or ``compact``) whose last member is its checksum (see the module
    docstring)."""
    rest = {k: v for k, v in obj.items() if k != "checksum"} or {"empty": True}
    if compact:
        head = json.dumps(rest, separators=(",", ":")).encode("utf-8")[:-1]
        return head + _SEAL_COMPACT + b"xxh3:%08x" % _xxh3(head) + b'"}'
    head = json.dumps(rest, indent=1).encode("utf-8")[:-2]
    return head + _SEAL + b"xxh3:%08x" % _xxh3(head) + b'"\n}\n'


def open_json(data, what: str, required: bool = False) -> Tuple[dict, bool]:
    """``(object, sealed)`` of a commit object's bytes: :class:`DamagedFileError` naming ``what``
    when it is not JSON, not an object, or its checksum does not match; ``required``: a missing
    checksum is damage too."""
    raw = bytes(data)
    try:
        obj = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise DamagedFileError(f"{what} is damaged: not valid JSON ({e})") from None
    if not isinstance(obj, dict):
        raise DamagedFileError(f"{what} is damaged: not a JSON object")
    cs = obj.get("checksum")
    if cs is None:
        if required:
            raise DamagedFileError(f"{what} is damaged: its checksum is missing")
        return obj, False
    i = max(raw.rfind(_SEAL), raw.rfind(_SEAL_COMPACT))
    if i < 0 or cs != "xxh3:%08x" % _xxh3(raw[:i]):
        raise DamagedFileError(f"{what} is damaged: checksum mismatch")
    del obj["checksum"]
    return obj, True
