"""A Parquet file's footer and the pages of its column chunks, as
:func:`paimon_fast.io.parquet.rows.read_rows` needs them: :class:`_Footer` (schema fields, row
groups, column chunk metadata, the ``ARROW:schema``), :func:`chunk_pages` (where a chunk's data
pages and dictionary page are, from the page index or by walking the page headers), and a
cache of parsed footers per local file.  Everything read is bounded by the file and checked:
corrupt metadata raises :class:`~paimon_fast.errors.IndexFormatError`; what is not handled
raises :class:`UnsupportedChunk` (the caller reads the row group with pyarrow instead)."""

from __future__ import annotations

import base64
import functools
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

import numpy as np
import pyarrow as pa

from ...errors import IndexFormatError
from ..source import Source
from .thrift import _T_I32, _T_LIST, _T_STOP, _T_STRUCT, Decoder, _Encoder, _Truncated
import pyarrow.parquet as pq

_MAGIC = b"PAR1"
_HEADER_PROBE = 256  # first guess of a page header's size (statistics make it larger)
_MAX_PAGE_HEADER = 16 << 20
_MAX_METADATA = 64 << 20  # footers and offset indexes parsed here (larger ones: pyarrow's row-group read)


# ---------------------------------------------------------------- the footer
# parquet.thrift field ids used below
#   FileMetaData: 1 version, 2 schema, 3 num_rows, 4 row_groups, 5 key_value_metadata
#   SchemaElement: 1 type, 3 repetition_type, 4 name, 5 num_children
#   RowGroup: 1 columns, 3 num_rows;  ColumnChunk: 1 file_path, 3 meta_data, 4/5 offset index offset/length,
#   8 crypto_metadata, 9 encrypted_column_metadata
#   ColumnMetaData: 1 type, 2 encodings, 3 path_in_schema, 4 codec, 5 num_values,
#   7 total_compressed_size, 9 data_page_offset, 11 dictionary_page_offset
#   PageHeader: 1 type, 2 uncompressed_page_size, 3 compressed_page_size, 5 data_page_header,
#   7 dictionary_page_header, 8 data_page_header_v2;  DataPageHeader: 1 num_values, 2 encoding;
#   DataPageHeaderV2: 1 num_values, 3 num_rows, 4 encoding;  OffsetIndex: 1 page_locations;
#   PageLocation: 1 offset, 2 compressed_page_size (header included), 3 first_row_index
_REPEATED = 2
_DATA_PAGE, _INDEX_PAGE, _DICTIONARY_PAGE, _DATA_PAGE_V2 = 0, 1, 2, 3
_DICT_ENCODINGS = (2, 8)  # PLAIN_DICTIONARY, RLE_DICTIONARY


class UnsupportedChunk(Exception):
    """This column or file is read by pyarrow's row-group read instead (the message says why)."""


_UNREAD, _BAD = object(), object()


@dataclass
class _Field:
    name: str
    index: int  # top-level field number
    leaves: range  # its leaf columns
    raw: bytes  # its SchemaElements' encoded bytes (the field's subtree, in schema order)
    elements: int  # how many SchemaElements ``raw`` holds (a flat field: one)
    flat: bool  # one primitive, not repeated: every value is one row


