"""Data files written for reads at known rows (what :meth:`ParquetDataset.optimize` writes), and the
per-file statistics the catalog keeps.

**The files.**  Every file carries a Parquet page index (OffsetIndex and ColumnIndex), so a reader
finds the pages holding chosen rows and the pages a predicate cannot match without reading them.
Pages are capped by rows (:attr:`WriteOptions.page_rows`, 4,096 by default: measured in
``benchmarks/bench_optimize.py --pages``, where 4,096-row pages cost about 1% more bytes than
pyarrow's 1 MB pages and the same to scan, and read scattered rows 2.8x and a contiguous range
6x faster) and, for wide columns, by bytes (:attr:`WriteOptions.page_bytes`): the rows of a page
are ``min(page_rows, page_bytes / the widest column's bytes a value)``.  pyarrow has no row cap
of its own here: a page is closed after every ``write_batch_size`` rows by asking for pages of
one byte.  A column's dictionary page holds at most :attr:`WriteOptions.dictionary_bytes` (64 KiB;
pyarrow's 1 MB) before the column falls back to plain pages: a dictionary is read whole before any
page it encodes, and a few rows should not cost a million values.  A column whose first
:data:`DICTIONARY_PROBE_ROWS` rows already hold more distinct values than such a page takes (an
id, a measurement, a payload) gets no dictionary at all (:func:`dictionary_columns`): it would
encode only the file's first rows, and a read of any of them would decode the whole page first
(1,035 rows of six columns: 0.73 ms with those dictionaries, 0.39 without).  Row groups hold
:attr:`WriteOptions.row_group_rows` rows (1,048,576 by default, pyarrow's); files are about
:attr:`WriteOptions.target_file_size` bytes, by default the mean size of the files they replace
bounded by 8 and 128 MiB (a file index, a bloom filter per file above all, was sized for files of
that size: keeping it keeps what a point lookup reads; smaller files are merged, larger ones
split); Snappy (default) or ZSTD, except for a column the codec shrinks by less than
:attr:`WriteOptions.min_compression_saving` (15%; 0 compresses every column), which is stored
uncompressed (:func:`column_layout`): a clustered column of doubles is such a column (sorted
neighbours share their high 4 bytes, so Snappy writes a 4-byte copy between 4-byte literals: it
saves 10% and takes 8x as long to decode as the plain bytes take to copy; a read of 2% of the rows
of every page of ``benchmarks/bench_optimize.py`` took 336 ms with that column compressed, 303 ms
without, as on the original files).  A column without a dictionary is written with a delta
encoding where that reads faster (:attr:`WriteOptions.delta_encoding`, :func:`column_layout`):
strings and binaries DELTA_LENGTH_BYTE_ARRAY, whose values' bytes lie one after another as in an
Arrow array (the 1% read of ``benchmarks/bench_optimize.py``, six columns of 100,000 rows: 3.75
ms with PLAIN strings and ids, 2.51 ms with these encodings), integers DELTA_BINARY_PACKED when
that saves as much as a codec must.  pyarrow, DuckDB, Polars and Spark (3.3 on) read both
encodings.  Sorted files name their order in the footer (``sorting_columns``).
The schema is the dataset's (with its metadata), and the Parquet physical types follow the files
rewritten: INT96 timestamps stay INT96, decimals stored as integers stay integers.

**Statistics** (:func:`column_stats`, :func:`entry_stats`): per file and column the minimum, the
maximum and the null count, kept in the catalog entry (``"stats": {column: {"min", "max",
"nulls"}}``) for signed integer, floating point and string columns (strings only when both bounds
are at most :data:`MAX_STAT_BYTES` bytes; floating point bounds leave NaN out, as Parquet's
do).  A build records them for the indexed columns (:class:`StatsAccumulator`, over the batches
it indexes), an optimize for the indexed and cluster columns of the files it writes.  A plan
answers leaves from them before opening a file's footer or index, on every store
(:func:`paimon_fast.tables.stats.leaf_answer`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, Iterable, List, Mapping, Optional, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..errors import OptionError
from .stats import ChunkStats, stat_kind

MAX_STAT_BYTES = 64
COMPRESSIONS = ("snappy", "zstd")
# files keep the size of the files they replace (their file indexes, a bloom filter per file, were
# sized for that), within these bounds: smaller files are merged, larger ones split
MIN_TARGET_FILE_SIZE = 8 << 20
MAX_TARGET_FILE_SIZE = 128 << 20
DEFAULT_ROW_GROUP_ROWS = 1 << 20  # pyarrow's default: no reader's row-group statistics get coarser
DEFAULT_PAGE_ROWS = 4096
DEFAULT_PAGE_BYTES = 1 << 20  # pyarrow's data page size: a page of wide values is capped by it
# a column the codec shrinks by less than this share is stored uncompressed (module docstring)
DEFAULT_MIN_COMPRESSION_SAVING = 0.15
COMPRESSION_PROBES = 4  # slices of a column compressed to judge it, spread over the file's rows
COMPRESSION_PROBE_ROWS = 4096  # rows a slice: a page at the default page_rows
# a dictionary page is read whole before any page it encodes: past this size a column falls back to
# plain pages, so reading a few rows never reads a dictionary of a million values (pyarrow: 1 MB)
DEFAULT_DICTIONARY_BYTES = 64 << 10
# a column whose first rows already hold more distinct values than a dictionary page takes gets none
DICTIONARY_PROBE_ROWS = 16384


@dataclass
class WriteOptions:
    """How :meth:`ParquetDataset.optimize` writes files (module docstring)."""

    target_file_size: Optional[int] = None  # None: the mean size of the files rewritten, bounded
    row_group_rows: int = DEFAULT_ROW_GROUP_ROWS
    page_rows: int = DEFAULT_PAGE_ROWS
    page_bytes: int = DEFAULT_PAGE_BYTES
    dictionary_bytes: int = DEFAULT_DICTIONARY_BYTES
    compression: str = "snappy"
    compression_level: Optional[int] = None
    min_compression_saving: float = DEFAULT_MIN_COMPRESSION_SAVING  # 0: every column compressed
    delta_encoding: bool = True  # False: PLAIN values for the columns without a dictionary

    def target_for(self, sizes: Sequence[int]) -> int:
        """The target file size for rewriting files of these sizes (module docstring)."""
        if self.target_file_size is not None:
            return self.target_file_size
        mean = sum(sizes) / max(1, len(sizes))
        # rounded up: rounded down, n files of a mean with a fraction were cut into n + 1
        return math.ceil(min(MAX_TARGET_FILE_SIZE, max(MIN_TARGET_FILE_SIZE, mean)))

    def check(self) -> "WriteOptions":
        c = str(self.compression).lower()
        if c not in COMPRESSIONS:
            raise OptionError(f"compression {self.compression!r}: one of {', '.join(COMPRESSIONS)}")
        self.compression = c
        for name in ("target_file_size", "row_group_rows", "page_rows", "page_bytes", "dictionary_bytes"):
            v = getattr(self, name)
            if v is None and name == "target_file_size":
                continue
            if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
                raise OptionError(f"{name} must be a positive integer, got {v!r}")
        if not isinstance(self.delta_encoding, bool):
            raise OptionError(f"delta_encoding must be True or False, got {self.delta_encoding!r}")
        v = self.min_compression_saving
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v < 1:
            raise OptionError(f"min_compression_saving must be a number in [0, 1), got {v!r}")
        return self

    def to_json(self) -> dict:
        return dict(self.__dict__)


def page_rows_for(table: pa.Table, opts: WriteOptions) -> int:
    """Rows a page holds in ``table``'s file: :attr:`WriteOptions.page_rows`, fewer when the widest
    column's values would make a page larger than :attr:`WriteOptions.page_bytes`."""
    n = max(1, table.num_rows)
    widest = max((col.nbytes / n for col in table.columns), default=1.0)
    return int(max(64, min(opts.page_rows, opts.page_bytes // max(1.0, widest))))


def dictionary_columns(table: pa.Table, opts: WriteOptions):
    """pyarrow's ``use_dictionary`` for ``table``'s file: the names of the columns worth a
    dictionary (every column but those whose first :data:`DICTIONARY_PROBE_ROWS` rows already hold
    more distinct values than a dictionary page of :attr:`WriteOptions.dictionary_bytes` takes),
    or True (every column: pyarrow's default) when no column is left out, or when a column is
    nested or has a dot in its name (pyarrow names a column's dictionary by its leaf path, dotted:
    those are left as pyarrow writes them)."""
    if any(pa.types.is_nested(f.type) or "." in f.name for f in table.schema):
        return True
    keep = []
    for name, col in zip(table.column_names, table.columns):
        if _overflows(col.slice(0, DICTIONARY_PROBE_ROWS), opts.dictionary_bytes):
            continue
        keep.append(name)
    return True if len(keep) == table.num_columns else keep


def _overflows(col, limit: int) -> bool:
    """Do the distinct values of ``col`` take more than ``limit`` bytes as a dictionary page (PLAIN:
    a byte array is its length and its bytes)?  False where it cannot tell cheaply."""
    t = col.type
    if pa.types.is_dictionary(t) or pa.types.is_boolean(t) or pa.types.is_null(t):
        return False
    if _is_byte_array(t):
        if col.nbytes <= limit:  # (all its values together fit: so do the distinct ones)
            return False
        u = pc.unique(col)
        return int(pc.sum(pc.binary_length(u)).as_py() or 0) + 4 * len(u) > limit
    try:
        width = t.bit_width // 8
    except ValueError:  # (no fixed width)
        return False
    if width <= 0 or len(col) * width <= limit:
        return False
    return len(pc.unique(col)) * width > limit


def column_layout(table: pa.Table, opts: WriteOptions, use_dictionary=True, flavour=None) -> tuple:
    """``(compression, column_encoding)``: pyarrow's arguments for ``table``'s file.

    A column written without a dictionary (``use_dictionary``: :func:`dictionary_columns`) gets,
    with :attr:`WriteOptions.delta_encoding` (default), a delta encoding where it reads faster: a
    string or binary column DELTA_LENGTH_BYTE_ARRAY (the lengths bit-packed, then the values'
    bytes one after another, as an Arrow array holds them: no length before each value for the
    codec to work around and the reader to step over); a 32- or 64-bit integer, timestamp or date
    column DELTA_BINARY_PACKED when that saves at least :attr:`WriteOptions.min_compression_saving`
    of its PLAIN values, compressed or not, whichever is smaller (as estimated on the probes below:
    unsorted ids in a range of 1e7 take 3 bytes a value, where Snappy leaves 5 of their 8; random
    64-bit values stay PLAIN).  ``column_encoding`` is None when no column gets one.

    ``compression`` is the codec (:attr:`WriteOptions.compression`), or per column the codec or
    ``"none"``: a column is stored uncompressed when its values are stored as they are (PLAIN
    fixed-width values: 32- and 64-bit integers and floats, dates, timestamps unless written as
    INT96; or a DELTA_LENGTH_BYTE_ARRAY column's bytes) and the codec shrinks them by less than
    :attr:`WriteOptions.min_compression_saving`, judged on :data:`COMPRESSION_PROBES` slices of
    :data:`COMPRESSION_PROBE_ROWS` rows spread over the table.  The codec alone when no column is
    left out or when the option is 0.  A nested schema, or a column with a dot in its name
    (pyarrow names a column's codec and encoding by its leaf path), is written as pyarrow writes
    it: the codec, no encodings chosen."""
    codec = opts.compression
    if table.num_rows == 0 or any(pa.types.is_nested(f.type) or "." in f.name for f in table.schema):
        return codec, None
    dict_cols = set(table.column_names) if use_dictionary is True else set(use_dictionary or ())
    int96 = bool((flavour or {}).get("use_deprecated_int96_timestamps"))
    comp, enc = {}, {}
    for name, col in zip(table.column_names, table.columns):
        comp[name] = codec
        if name in dict_cols:
            continue
        t = col.type
        if _is_byte_array(t):
            if not opts.delta_encoding:
                continue  # (PLAIN byte arrays: a length before each value; compressed as configured)
            enc[name] = "DELTA_LENGTH_BYTE_ARRAY"
            try_delta = False
        elif _stored_as_is(t, int96):
            try_delta = opts.delta_encoding and not pa.types.is_floating(t)
        else:
            continue
        if not (opts.min_compression_saving or try_delta):
            continue
        raw, packed, delta = _probe(col, opts, try_delta)
        if try_delta and raw and delta <= (1 - opts.min_compression_saving) * min(raw, packed):
            enc[name] = "DELTA_BINARY_PACKED"  # (compressed as configured)
        elif opts.min_compression_saving and raw and raw - packed < opts.min_compression_saving * raw:
            comp[name] = "none"
    compression = comp if "none" in comp.values() else codec
    return compression, enc or None


def _is_byte_array(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_large_string(t) or pa.types.is_large_binary(t)


def _stored_as_is(t: pa.DataType, int96: bool) -> bool:
    """Are a column's Arrow values of type ``t`` the bytes of its PLAIN Parquet values?"""
    if pa.types.is_integer(t):
        return t.bit_width >= 32
    if pa.types.is_timestamp(t):
        return not int96
    return pa.types.is_float32(t) or pa.types.is_float64(t) or pa.types.is_date32(t)


def _probe(col, opts: WriteOptions, delta: bool) -> tuple:
    """``(bytes, compressed bytes, DELTA_BINARY_PACKED bytes or 0)`` of the non-null values of
    :data:`COMPRESSION_PROBES` slices of ``col`` (a ChunkedArray of a fixed-width type: its values;
    of byte arrays: their bytes), each compressed alone as a page is; ``delta``: the bit-packed
    size estimated too (:func:`_delta_bytes`)."""
    level = opts.compression_level
    if level is not None and pa.Codec.supports_compression_level(opts.compression):
        codec = pa.Codec(opts.compression, compression_level=level)
    else:
        codec = pa.Codec(opts.compression)
    n, k = len(col), COMPRESSION_PROBE_ROWS
    starts = sorted({i * max(0, n - k) // max(1, COMPRESSION_PROBES - 1) for i in range(COMPRESSION_PROBES)})
    byte_array = _is_byte_array(col.type)
    width = 0 if byte_array else col.type.bit_width // 8
    raw = packed = est = 0
    for start in starts:
        arr = col.slice(start, k)
        arr = arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr
        if arr.null_count:
            arr = pc.drop_null(arr)
        if not len(arr):
            continue
        if byte_array:
            wide = pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type)
            offs = np.frombuffer(arr.buffers()[1], dtype=np.int64 if wide else np.int32)[
                arr.offset : arr.offset + len(arr) + 1
            ]
            body = memoryview(arr.buffers()[2] or b"")[int(offs[0]) : int(offs[-1])]
        else:
            body = memoryview(arr.buffers()[1])[arr.offset * width : (arr.offset + len(arr)) * width]
        raw += len(body)
        packed += len(codec.compress(body, asbytes=True)) if len(body) else 0
        if delta:
            est += _delta_bytes(np.frombuffer(body, dtype=np.int32 if width == 4 else np.int64))
    return raw, packed, est


def _delta_bytes(v: np.ndarray) -> int:
    """About the size of ``v`` encoded DELTA_BINARY_PACKED as pyarrow writes it (blocks of 128
    deltas, 4 miniblocks of 32, each bit-packed above its block's least delta; the header and each
    block's least delta as 2-byte varints)."""
    if len(v) < 2:
        return 16
    d = np.diff(v.astype(np.int64))
    if v.dtype == np.int32:  # (32-bit arithmetic wraps as the encoding's does)
        d = d.astype(np.int32).astype(np.int64)
    pad = (-len(d)) % 128
    if pad:
        d = np.concatenate([d, np.full(pad, d[-1])])
    blocks = d.reshape(-1, 128)
    high = (blocks - blocks.min(axis=1)[:, None]).view(np.uint64).reshape(-1, 4, 32).max(axis=2)
    bits = np.zeros(high.shape, dtype=np.int64)
    nz = high > 0
    bits[nz] = np.floor(np.log2(high[nz].astype(np.float64))).astype(np.int64) + 1
    return int(bits.sum() * 4 + len(blocks) * 6 + 16)


def parquet_flavour(files_schema: Iterable["pq.ParquetSchema"]) -> dict:
    """The writer arguments that keep the physical types of the files being rewritten: INT96
    timestamps, decimals stored as INT32 / INT64."""
    out = {}
    for s in files_schema:
        for i in range(len(s)):
            col = s.column(i)
            if col.physical_type == "INT96":
                out["use_deprecated_int96_timestamps"] = True
            if col.logical_type.type == "DECIMAL" and col.physical_type in ("INT32", "INT64"):
                out["store_decimal_as_integer"] = True
    return out


def write_file(
    sink,
    table: pa.Table,
    opts: WriteOptions,
    schema: Optional[pa.Schema] = None,
    sorting: Optional[List[str]] = None,
    flavour: Optional[Mapping] = None,
) -> None:
    """Write ``table`` to ``sink`` (a path or a writable file) as :mod:`this module
    <paimon_fast.tables.writer>` describes; ``sorting``: the columns it is sorted by (ascending,
    nulls first), named in the footer."""
    schema = schema or table.schema
    if table.schema != schema:
        table = table.cast(schema) if table.schema.names == schema.names else table.select(schema.names).cast(schema)
    kw = dict(flavour or {})
    use_dictionary = dictionary_columns(table, opts)
    compression, encodings = column_layout(table, opts, use_dictionary, flavour)
    if encodings:
        kw["column_encoding"] = encodings
    if opts.compression_level is not None:  # (pyarrow refuses a level for an uncompressed column)
        kw["compression_level"] = (
            opts.compression_level
            if isinstance(compression, str)
            else {c: opts.compression_level for c, codec in compression.items() if codec != "none"}
        )
    if sorting:
        kw["sorting_columns"] = [pq.SortingColumn(schema.get_field_index(c), False, True) for c in sorting]
    w = pq.ParquetWriter(
        sink,
        schema,
        compression=compression,
        write_page_index=True,
        data_page_size=1,  # a page closes after every write batch: pages of write_batch_size rows
        write_batch_size=page_rows_for(table, opts),
        dictionary_pagesize_limit=opts.dictionary_bytes,
        use_dictionary=use_dictionary,
        **kw,
    )
    try:
        w.write_table(table, row_group_size=opts.row_group_rows)
    finally:
        w.close()


# ---------------------------------------------------------------- statistics


def _stat_kind(t: pa.DataType) -> Optional[str]:
    """The kind of statistics the catalog records of a column of type ``t`` (None: none): as the
    files' own (:func:`paimon_fast.tables.stats.stat_kind`), but no binary bounds (JSON holds text)."""
    kind = stat_kind(t.value_type if pa.types.is_dictionary(t) else t)
    return None if kind == "bytes" else kind


def column_stats(col) -> Optional[dict]:
    """``{"min", "max", "nulls"}`` of a column (a bound left out where it cannot be recorded), or
    None for a type whose statistics are not kept."""
    kind = _stat_kind(col.type)
    if kind is None:
        return None
    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    out = {"nulls": int(col.null_count)}
    if col.null_count == len(col):
        return out
    mm = pc.min_max(col)
    lo, hi = mm["min"].as_py(), mm["max"].as_py()
    if lo is None or hi is None:
        return out
    if kind == "float":
        lo, hi = float(lo), float(hi)
        if not (math.isfinite(lo) and math.isfinite(hi)):
            return out  # (JSON has no NaN or infinity)
    elif kind == "str":
        if len(lo.encode("utf-8")) > MAX_STAT_BYTES or len(hi.encode("utf-8")) > MAX_STAT_BYTES:
            return out
    else:
        lo, hi = int(lo), int(hi)
    out["min"], out["max"] = lo, hi
    return out


def table_stats(table: pa.Table, columns: Iterable[str]) -> Dict[str, dict]:
    """:func:`column_stats` of the ``columns`` ``table`` has (those whose statistics are kept)."""
    out = {}
    for c in columns:
        if c in table.schema.names:
            s = column_stats(table.column(c))
            if s is not None:
                out[c] = s
    return out


class StatsAccumulator:
    """:func:`column_stats` of a column read in batches (a build streams each file)."""

    def __init__(self):
        self.kept = True  # the type's statistics are kept
        self.nulls = 0
        self.lo = self.hi = None
        self.bounded = True  # every batch with values gave its bounds

    def add(self, col) -> None:
        s = column_stats(col)
        if s is None:
            self.kept = False
            return
        self.nulls += s["nulls"]
        if s["nulls"] == len(col):
            return
        if "min" not in s:
            self.bounded = False
            return
        self.lo = s["min"] if self.lo is None else min(self.lo, s["min"])
        self.hi = s["max"] if self.hi is None else max(self.hi, s["max"])

    def result(self) -> Optional[dict]:
        if not self.kept:
            return None
        out = {"nulls": self.nulls}
        if self.bounded and self.lo is not None:
            out["min"], out["max"] = self.lo, self.hi
        return out


# what a catalog entry says of the one version of its data file it records (beside its identity,
# rows and file index): a commit that records another version of the file drops them
VERSION_FACTS = ("stats", "clustered", "row_groups")


def entry_stats(entry: Optional[Mapping], column: str, rows: int) -> Optional[ChunkStats]:
    """The statistics a catalog entry keeps of ``column``, as the
    :class:`~paimon_fast.tables.stats.ChunkStats` of the whole file (bounds in the domain
    :func:`~paimon_fast.tables.stats.leaf_answer` compares: strings as UTF-8 bytes); None: none."""
    raw = (entry or {}).get("stats")
    s = raw.get(column) if isinstance(raw, dict) else None
    if not isinstance(s, dict):
        return None
    nulls = s.get("nulls")
    nulls = int(nulls) if isinstance(nulls, int) and not isinstance(nulls, bool) and nulls >= 0 else None
    lo, hi = s.get("min"), s.get("max")
    if isinstance(lo, str) and isinstance(hi, str):
        lo, hi = lo.encode("utf-8"), hi.encode("utf-8")
    elif (
        not (isinstance(lo, (int, float)) and isinstance(hi, (int, float)))
        or isinstance(lo, bool)
        or isinstance(hi, bool)
    ):
        lo = hi = None
    return ChunkStats(int(rows), nulls, lo, hi)


def clustered_columns(entry: Optional[Mapping]) -> tuple:
    """The columns a catalog entry says its file is clustered by (written by an optimize)."""
    c = (entry or {}).get("clustered")
    by = c.get("by") if isinstance(c, dict) else None
    return tuple(by) if isinstance(by, list) else ()
