"""Index options by Paimon's own names, with Paimon's parsing rules.

Per-index options are the short keys Paimon hands an index (``items``,
``fpp``, ``index-block-size``, ``version``...).  Table options use the long
names (``file-index.bloom-filter.columns``, ``file-index.bloom-filter.<col>.fpp``);
:func:`indexes_from_table_options` turns those into the per-column map.
"""

from __future__ import annotations

import re
from typing import Dict, Mapping

from ..errors import OptionError

_MEM_RE = re.compile(r"^\s*(\d+)\s*([a-zA-Z]*)\s*$")
_MEM_UNITS = {
    "": 1,
    "b": 1,
    "bytes": 1,
    "k": 1 << 10,
    "kb": 1 << 10,
    "kibibytes": 1 << 10,
    "m": 1 << 20,
    "mb": 1 << 20,
    "mebibytes": 1 << 20,
    "g": 1 << 30,
    "gb": 1 << 30,
    "gibibytes": 1 << 30,
    "t": 1 << 40,
    "tb": 1 << 40,
    "tebibytes": 1 << 40,
}


def parse_memory_size(text) -> int:
    """Paimon ``MemorySize.parse``: ``"16kb"``, ``"64 b"``, ``"1mb"`` (1024-based)."""
    if isinstance(text, int):
        return text
    m = _MEM_RE.match(str(text))
    if not m or m.group(2).lower() not in _MEM_UNITS:
        raise OptionError(f"cannot parse memory size {text!r}")
    return int(m.group(1)) * _MEM_UNITS[m.group(2).lower()]


class Options:
    """Read-only string options with typed getters (values may be str or numbers)."""

    def __init__(self, options: Mapping | None = None):
        self._d = {str(k): v for k, v in dict(options or {}).items()}

    def get(self, key, default=None):
        return self._d.get(key, default)

    def get_int(self, key, default: int) -> int:
        v = self._d.get(key)
        if v is None:
            return default
        try:
            return int(str(v).strip())
        except ValueError:
            raise OptionError(f"option {key!r} must be an integer, got {v!r}") from None

    def get_float(self, key, default: float) -> float:
        v = self._d.get(key)
        if v is None:
            return default
        try:
            return float(str(v).strip())
        except ValueError:
            raise OptionError(f"option {key!r} must be a number, got {v!r}") from None

    def get_memory_size(self, key, default) -> int:
        v = self._d.get(key)
        return parse_memory_size(default if v is None else v)

    def get_bool(self, key, default: bool) -> bool:
        v = self._d.get(key)
        if v is None:
            return default
        s = str(v).strip().lower()
        if s in ("true", "1", "yes"):
            return True
        if s in ("false", "0", "no"):
            return False
        raise OptionError(f"option {key!r} must be true or false, got {v!r}")

    def as_dict(self) -> Dict[str, str]:
        return {k: str(v) for k, v in self._d.items()}

    def __repr__(self):
        return f"Options({self._d!r})"


FILE_INDEX_PREFIX = "file-index."
IN_MANIFEST_THRESHOLD = "file-index.in-manifest-threshold"
DEFAULT_IN_MANIFEST_THRESHOLD = 500


def indexes_from_table_options(table_options: Mapping) -> Dict[str, Dict[str, Dict[str, str]]]:
    """``{column: {index_type: {option: value}}}`` from Paimon table options.

    ``file-index.<type>.columns = a,b`` names the columns; ``file-index.<type>.<col>.<key>``
    sets a column's option and ``file-index.<type>.<key>`` (a key that is not a
    column name) sets it for every column of that type, the column's own value winning.
    """
    opts = {str(k): str(v) for k, v in table_options.items()}
    out: Dict[str, Dict[str, Dict[str, str]]] = {}
    for key, value in opts.items():
        if not key.startswith(FILE_INDEX_PREFIX) or not key.endswith(".columns"):
            continue
        itype = key[len(FILE_INDEX_PREFIX) : -len(".columns")]
        if not itype or "." in itype:
            continue
        cols = [c.strip() for c in value.split(",") if c.strip()]
        type_prefix = f"{FILE_INDEX_PREFIX}{itype}."
        shared = {}
        for k2, v2 in opts.items():
            if k2.startswith(type_prefix) and k2 != key:
                rest = k2[len(type_prefix) :]
                if not any(rest.startswith(c + ".") for c in cols):
                    shared[rest] = v2
        for c in cols:
            col_opts = dict(shared)
            cp = f"{type_prefix}{c}."
            for k2, v2 in opts.items():
                if k2.startswith(cp):
                    col_opts[k2[len(cp) :]] = v2
            out.setdefault(c, {})[itype] = col_opts
    return out