class _Footer:
    """What :func:`read_rows` needs of a file's FileMetaData."""

    def __init__(self, data, base: int, file_size: int):
        dec = Decoder(data, base=base, what="Parquet footer")
        self.version = 1
        self.elements: List[dict] = []
        raws: List[bytes] = []
        self.row_groups: List[dict] = []
        self.kv: Dict[bytes, bytes] = {}
        fid = 0
        seen_schema = False
        num_rows = None
        rgs_seen = False
        while True:
            h = dec.byte()
            t = h & 0x0F
            if t == _T_STOP:
                break
            fid = fid + (h >> 4) if h >> 4 else dec.zigzag()
            if fid == 2 and t == _T_LIST:  # schema: keep each element's bytes to copy them verbatim
                seen_schema = True
                lh = dec.byte()
                n = lh >> 4
                if n == 15:
                    n = dec.varint()
                if lh & 0x0F != _T_STRUCT or n > dec.end - dec.pos:
                    raise IndexFormatError("Parquet footer: schema is not a list of structs", base + dec.pos)
                for _ in range(n):
                    start = dec.pos
                    self.elements.append(dec.struct(1))
                    raws.append(bytes(data[start : dec.pos]))
                continue
            v = dec.value(t, 0, True)
            if fid == 3:
                num_rows = v
            if fid == 1 and t == _T_I32:
                self.version = v
            elif fid == 4 and t == _T_LIST:
                self.row_groups = v
                rgs_seen = True
            elif fid == 5 and t == _T_LIST:
                for kv in v:
                    if isinstance(kv, dict) and isinstance(kv.get(1), bytes):
                        self.kv[kv[1]] = kv.get(2) if isinstance(kv.get(2), bytes) else None
            elif fid == 8:
                raise UnsupportedChunk("encrypted file")
        if not seen_schema or not self.elements:
            raise IndexFormatError("Parquet footer without a schema", base)
        if not isinstance(num_rows, int) or not isinstance(self.row_groups, list) or rgs_seen is False:
            raise IndexFormatError("Parquet footer without its row count or row groups", base)
        self.file_size = file_size
        self.footer_start = base
        self.fields = self._fields(raws)
        self.leaf_count = self.fields[-1].leaves.stop if self.fields else 0
        self.rg_rows = np.zeros(len(self.row_groups), dtype=np.int64)
        for i, rg in enumerate(self.row_groups):
            if not isinstance(rg, dict):
                raise IndexFormatError(f"Parquet footer: row group {i} is not a struct", base)
            n = rg.get(3)
            cols = rg.get(1)
            if not isinstance(n, int) or n < 0 or n > 1 << 62:
                raise IndexFormatError(f"Parquet footer: row group {i} has {n!r} rows", base)
            if not isinstance(cols, list) or len(cols) != self.leaf_count or not all(isinstance(c, dict) for c in cols):
                raise IndexFormatError(f"Parquet footer: row group {i} has not {self.leaf_count} column chunks", base)
            self.rg_rows[i] = n
        self.starts = np.zeros(len(self.row_groups) + 1, dtype=np.int64)
        np.cumsum(self.rg_rows, out=self.starts[1:])
        self.starts_list = self.starts.tolist()  # (Python ints: the reader's few-group arithmetic)
        self.by_name: Dict[str, Optional[_Field]] = {}
        for f in self.fields:
            self.by_name[f.name] = None if f.name in self.by_name else f  # None: the name is not unique
        self.arrow_schema = _UNREAD  # the ARROW:schema (pyarrow's stored schema) or None, parsed on first use
        self.pages: Dict[tuple, object] = {}  # (row group, leaf) -> _Pages or UnsupportedChunk
        self.plans = None  # field index -> pages.Plan of the flat columns it decodes (made on first use)
        self.lock = threading.Lock()

    def _fields(self, raws) -> List[_Field]:
        els = self.elements
        root = els[0]
        nroot = root.get(5)
        if not isinstance(nroot, int) or nroot < 0 or nroot > len(els):
            raise IndexFormatError(f"Parquet footer: root schema element with {nroot!r} children", 0)
        out = []
        pos = 1
        leaf = 0
        for i in range(nroot):
            start_leaf = leaf
            if pos >= len(els):
                raise IndexFormatError("Parquet footer: schema ends inside a field", 0)
            top = els[pos]
            name = top.get(4)
            if not isinstance(name, bytes):
                raise IndexFormatError(f"Parquet footer: schema element {pos} without a name", 0)
            # walk the field's subtree: the number of elements still to visit
            todo = 1
            first = pos
            while todo:
                if pos >= len(els):
                    raise IndexFormatError("Parquet footer: schema ends inside a field", 0)
                nc = els[pos].get(5)
                todo -= 1
                if isinstance(nc, int) and nc > 0:
                    if nc > len(els):
                        raise IndexFormatError(f"Parquet footer: schema element {pos} with {nc} children", 0)
                    todo += nc
                else:
                    leaf += 1
                pos += 1
            flat = pos == first + 1 and top.get(3) != _REPEATED and not top.get(5)
            out.append(
                _Field(
                    name.decode("utf-8", "replace"),
                    i,
                    range(start_leaf, leaf),
                    b"".join(raws[first:pos]),
                    pos - first,
                    flat,
                )
            )
        if pos != len(els):
            raise IndexFormatError(f"Parquet footer: {len(els) - pos} schema elements outside the root's fields", 0)
        return out

    def origin_schema(self):
        """pyarrow's stored schema (``ARROW:schema``), or None; UnsupportedChunk when it does not
        match the file's fields (pyarrow applies it field by field)."""
        if self.arrow_schema is _UNREAD:
            raw = self.kv.get(b"ARROW:schema")
            s = None
            if raw is not None:
                try:
                    s = pa.ipc.read_schema(pa.py_buffer(base64.b64decode(raw)))
                except Exception:  # noqa: BLE001 - any parse failure: pyarrow's own read decides
                    s = _BAD
                if s is not _BAD and len(s) != len(self.fields):
                    s = _BAD
            self.arrow_schema = s
        if self.arrow_schema is _BAD:
            raise UnsupportedChunk("ARROW:schema does not match the file")
        return self.arrow_schema


