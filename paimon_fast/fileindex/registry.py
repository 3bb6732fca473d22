"""File index formats by Paimon's index type name: each format's module registers an
:class:`IndexFactory` with :func:`register`; the built-in ones are imported on first use
(:func:`get_factory`), so ``writer("bitmap", ...)`` works without importing anything else."""

from __future__ import annotations

import importlib
from typing import Dict

from ..errors import IndexFormatError, UnknownIndexTypeError
from ..io.source import Source, as_source
from ..core.types import DataType
from .base import FileIndexReader, FileIndexWriter
from .options import Options

# name -> module that registers it when imported
_BUILTIN_MODULES = {
    "bloom-filter": "paimon_fast.fileindex.bloom",
    "bitmap": "paimon_fast.fileindex.bitmap",
    "range-bitmap": "paimon_fast.fileindex.range_bitmap",
    "bsi": "paimon_fast.fileindex.bsi",
}

_REGISTRY: Dict[str, "IndexFactory"] = {}


class IndexFactory:
    """What a format registers: its name, writer and reader classes, and the
    types it supports (``check_type`` raises UnsupportedTypeError)."""

    name = "?"
    writer_class = FileIndexWriter
    reader_class = FileIndexReader

    def check_type(self, dtype: DataType) -> None:
        pass

    def writer(self, dtype: DataType, options: Options) -> FileIndexWriter:
        self.check_type(dtype)
        return self.writer_class(dtype, options)

    def reader(self, dtype: DataType, source: Source, options: Options) -> FileIndexReader:
        self.check_type(dtype)
        try:
            return self.reader_class(dtype, source, options)
        except IndexFormatError as e:
            if type(e) is not IndexFormatError:  # a kind of its own (a checksum mismatch): not the type's doing
                raise
            # the formats do not record the column type: bytes written for another type read as corrupt
            raise IndexFormatError(
                f"{e.what} (reading {self.name} index bytes as a {dtype} column: is that the "
                "type the index was written for?)",
                e.offset,
            ) from None


def register(factory_cls):
    """Class decorator: register an :class:`IndexFactory` subclass under its ``name``."""
    inst = factory_cls()
    _REGISTRY[inst.name] = inst
    return factory_cls


def get_factory(index_type: str) -> IndexFactory:
    f = _REGISTRY.get(index_type)
    if f is None and index_type in _BUILTIN_MODULES:
        mod = _BUILTIN_MODULES[index_type]
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as e:
            if e.name != mod:
                raise
        f = _REGISTRY.get(index_type)
    if f is None:
        raise UnknownIndexTypeError(
            f"unknown file index type {index_type!r}; known: {sorted(set(_REGISTRY) | set(_BUILTIN_MODULES))}"
        )
    return f


def index_types():
    """Names of the index types that can be loaded."""
    out = []
    for name in sorted(set(_REGISTRY) | set(_BUILTIN_MODULES)):
        try:
            get_factory(name)
            out.append(name)
        except UnknownIndexTypeError:
            pass
    return out


def writer(index_type: str, dtype, options=None) -> FileIndexWriter:
    """A writer for ``index_type`` over a column of Paimon type ``dtype``."""
    return get_factory(index_type).writer(DataType.parse(dtype), Options(options))


def reader(index_type: str, dtype, data, options=None) -> FileIndexReader:
    """A reader over index bytes given as bytes, a path, a binary file or a Source."""
    return get_factory(index_type).reader(DataType.parse(dtype), as_source(data), Options(options))
