"""``paimon-fast inspect`` for bitmap global index files (footer magic "BGIX") and BTree ones

paimon-fast inspect gi-0.index                     # structure, keys shown as hex
paimon-fast inspect gi-0.index --row-type x=INT     # keys decoded as the column's type
"""

from __future__ import annotations

from ..cli import _parse_row_type, inspector
from . import BitmapIndexFile, KeyCodec, is_btree_index, is_global_index


@inspector("bitmap global index")
def describe(path, args) -> dict:
    row_type = _parse_row_type(getattr(args, "row_type", "") or "")
    dtype = next(iter(row_type.values())) if row_type else None
    f = BitmapIndexFile(KeyCodec(dtype or "STRING"), path)
    try:
        d = f.describe()
        if dtype is None:
            d["type"] = "unknown (pass --row-type name=TYPE to decode keys)"
            u8, ks, kl, _, _ = f.index()
            raw = u8.tobytes()
            d["first_key"] = raw[ks[0] : ks[0] + kl[0]].hex() if len(ks) else None
            last = None
            if len(ks):
                b = f.block(len(ks) - 1)
                if len(b[1]):
                    braw = b[0].tobytes()
                    last = braw[b[1][-1] : b[1][-1] + b[2][-1]].hex()
            d["last_key"] = last
            d.pop("written_in_key_order", None)
        return d
    finally:
        f.close()


describe.detect(is_global_index)


@inspector("btree global index")
def describe_btree(path, args) -> dict:
    """``paimon-fast inspect`` for a BTree global index file (footer magic 0x50425449): footer,
    rows, distinct keys, nulls, data blocks, compression per block, sizes, first / last key
    (as hex unless ``--row-type name=TYPE`` says how to decode them)."""
    from .btree import BTreeIndexFile

    row_type = _parse_row_type(getattr(args, "row_type", "") or "")
    dtype = next(iter(row_type.values())) if row_type else None
    f = BTreeIndexFile(KeyCodec(dtype or "STRING"), path)
    try:
        d = f.describe()
        if dtype is None:
            d["type"] = "unknown (pass --row-type name=TYPE to decode keys)"
            first, last = f.first_key(), f.last_key()
            d["first_key"] = None if first is None else first.hex()
            d["last_key"] = None if last is None else last.hex()
        return d
    finally:
        f.close()


describe_btree.detect(is_btree_index)
