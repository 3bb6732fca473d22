"""Global index types by Paimon's index type name: one :class:`GlobalIndexType` record per
type, :func:`register` ed by the module that defines it (the built-in ``bitmap``,
``multivalue`` and ``btree``: :mod:`.builtin`, loaded on first use).  Everything that
dispatches on a global index type asks :func:`get` (the factory's ``writer`` / ``reader``,
the Paimon table build and answers, the top-N, a Parquet dataset's global index), so a new
type is its own module plus one ``register(GlobalIndexType(...))``.

Where a record names something of a layer above this package (``paimon/``, ``tables/``,
``spark/``) it gives it as a ``"module:attr"`` string, loaded when first used
(:func:`resolve`), so this package never imports those at import time.
"""

from __future__ import annotations

import importlib
import re
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional, Tuple, Union

from ..errors import UnknownGlobalIndexTypeError, UnsupportedTypeError

# the module that registers the built-in types when imported (by name: no import edge)
_BUILTIN_MODULE = "paimon_fast.globalindex.builtin"

_REGISTRY: Dict[str, "GlobalIndexType"] = {}  # in registration order
_LOCK = threading.RLock()
_loaded = False

Ref = Union[str, Callable[..., Any], type, None]  # an object, or "module:attr" loaded on first use


def resolve(ref: Ref):
    """The object ``ref`` names: itself, or for a ``"package.module:attr"`` string that attribute
    of that module (imported now)."""
    if not isinstance(ref, str):
        return ref
    mod, sep, attr = ref.partition(":")
    if not sep:
        raise ValueError(f"not a 'module:attr' reference: {ref!r}")
    obj = importlib.import_module(mod)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


_ARRAY = re.compile(r"^\s*ARRAY\s*<.*>\s*(NOT\s+NULL)?\s*$", re.IGNORECASE | re.S)


@dataclass(frozen=True)
class GlobalIndexType:
    """What a global index type registers.

    * ``name``: Paimon's index type name (the index manifest's ``index_type``, file name prefix).
    * ``writer(dtype, options)``: a one-file writer (``write_batch(values, row_ids)``,
      ``finish() -> (file bytes or Chunks or None, meta bytes)``, ``row_count``).
    * ``reader(dtype, data_or_path, options, total_row_count)``: a one-file reader (``evaluate``).
    * ``index``: the class over many files of one row range (a Paimon table's range, a Parquet
      dataset's index): ``index(files=[(source, meta bytes)], dtype, options, total_row_count=...,
      max_workers=...)``, a context manager with ``evaluate(leaf)`` / ``visit(leaf)`` /
      ``answers_exactly(leaf)`` / ``close()`` (``paimon/globalindex.py``'s answers, ``tables/``).
    * ``option_prefix``: the table options handed to the writer (``bitmap-index.``).
    * ``column``: the columns it indexes: ``"scalar"`` (atomic types), ``"array"`` (``ARRAY<T>``) or
      ``"any"``.
    * ``scalar``: a scalar index Java / pypaimon answer predicates with (a data-evolution scan defers
      to pypaimon when it finds one it cannot read).
    * ``detect(path) -> bool``: does a local file look like one of this type (its footer magic).
    * ``top_n``: its ``index`` class answers ``top_n(limit, desc, nulls_first)`` (:mod:`paimon_fast.paimon.topn`).
    * Build hooks of a Paimon table's build (in process and on Spark), all optional: ``group(writer,
      values, local row ids) -> (Groups, rows)`` one piece of a row range, ``cut(Groups, writer,
      max records or None) -> [(file bytes, meta, row count or None for the range's rows)]``;
      ``sorted``: Java's identity-key sorted build (a new file every records-per-range x 1.2 records,
      each data file's rows grouped as read); ``sharded``: the range cut at multiples of
      records-per-range row ids, one file per shard.  Without ``group`` / ``cut`` a range is built
      by ``writer`` (``write_batch`` of its rows, ``finish``): one file per range, never split.
    """

    name: str
    writer: Ref
    reader: Ref
    index: Ref
    option_prefix: str = ""
    column: str = "scalar"
    scalar: bool = True
    detect: Ref = None
    top_n: bool = False
    group: Ref = None
    cut: Ref = None
    sorted: bool = False
    sharded: bool = False

    def __post_init__(self):
        if self.column not in ("scalar", "array", "any"):
            raise ValueError(f"global index type {self.name!r}: column must be scalar, array or any")

    def new_writer(self, dtype, options=None):
        return resolve(self.writer)(dtype, options)

    def new_reader(self, dtype, data_or_path, options=None, total_row_count=None):
        return resolve(self.reader)(dtype, data_or_path, options, total_row_count)

    def index_class(self):
        """The class over many files (``index`` resolved)."""
        return resolve(self.index)

    def options(self, options) -> Dict[str, str]:
        """The options of ``options`` this type's files take (those under ``option_prefix``)."""
        p = self.option_prefix
        return {k: v for k, v in dict(options or {}).items() if p and k.startswith(p)}

    def accepts(self, dtype) -> bool:
        """Can it index a column of Paimon type ``dtype`` (by shape: ARRAY or not)?"""
        if self.column == "any":
            return True
        return bool(_ARRAY.match(str(dtype))) == (self.column == "array")

    def check_column(self, dtype, column: str = "") -> None:
        """Raise :class:`~paimon_fast.errors.UnsupportedTypeError` unless :meth:`accepts`."""
        if not self.accepts(dtype):
            what = "an ARRAY column" if self.column == "array" else "a column of an atomic type"
            where = f" {column!r}" if column else ""
            raise UnsupportedTypeError(f"a {self.name} global index needs {what}; column{where} is {dtype}")

    def is_file(self, path) -> bool:
        return self.detect is not None and bool(resolve(self.detect)(path))

    @property
    def builds_in_pieces(self) -> bool:
        """Can a range be built from pieces grouped apart (``group`` and ``cut`` given)?"""
        return self.group is not None and self.cut is not None


