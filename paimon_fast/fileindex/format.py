"""Paimon's file index container (``FileIndexFormat``), big-endian:

    i64 magic 1493475289347502 | i32 version 1 | i32 head length (absolute body start)
    i32 column count
      per column: UTF name | i32 index count
        per index: UTF index type | i32 start (absolute; -1 = empty index) | i32 length
    i32 redundant length (0)
    body: index payloads in write order

Opening parses only the header; an index's bytes are read when a predicate
needs them, from memory or from the file at their offset.
"""

from __future__ import annotations

import re
import struct
from typing import Dict, List, Mapping, Optional, Tuple

from ..errors import IndexFormatError, UnsupportedTypeError
from ..core.predicate import Leaf, Predicate
from ..core.result import REMAIN, BitmapResult, FileIndexResult
from ..io.serde import BoundedReader, write_utf
from ..io.source import Source, as_source
from ..core.types import DataType
from .base import EmptyFileIndexReader, evaluate_tree
from .options import Options
from .registry import get_factory

MAGIC = 1493475289347502
VERSION_1 = 1
EMPTY_INDEX_FLAG = -1
# A header cannot be larger than the file; this also bounds column/index counts.
_MIN_COLUMN_BYTES = 2 + 4
_MIN_INDEX_BYTES = 2 + 4 + 4


class FileIndexFormat:
    """Writer (:meth:`write`) and reader (:meth:`open`) of the container."""

    MAGIC = MAGIC

    @staticmethod
    def write(indexes: Mapping[str, Mapping[str, Optional[bytes]]]) -> bytes:
        """Serialize ``{column: {index_type: payload bytes or None (empty index)}}``.

        Column and index order is the mapping's order (Paimon uses insertion order).
        """
        head = bytearray()
        body = bytearray()
        entries = []
        for col, idx in indexes.items():
            entries.append((col, list(idx.items())))
        # head length must be known before starts can be written: compute it first
        head_len = 8 + 4 + 4 + 4 + 4
        for col, items in entries:
            head_len += len(write_utf(col)) + 4
            for itype, _ in items:
                head_len += len(write_utf(itype)) + 8
        head += struct.pack(">qii", MAGIC, VERSION_1, head_len)
        head += struct.pack(">i", len(entries))
        for col, items in entries:
            head += write_utf(col)
            head += struct.pack(">i", len(items))
            for itype, payload in items:
                head += write_utf(itype)
                if payload is None:
                    head += struct.pack(">ii", EMPTY_INDEX_FLAG, 0)
                else:
                    payload = bytes(payload)
                    head += struct.pack(">ii", head_len + len(body), len(payload))
                    body += payload
        head += struct.pack(">i", 0)
        assert len(head) == head_len
        return bytes(head + body)

    @staticmethod
    def open(data, row_type: Mapping[str, object] | None = None, options: Mapping | None = None) -> "FileIndexFile":
        """Open a container from bytes, a path or a binary file; parses the header only.

        ``row_type`` maps column names to Paimon types (strings or DataType);
        ``options`` are per-index-type reader options (``{index_type: {...}}``).
        """
        return FileIndexFile(as_source(data), row_type or {}, options or {})


_MAP_RE = re.compile(r"^\s*MAP\s*<(.*)>\s*$", re.IGNORECASE)


def _map_value_type(text: str) -> str:
    """``MAP<K, V>`` -> ``V`` (split at the top-level comma)."""
    inner = _MAP_RE.match(text).group(1)
    depth = 0
    for i, ch in enumerate(inner):
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        elif ch == "," and depth == 0:
            return inner[i + 1 :].strip()
    raise UnsupportedTypeError(f"cannot parse map type {text!r}")