# ---------------------------------------------------------------- pages of a column chunk
class _Pages:
    """The data pages of one column chunk: ``first_row``, ``rows``, ``offset``, ``size``
    (header included) per page, the bytes before the first data page that hold the
    dictionary page (``dict_range``, or None) and, per page, whether it is thought to be
    dictionary-encoded (``dict_enc``: only the cost rule uses it; the page headers decide)."""

    __slots__ = ("first_row", "rows", "offset", "size", "dict_range", "meta", "data_bytes", "dict_enc")

    def __init__(self, first_row, rows, offset, size, dict_range, meta, dict_enc=None):
        self.first_row = first_row
        self.rows = rows
        self.offset = offset
        self.size = size
        self.dict_range = dict_range
        self.meta = meta
        self.data_bytes = int(size.sum())
        if dict_enc is None:
            dict_enc = np.full(len(size), dict_range is not None)
            stats = meta.get(13)  # encoding_stats: writers fall back from the dictionary once, for good,
            if dict_range is not None and isinstance(stats, list):  # so the dictionary-encoded pages lead
                n = sum(
                    e.get(3, 0)
                    for e in stats
                    if isinstance(e, dict)
                    and e.get(1) in (_DATA_PAGE, _DATA_PAGE_V2)
                    and e.get(2) in _DICT_ENCODINGS
                    and isinstance(e.get(3), int)
                )
                dict_enc[max(0, n) :] = False
        self.dict_enc = dict_enc


def _page_header(buf, pos: int, end: int, base: int) -> tuple:
    """``(type, header length, compressed size, uncompressed size, values, rows or -1, encoding)``
    of the page header at ``buf[pos:]`` (rows: -1 for V1 data pages, whose values are rows
    only for flat columns)."""
    dec = Decoder(buf, pos, end, base, "Parquet page header")
    h = dec.struct(1)
    hlen = dec.pos - pos
    ptype, usize, csize = h.get(1), h.get(2), h.get(3)
    if not isinstance(ptype, int) or not isinstance(usize, int) or not isinstance(csize, int) or usize < 0 or csize < 0:
        raise IndexFormatError("Parquet page header without its type or sizes", base + pos)
    values, rows, enc = 0, -1, -1
    if ptype == _DATA_PAGE:
        d = h.get(5)
        if not isinstance(d, dict) or not isinstance(d.get(1), int) or not isinstance(d.get(2), int):
            raise IndexFormatError("Parquet data page without its header", base + pos)
        values, enc = d[1], d[2]
    elif ptype == _DATA_PAGE_V2:
        d = h.get(8)
        if not isinstance(d, dict) or not all(isinstance(d.get(k), int) for k in (1, 3, 4)):
            raise IndexFormatError("Parquet data page V2 without its header", base + pos)
        values, rows, enc = d[1], d[3], d[4]
    elif ptype == _DICTIONARY_PAGE:
        d = h.get(7)
        if not isinstance(d, dict) or not isinstance(d.get(1), int):
            raise IndexFormatError("Parquet dictionary page without its header", base + pos)
        values = d[1]
    if values < 0:
        raise IndexFormatError(f"Parquet page header with {values} values", base + pos)
    return ptype, hlen, csize, usize, values, rows, enc