def _load_builtins() -> None:
    global _loaded
    if _loaded:
        return
    with _LOCK:
        if _loaded:
            return
        _loaded = True
        try:
            importlib.import_module(_BUILTIN_MODULE)
        except BaseException:
            _loaded = False
            raise


def register(t: GlobalIndexType, replace: bool = False) -> GlobalIndexType:
    """Register ``t`` under ``t.name`` (another registration of that name raises unless ``replace``)."""
    if not isinstance(t, GlobalIndexType):
        raise TypeError(f"register() takes a GlobalIndexType, got {type(t).__name__}")
    name = t.name
    if not name or name != name.strip().lower():
        raise ValueError(f"a global index type name is lower case without spaces, got {name!r}")
    with _LOCK:
        if name in _REGISTRY and not replace and _REGISTRY[name] is not t:
            raise ValueError(f"global index type {name!r} is already registered")
        _REGISTRY[name] = t
    return t


def unregister(name: str) -> Optional[GlobalIndexType]:
    """Forget the type registered as ``name`` (returns it, or None)."""
    with _LOCK:
        return _REGISTRY.pop(name, None)


@contextmanager
def registered(t: GlobalIndexType):
    """``with registered(GlobalIndexType(...)):`` the type is known inside the block only (tests)."""
    _load_builtins()
    before = _REGISTRY.get(t.name)
    register(t, replace=True)
    try:
        yield t
    finally:
        with _LOCK:
            if before is None:
                _REGISTRY.pop(t.name, None)
            else:
                _REGISTRY[t.name] = before


def names() -> Tuple[str, ...]:
    """The registered type names, in registration order (the built-ins first)."""
    _load_builtins()
    return tuple(_REGISTRY)


def get(name) -> GlobalIndexType:
    """The type registered as ``name``; :class:`~paimon_fast.errors.UnknownGlobalIndexTypeError`
    (a ``ValueError`` and a ``KeyError``) for a name nobody registered."""
    _load_builtins()
    t = _REGISTRY.get(name) if isinstance(name, str) else None
    if t is None:
        raise UnknownGlobalIndexTypeError(f"unknown global index type {name!r} (known: {', '.join(_REGISTRY)})")
    return t


def detect(path) -> Optional[str]:
    """The name of the first registered type whose ``detect`` recognises the file, or None."""
    for n in names():
        if get(n).is_file(path):
            return n
    return None


__all__ = ["GlobalIndexType", "register", "unregister", "registered", "get", "names", "detect", "resolve"]
