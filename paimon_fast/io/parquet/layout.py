"""A Parquet file's layout as the native reader needs it, derived once from its footer and
kept with it: per top-level column its leaf, physical type, definition level and
:class:`~paimon_fast.io.parquet.arrowmap.Mapping` (or why pyarrow reads it), per row group and
leaf the column chunk's place, codec and offset index (or why pyarrow reads it).
:mod:`paimon_fast.io.parquet.native` hands these names on."""

from __future__ import annotations

from typing import Dict, NamedTuple, Optional, Tuple

import numpy as np
import pyarrow as pa

from .arrowmap import _CODECS, _HANDLED_ENCODINGS, Mapping, _kernel, mapping
from .footer import _MAX_METADATA, _Footer, UnsupportedChunk, _footer_bytes, _schemas


# ---------------------------------------------------------------- a file's layout, kept with its footer
class _Column(NamedTuple):
    name: str
    field: pa.Field  # pyarrow's field (its stored Arrow schema applied)
    leaf: int  # -1: not flat
    physical: int
    type_len: int
    max_def: int
    mapping: Optional[Mapping]
    why: str  # why mapping is None


class _Layout:
    """What the native reader needs of a file, derived once from its footer: per top-level
    column its leaf, physical type, definition level and :class:`Mapping`; per row group and
    leaf ``[start, length, codec, values, offset index offset, its length]`` (``ok`` False:
    the chunk is read by pyarrow, ``chunk_why`` says why)."""

    def __init__(self, fo: _Footer):
        try:
            origin = fo.origin_schema()
        except UnsupportedChunk:
            origin = None
            self.origin_ok = False
        else:
            self.origin_ok = True
        flat = [f for f in fo.fields if f.flat]
        plain = typed = None
        if fo.fields:
            plain, typed = _schemas(
                _footer_bytes(fo, list(fo.fields), [], 0, None), _footer_bytes(fo, list(fo.fields), [], 0, origin)
            )
        self.schema = typed
        self.columns: Dict[str, _Column] = {}
        self.names = [f.name for f in fo.fields]
        at = 1
        els = fo.elements
        for f in fo.fields:
            el = els[at]
            at += f.elements
            if typed is None or len(typed) != len(fo.fields):
                self.columns.setdefault(f.name, _Column(f.name, None, -1, -1, 0, 0, None, "schema not readable"))
                continue
            fld = typed.field(f.index)
            if not f.flat:
                col = _Column(f.name, fld, -1, -1, 0, 0, None, "nested column")
            else:
                physical = el.get(1)
                type_len = el.get(2) if isinstance(el.get(2), int) else 0
                rep = el.get(3)
                if not isinstance(physical, int) or rep not in (0, 1):
                    col = _Column(f.name, fld, f.leaves.start, -1, 0, 0, None, "column type not handled")
                else:
                    m = mapping(physical, type_len, plain.field(f.index).type, fld.type)
                    col = _Column(
                        f.name,
                        fld,
                        f.leaves.start,
                        physical,
                        type_len,
                        1 if rep == 1 else 0,
                        m,
                        "" if m is not None else f"type {fld.type} not decoded natively",
                    )
            if f.name in self.columns:  # a name two fields share: pyarrow decides
                col = col._replace(mapping=None, why="duplicate column names", leaf=-1)
            elif not self.origin_ok:  # a stored Arrow schema we cannot read: pyarrow may (its types decide)
                col = col._replace(mapping=None, why="ARROW:schema not readable here")
            self.columns[f.name] = col
        del flat
        nrg, nleaf = len(fo.row_groups), fo.leaf_count
        self.chunks = np.full((nrg, max(nleaf, 1), 6), -1, dtype=np.int64)
        self.ok = np.zeros((nrg, max(nleaf, 1)), dtype=bool)
        self.chunk_why: Dict[Tuple[int, int], str] = {}
        for g, rg in enumerate(fo.row_groups):
            for leaf, cc in enumerate(rg[1]):
                why = self._chunk(fo, g, leaf, cc)
                if why:
                    self.chunk_why[(g, leaf)] = why
                else:
                    self.ok[g, leaf] = True

    def _chunk(self, fo: _Footer, g: int, leaf: int, cc: dict) -> str:
        if cc.get(1) is not None:
            return "column chunk in another file"
        if cc.get(8) is not None or cc.get(9) is not None:
            return "encrypted column"
        meta = cc.get(3)
        if not isinstance(meta, dict) or not all(isinstance(meta.get(k), int) for k in (1, 4, 5, 7, 9)):
            return "column chunk without metadata"
        encs = meta.get(2)
        if not isinstance(encs, list) or any(e not in _HANDLED_ENCODINGS for e in encs):
            return "encoding not decoded natively"
        codec = meta[4]
        if not _kernel().codec_available(codec):
            return f"codec {_CODECS.get(codec, codec)} not available natively"
        start = meta[9]
        d = meta.get(11)
        if isinstance(d, int) and 4 <= d < start:
            start = d
        n = meta[7]
        if start < 4 or n <= 0 or start + n > fo.footer_start:
            return "column chunk outside the file"
        oi_off, oi_len = cc.get(4), cc.get(5)
        if not (isinstance(oi_off, int) and isinstance(oi_len, int) and 0 < oi_len <= _MAX_METADATA):
            oi_off, oi_len = -1, 0
        elif oi_off < 4 or oi_off + oi_len > fo.file_size:
            oi_off, oi_len = -1, 0
        self.chunks[g, leaf] = (start, n, codec, meta[5], oi_off, oi_len)
        return ""


def _layout(fo: _Footer) -> _Layout:
    got = getattr(fo, "native", None)
    if got is None:
        got = _Layout(fo)
        fo.native = got
    return got