def _chunk_meta(fo: _Footer, rg: int, leaf: int) -> tuple:
    """``(ColumnChunk, ColumnMetaData, chunk start, chunk end)``, checked against the file."""
    cc = fo.row_groups[rg][1][leaf]
    if cc.get(1) is not None:
        raise UnsupportedChunk("column chunk in another file")
    if cc.get(8) is not None or cc.get(9) is not None:
        raise UnsupportedChunk("encrypted column")
    meta = cc.get(3)
    if not isinstance(meta, dict):
        raise UnsupportedChunk("column chunk without metadata")
    need = (1, 4, 5, 7, 9)
    if (
        not all(isinstance(meta.get(k), int) for k in need)
        or not isinstance(meta.get(2), list)
        or not isinstance(meta.get(3), list)
    ):
        raise IndexFormatError(f"Parquet column chunk (row group {rg}, column {leaf}) without its metadata", None)
    start = meta[9]
    d = meta.get(11)
    if isinstance(d, int) and 4 <= d < start:
        start = d
    end = start + meta[7]
    if start < 4 or meta[7] <= 0 or end > fo.footer_start:
        raise IndexFormatError(
            f"Parquet column chunk (row group {rg}, column {leaf}) at [{start}, {end}) "
            f"outside the {fo.file_size}-byte file",
            start,
        )
    return cc, meta, start, end


def _pages_from_index(src: Source, fo: _Footer, rg: int, cc: dict, meta: dict, start: int, end: int) -> _Pages:
    off, length = cc.get(4), cc.get(5)
    if not isinstance(off, int) or not isinstance(length, int) or length <= 0 or off < 4 or off + length > fo.file_size:
        raise IndexFormatError(f"Parquet offset index at {off!r} ({length!r} bytes) outside the file", off)
    if length > _MAX_METADATA:
        raise UnsupportedChunk(f"offset index larger than {_MAX_METADATA >> 20} MB")
    raw = src.read_at(off, length, "Parquet offset index")
    oi = Decoder(raw, base=off, what="Parquet offset index").struct(1)
    locs = oi.get(1)
    if not isinstance(locs, list) or not locs:
        raise IndexFormatError("Parquet offset index without page locations", off)
    n = len(locs)
    arr = np.empty((3, n), dtype=np.int64)
    for i, loc in enumerate(locs):
        if not isinstance(loc, dict) or not all(isinstance(loc.get(k), int) for k in (1, 2, 3)):
            raise IndexFormatError("Parquet offset index: a page location without its fields", off)
        arr[0, i], arr[1, i], arr[2, i] = loc[1], loc[2], loc[3]
    offset, size, first = arr
    nrows = int(fo.rg_rows[rg])
    ends = offset + size
    if (
        first[0] != 0
        or np.any(np.diff(first) <= 0)
        or first[-1] >= max(nrows, 1)
        or np.any(size <= 0)
        or offset[0] < start
        or ends[-1] > end
        or np.any(offset[1:] < ends[:-1])
    ):
        raise IndexFormatError(
            f"Parquet offset index (row group {rg}) does not describe the column chunk [{start}, {end})", off
        )
    rows = np.empty(n, dtype=np.int64)
    rows[:-1] = np.diff(first)
    rows[-1] = nrows - first[-1]
    dict_range = (start, int(offset[0]) - start) if offset[0] > start else None
    return _Pages(first, rows, offset, size, dict_range, meta)


