"""``paimon-fast inspect`` for bitmap global index files (footer magic "BGIX") and BTree ones

paimon-fast inspect events/_global_index/country/bitmap-<build>-00000.index   # keys typed
paimon-fast inspect gi-0.index --row-type x=INT     # keys decoded as the column's type

The file does not record its key type.  Without ``--row-type`` it is taken from where the file
lives: a Parquet dataset's global index listing (``index.json`` beside the file), or a Paimon
table's index manifest (the file's indexed field id) and schema.  Elsewhere the keys are
shown as hex.
"""

from __future__ import annotations

import glob
import json
import os
import re
from typing import Optional, Tuple

from ..cli import inspector, parse_row_type
from . import BitmapIndexFile, KeyCodec, registry


def _key_type(path: str, args) -> Tuple[Optional[str], str]:
    """``(type, where it came from)`` of a global index file's keys: ``--row-type``'s first
    entry, else the dataset listing or the Paimon table beside the file, else ``(None, "")``."""
    row_type = parse_row_type(getattr(args, "row_type", "") or "")
    if row_type:
        return next(iter(row_type.values())), "--row-type"
    for find in (_dataset_listing_type, _paimon_table_type):
        try:
            found = find(path)
        except Exception:  # noqa: BLE001 - a guess that fails leaves the keys as hex
            found = None
        if found:
            return found
    return None, ""


def _element(t: str) -> str:
    """The key type of an index over a column of type ``t`` (a multivalue index keys elements)."""
    m = re.match(r"^\s*ARRAY\s*<(.*)>\s*(NOT\s+NULL)?\s*$", t, re.IGNORECASE | re.S)
    return m.group(1).strip() if m else t


def _dataset_listing_type(path: str):
    """The key type in the dataset's listing beside the file: its newest version
    (``_commits/index.json.<version>``), or the single ``index.json`` of older datasets."""
    here = os.path.dirname(os.path.abspath(path))
    versions = os.path.join(here, "_commits")
    listing = None
    if os.path.isdir(versions):
        found = sorted(n for n in os.listdir(versions) if n.startswith("index.json.") and n[11:].isdigit())
        listing = os.path.join(versions, found[-1]) if found else None
    if listing is None:
        listing = os.path.join(here, "index.json")
    if not os.path.isfile(listing):
        return None
    with open(listing, encoding="utf-8") as f:
        d = json.load(f)
    names = [x.get("file") for x in d.get("files") or []]
    if os.path.basename(path) not in names or not d.get("type"):
        return None
    return _element(d["type"]), f"the dataset's global index listing of column {d.get('column')!r}"


def _paimon_type_text(t) -> str:
    """A Paimon schema JSON type (a string, or a dict for ARRAY / MAP / ROW) as type text."""
    if isinstance(t, str):
        return t
    kind = t.get("type", "")
    if kind.startswith("ARRAY"):
        return f"ARRAY<{_paimon_type_text(t['element'])}>"
    if kind.startswith("MAP"):
        return f"MAP<{_paimon_type_text(t['key'])}, {_paimon_type_text(t['value'])}>"
    return kind


def _paimon_table_type(path: str):
    index_dir = os.path.dirname(os.path.abspath(path))
    table = os.path.dirname(index_dir)
    if os.path.basename(index_dir) != "index" or not os.path.isdir(os.path.join(table, "schema")):
        return None
    try:
        import fastavro
    except ImportError:  # pypaimon brings it; without it the keys stay hex
        return None
    name = os.path.basename(path)
    field_id = None
    for m in sorted(glob.glob(os.path.join(table, "manifest", "index-manifest-*"))):
        with open(m, "rb") as f:
            for r in fastavro.reader(f):
                g = r.get("_GLOBAL_INDEX")
                if r.get("_FILE_NAME") == name and g:
                    field_id = g.get("_INDEX_FIELD_ID")
                    break
        if field_id is not None:
            break
    if field_id is None:
        return None
    schemas = glob.glob(os.path.join(table, "schema", "schema-*"))
    for sp in sorted(schemas, key=lambda p: int(p.rsplit("-", 1)[1]) if p.rsplit("-", 1)[1].isdigit() else -1)[::-1]:
        with open(sp, encoding="utf-8") as f:
            fields = json.load(f).get("fields") or []
        for fl in fields:
            if fl.get("id") == field_id:
                return _element(_paimon_type_text(fl["type"])), f"the Paimon table's field {fl['name']!r}"
    return None


def _typed(d: dict, dtype: Optional[str], source: str) -> dict:
    if dtype is not None and source and source != "--row-type":
        out = {}
        for k, v in d.items():
            out[k] = v
            if k == "type":
                out["type_from"] = source
        return out
    return d


@inspector("bitmap global index")
def describe(path, args) -> dict:
    dtype, source = _key_type(path, args)
    f = BitmapIndexFile(KeyCodec(dtype or "STRING"), path)
    try:
        d = _typed(f.describe(), dtype, source)
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


# which file is which: the registered types' footer checks (the bitmap footer for multivalue too)
describe.detect(lambda path: registry.detect(path) in ("bitmap", "multivalue"))


@inspector("btree global index")
def describe_btree(path, args) -> dict:
    """``paimon-fast inspect`` for a BTree global index file (footer magic 0x50425449): footer,
    rows, distinct keys, nulls, data blocks, compression per block, sizes, first / last key
    (typed as :func:`_key_type` finds the type, else as hex)."""
    from .btree import BTreeIndexFile

    dtype, source = _key_type(path, args)
    f = BTreeIndexFile(KeyCodec(dtype or "STRING"), path)
    try:
        d = _typed(f.describe(), dtype, source)
        if dtype is None:
            d["type"] = "unknown (pass --row-type name=TYPE to decode keys)"
            first, last = f.first_key(), f.last_key()
            d["first_key"] = None if first is None else first.hex()
            d["last_key"] = None if last is None else last.hex()
        return d
    finally:
        f.close()


describe_btree.detect(lambda path: registry.detect(path) == "btree")