class HeldReaders:
    """Index readers kept between openings of containers whose bytes cannot change under their
    key (the caller's: a path, a size and the checksums the bytes are verified against).

    A held reader keeps what it decoded (dictionaries, slices, the bitmaps it located), so the
    next plan of the same file reads and decodes none of that again; what it has not read yet it
    reads through its container's source, which must stay readable after the container is
    closed (:class:`~paimon_fast.io.source.ReopeningSource`).  Indexes whose payload is over
    ``max_payload`` bytes are not held; the oldest go first once the held payloads' sizes pass
    ``max_bytes``.  Shared by threads: a reader's lazy loads only ever set fields that a second
    load would set to equal values."""

    def __init__(self, max_bytes: int = 256 << 20, max_payload: int = 4 << 20):
        import threading
        from collections import OrderedDict

        self.max_bytes, self.max_payload = max_bytes, max_payload
        self._held: "OrderedDict[tuple, tuple]" = OrderedDict()
        self._bytes = 0
        # bumped by each clear(): what is kept beside the held readers (a plan's bloom filter
        # readers, tables/dataset_plan.py) is kept for one generation
        self.generation = 0
        self._lock = threading.Lock()

    def get(self, key: tuple):
        with self._lock:
            got = self._held.get(key)
            if got is not None:
                self._held.move_to_end(key)
                return got[0]
        return None

    def put(self, key: tuple, reader, payload: int) -> None:
        cost = payload + 1024
        with self._lock:
            if key in self._held or cost > self.max_bytes:
                return
            self._held[key] = (reader, cost)
            self._bytes += cost
            while self._bytes > self.max_bytes:
                _, (_, c) = self._held.popitem(last=False)
                self._bytes -= c

    def clear(self) -> None:
        """Drop every held reader (and, through :attr:`generation`, what others keep beside them)."""
        with self._lock:
            self._held.clear()
            self._bytes = 0
            self.generation += 1

    @property
    def held_bytes(self) -> int:
        """The held readers' payload sizes (a bound on what they read), in bytes."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._held)


class FileIndexFile:
    """An opened container: header parsed, readers created and cached on demand."""

    def __init__(
        self,
        source: Source,
        row_type: Mapping[str, object],
        options: Mapping,
        layout=None,
        held: Optional[Tuple[HeldReaders, tuple]] = None,
    ):
        self.source = source
        self.row_type = dict(row_type)
        self.options = options
        # (readers kept between openings, this container's key there): only for bytes that
        # cannot change under the key, opened with the same options every time
        self._held = held
        self._entries: Dict[str, List[Tuple[str, int, int]]] = {}
        self._readers: Dict[Tuple[str, str], object] = {}
        if layout is not None and layout[2] == source.size:
            # a header this container's bytes were parsed into before (see layout())
            self._entries, self.head_length = layout[0], layout[1]
        else:
            self._parse_header()

    def layout(self):
        """The parsed header as an opaque value: pass it back as ``layout`` when the
        same (immutable) bytes are opened again, to skip parsing.  It is only used
        when the source has the size it had."""
        return (self._entries, self.head_length, self.source.size)

    def _parse_header(self):
        size = self.source.size
        if size < 20:
            raise IndexFormatError(f"file index container truncated: {size} bytes, the fixed header needs 20", 0)
        fixed = BoundedReader(self.source.read_at(0, 20, "container header"))
        magic = fixed.i64("magic")
        if magic != MAGIC:
            raise IndexFormatError(f"not a Paimon file index: magic 0x{magic & (2**64 - 1):016x}", 0)
        version = fixed.i32("version")
        if version != VERSION_1:
            raise IndexFormatError(f"unsupported file index version {version}", 8)
        head_len = fixed.i32("head length")
        if head_len < 24 or head_len > size:
            raise IndexFormatError(f"head length {head_len} outside [24, {size}]", 12)
        col_count = fixed.i32("column count")
        if col_count < 0 or col_count * _MIN_COLUMN_BYTES > head_len - 24:
            raise IndexFormatError(f"column count {col_count} does not fit in a {head_len}-byte header", 16)
        r = BoundedReader(self.source.read_at(0, head_len, "container header"), pos=20)
        self.head_length = head_len
        for _ in range(col_count):
            col = r.utf("column name")
            n = r.i32("index count")
            if n < 0 or n * _MIN_INDEX_BYTES > r.remaining:
                r.fail(f"index count {n} of column {col!r} does not fit in the header", r.pos - 4)
            items = self._entries.setdefault(col, [])
            for _ in range(n):
                itype = r.utf("index type name")
                at = r.pos
                start = r.i32("index start")
                length = r.i32("index length")
                if start == EMPTY_INDEX_FLAG:
                    if length != 0:
                        r.fail(f"empty index of {col!r} has length {length}", at)
                elif start < head_len or length < 0 or start + length > size:
                    r.fail(
                        f"index {itype!r} of {col!r}: [{start}, {start + length}) outside the body "
                        f"[{head_len}, {size})",
                        at,
                    )
                items.append((itype, start, length))
        redundant = r.i32("redundant length")
        if redundant < 0 or redundant > r.remaining:
            r.fail(f"redundant length {redundant} exceeds the header", r.pos - 4)

    # ------------------------------------------------------------ metadata
    def columns(self) -> List[str]:
        return list(self._entries)

    def index_metas(self) -> Dict[str, Dict[str, Tuple[int, int]]]:
        """``{column: {index_type: (start, length)}}`` as parsed (start -1 = empty index)."""
        return {c: {t: (s, n) for t, s, n in items} for c, items in self._entries.items()}

    def payload(self, column: str, index_type: str) -> Optional[bytes]:
        """The raw payload bytes of one index (None for an empty index)."""
        for t, s, n in self._entries.get(column, ()):
            if t == index_type:
                return None if s == EMPTY_INDEX_FLAG else bytes(self.source.read_at(s, n, f"{index_type} of {column}"))
        raise KeyError(f"no {index_type!r} index on column {column!r}")

    def column_type(self, column: str) -> DataType:
        t = self.row_type.get(column)
        if t is None and column.endswith("]") and "[" in column:
            base = column[: column.index("[")]
            mt = self.row_type.get(base)
            if isinstance(mt, str) and _MAP_RE.match(mt):
                t = _map_value_type(mt)
        if t is None:
            raise KeyError(f"column {column!r} has an index but no type in row_type")
        return DataType.parse(t)

    # ------------------------------------------------------------ reading
    def _options(self, itype: str) -> Options:
        return Options(self.options.get(itype, {}) if isinstance(self.options, Mapping) else {})

    def _reader(self, column: str, itype: str, start: int, length: int):
        key = (column, itype)
        rd = self._readers.get(key)
        if rd is None:
            dtype = self.column_type(column)
            held, hkey = self._held if self._held is not None else (None, None)
            hkey = hkey + (column, itype, str(dtype), start, length) if held is not None else None
            if start == EMPTY_INDEX_FLAG:
                rd = EmptyFileIndexReader(dtype, self.source.slice(0, 0), self._options(itype))
            elif held is not None and (rd := held.get(hkey)) is not None:
                pass  # (a held reader: no options parsed, no source sliced)
            else:
                try:
                    rd = get_factory(itype).reader(
                        dtype, self.source.slice(start, length, f"{itype} of {column}"), self._options(itype)
                    )
                except IndexFormatError as e:  # (its kind kept: a checksum mismatch stays one)
                    raise type(e)(f"column {column!r}: {e.what}", e.offset) from None
                if held is not None and length <= held.max_payload:
                    held.put(hkey, rd, length)
            self._readers[key] = rd
        return rd

    def readers(self, column: str):
        """Readers of every index on ``column`` (created once, cached)."""
        return [self._reader(column, *e) for e in self._entries.get(column, ())]

    def loaded_reader(self, column: str, index_type: str):
        """The reader of one index if this container has created it (None otherwise): what a plan
        asked, without opening anything."""
        return self._readers.get((column, index_type))

    def reader(self, column: str, index_type: str):
        """The reader of one index; KeyError if the file has no such index."""
        for e in self._entries.get(column, ()):
            if e[0] == index_type:
                return self._reader(column, *e)
        raise KeyError(f"no {index_type!r} index on column {column!r}")

    def visit_leaf(self, leaf: Leaf) -> FileIndexResult:
        """AND of every index's answer on the leaf's column (REMAIN when none can answer).

        An index type this build does not know is skipped (it cannot prune, so
        the file is kept), as is a column missing from ``row_type``.
        """
        from ..errors import UnknownIndexTypeError

        res = REMAIN
        for e in self._entries.get(leaf.name, ()):
            try:
                rd = self._reader(leaf.name, *e)
            except (UnknownIndexTypeError, KeyError):
                continue
            res = res.and_(rd.visit(leaf))
        return res

    def visit_leaf_exact(self, leaf: Leaf):
        """``(visit_leaf(leaf), exact)``: ``exact`` when the answer is SKIP or a row bitmap one
        index gives exactly (:meth:`FileIndexReader.answers_exactly`): the others' answers are
        supersets of the rows, so the intersection is exact too."""
        from ..errors import UnknownIndexTypeError

        res, exact = REMAIN, False
        for e in self._entries.get(leaf.name, ()):
            try:
                rd = self._reader(leaf.name, *e)
            except (UnknownIndexTypeError, KeyError):
                continue
            r = rd.visit(leaf)
            exact = exact or (isinstance(r, BitmapResult) and rd.answers_exactly(leaf))
            res = res.and_(r)
        return res, exact or not res.remain

    def evaluate(self, predicate: Predicate) -> FileIndexResult:
        """REMAIN / SKIP / BitmapResult for the whole predicate over all indexes of the file."""
        return evaluate_tree(predicate, self.visit_leaf)

    def describe(self) -> dict:
        cols = {}
        for c, items in self._entries.items():
            cols[c] = []
            for t, s, n in items:
                d = {"index_type": t, "start": s, "length": n}
                try:
                    d.update(self._reader(c, t, s, n).describe())
                except (KeyError, UnsupportedTypeError) as e:
                    d["error"] = str(e)
                cols[c].append(d)
        return {"size": self.source.size, "head_length": self.head_length, "columns": cols}

    def close(self):
        self.source.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