def _pages_by_walking(src: Source, fo: _Footer, rg: int, meta: dict, start: int, end: int) -> _Pages:
    """The data pages found by reading each page header in turn (no page index)."""
    firsts, rowss, offs, sizes, encs = [], [], [], [], []
    dict_range = None
    pos = start
    row = 0
    while pos < end:
        probe = _HEADER_PROBE
        while True:
            n = min(probe, end - pos)
            buf = src.read_at(pos, n, "Parquet page header")
            try:
                ptype, hlen, csize, _, values, rows, enc = _page_header(buf, 0, n, pos)
                break
            except _Truncated:
                if n >= end - pos or probe >= _MAX_PAGE_HEADER:
                    raise
                probe *= 8
        size = hlen + csize
        if pos + size > end:
            raise IndexFormatError(f"Parquet page of {size} bytes runs past its column chunk's end {end}", pos)
        if ptype == _DICTIONARY_PAGE:
            if offs or dict_range is not None:
                raise UnsupportedChunk("dictionary page after data pages")
            dict_range = (start, pos + size - start)
        elif ptype in (_DATA_PAGE, _DATA_PAGE_V2):
            r = rows if ptype == _DATA_PAGE_V2 else values
            if r <= 0 and values > 0:
                raise IndexFormatError(f"Parquet data page V2 with {r} rows", pos)
            firsts.append(row)
            rowss.append(r)
            offs.append(pos)
            sizes.append(size)
            encs.append(enc in _DICT_ENCODINGS)
            row += r
        elif ptype != _INDEX_PAGE:
            raise IndexFormatError(f"Parquet page of unknown type {ptype}", pos)
        elif offs:
            raise UnsupportedChunk("index page after data pages")
        else:
            dict_range = (start, pos + size - start)
        pos += size
    if row != fo.rg_rows[rg] or not offs:
        raise IndexFormatError(
            f"Parquet column chunk (row group {rg}) holds {row} rows in its pages, the row group {int(fo.rg_rows[rg])}",
            start,
        )
    keep = np.asarray(rowss, dtype=np.int64) > 0  # pages of zero rows hold nothing to select

    def pick(a):
        return np.asarray(a, dtype=np.int64)[keep]

    return _Pages(
        pick(firsts), pick(rowss), pick(offs), pick(sizes), dict_range, meta, np.asarray(encs, dtype=bool)[keep]
    )


def chunk_pages(src: Source, fo: _Footer, rg: int, leaf: int) -> _Pages:
    key = (rg, leaf)
    got = fo.pages.get(key)
    if got is None:
        try:
            cc, meta, start, end = _chunk_meta(fo, rg, leaf)
            if cc.get(4) is not None:
                got = _pages_from_index(src, fo, rg, cc, meta, start, end)
            else:
                got = _pages_by_walking(src, fo, rg, meta, start, end)
        except UnsupportedChunk as e:
            got = e
        except IndexFormatError as e:  # pyarrow ignores the page index: its row-group read decides
            got = UnsupportedChunk(f"page locations not readable ({e.what})")
        with fo.lock:
            fo.pages[key] = got
    if isinstance(got, UnsupportedChunk):
        raise got
    return got


# ---------------------------------------------------------------- files and caches
_FOOTERS: "OrderedDict[tuple, _Footer]" = OrderedDict()
_FOOTERS_MAX = 256  # files, and at most this many bytes of their footers:
_FOOTERS_BYTES = 32 << 20
_FOOTERS_LOCK = threading.Lock()


def clear_cache() -> None:
    """Forget the parsed footers and page locations kept per local file (path, size, mtime)."""
    with _FOOTERS_LOCK:
        _FOOTERS.clear()


def _read_footer(src: Source) -> _Footer:
    size = src.size
    if size < 12:
        raise IndexFormatError(f"Parquet file of {size} bytes is too short", 0)
    tail = bytes(src.read_at(size - 8, 8, "Parquet footer length"))
    if tail[4:] == b"PARE":
        raise UnsupportedChunk("encrypted file")
    if tail[4:] != _MAGIC:
        raise IndexFormatError("not a Parquet file (no PAR1 at its end)", size - 4)
    n = int.from_bytes(tail[:4], "little")
    if n <= 0 or n > size - 12:
        raise IndexFormatError(f"Parquet footer of {n} bytes does not fit the {size}-byte file", size - 8)
    if n > _MAX_METADATA:  # a Python object per value: pyarrow's reader takes such files
        raise UnsupportedChunk(f"footer larger than {_MAX_METADATA >> 20} MB")
    base = size - 8 - n
    return _Footer(src.read_at(base, n, "Parquet footer"), base, size)


def cached(key) -> Optional[_Footer]:
    """The parsed footer kept for ``key`` (path, size, mtime_ns, ctime_ns, inode), or None: a
    caller that knows a local file's version (a listing's) finds its footer without opening it."""
    with _FOOTERS_LOCK:
        fo = _FOOTERS.get(key)
        if fo is not None:
            _FOOTERS.move_to_end(key)
        return fo


def footer_for(src: Source, key) -> _Footer:
    if key is None:
        return _read_footer(src)
    with _FOOTERS_LOCK:
        fo = _FOOTERS.get(key)
        if fo is not None:
            _FOOTERS.move_to_end(key)
            return fo
    fo = _read_footer(src)
    with _FOOTERS_LOCK:
        _FOOTERS[key] = fo
        total = sum(f.file_size - f.footer_start for f in _FOOTERS.values())
        while len(_FOOTERS) > _FOOTERS_MAX or (total > _FOOTERS_BYTES and len(_FOOTERS) > 1):
            _, old = _FOOTERS.popitem(last=False)
            total -= old.file_size - old.footer_start
    return fo


# ---------------------------------------------------------------- the Arrow schema pyarrow reads
def _footer_bytes(fo: _Footer, fields: Sequence[_Field], placed: list, nrows: int, origin) -> bytes:
    """The footer (FileMetaData, its length, ``PAR1``) of a file of one row group (none when
    ``placed`` is empty) holding ``fields``, whose column chunks are ``placed[i] = (ColumnMetaData
    of the original chunk, chunk start, dictionary page offset or None, first data page offset,
    chunk bytes, values, uncompressed bytes)``.  Statistics, page indexes and bloom filters are
    left out; schema elements are the original's bytes."""
    e = _Encoder()
    e.struct_begin()
    e.int(1, fo.version, _T_I32)
    e.list_begin(2, _T_STRUCT, 1 + sum(f.elements for f in fields))
    e.struct_begin()
    e.binary(4, b"schema")
    e.int(5, len(fields), _T_I32)
    e.struct_end()
    for f in fields:
        e.out += f.raw
    e.int(3, nrows)
    e.list_begin(4, _T_STRUCT, 1 if placed else 0)
    if placed:
        e.struct_begin()
        e.list_begin(1, _T_STRUCT, len(placed))
        total = 0
        for meta, start, dict_off, data_off, nbytes, values, usize in placed:
            e.struct_begin()
            e.int(2, start)
            e.struct_begin(3)
            e.int(1, meta[1], _T_I32)
            e.list_ints(2, [v for v in meta[2] if isinstance(v, int)])
            e.list_binaries(3, [v for v in meta[3] if isinstance(v, bytes)])
            e.int(4, meta[4], _T_I32)
            e.int(5, values)
            e.int(6, usize)
            e.int(7, nbytes)
            e.int(9, data_off)
            if dict_off is not None:
                e.int(11, dict_off)
            e.struct_end()
            e.struct_end()
            total += usize
        e.int(2, total)
        e.int(3, nrows)
        e.struct_end()
    kv = [(k, v) for k, v in fo.kv.items() if k != b"ARROW:schema"]
    if origin is not None:  # pyarrow's stored schema, of these fields only (it is applied field by field)
        sub = pa.schema([origin.field(f.index) for f in fields], metadata=origin.metadata)
        kv.append((b"ARROW:schema", base64.b64encode(sub.serialize().to_pybytes())))
    if kv:
        e.list_begin(5, _T_STRUCT, len(kv))
        for k, v in kv:
            e.struct_begin()
            e.binary(1, k)
            if v is not None:
                e.binary(2, v)
            e.struct_end()
    e.struct_end()
    return bytes(e.out) + len(e.out).to_bytes(4, "little") + _MAGIC


@functools.lru_cache(maxsize=256)
def _schemas(plain_footer: bytes, typed_footer: bytes) -> tuple:
    """``(plain, typed)``: the Arrow schemas pyarrow reads from the two footers of a file of no
    rows (``(None, None)`` when it cannot): without and with its stored ``ARROW:schema``.  Kept
    per footer bytes: the files of a table mostly share one schema, so a first read of several
    files reads it once.  ``ParquetFile.schema_arrow`` is the schema ``read_table`` gives, without
    the dataset machinery ``read_table`` imports on its first call (0.4 s: pyarrow.dataset)."""
    try:
        return (
            pq.ParquetFile(pa.BufferReader(b"PAR1" + plain_footer)).schema_arrow,
            pq.ParquetFile(pa.BufferReader(b"PAR1" + typed_footer)).schema_arrow,
        )
    except (pa.ArrowException, OSError, ValueError):
        return None, None
