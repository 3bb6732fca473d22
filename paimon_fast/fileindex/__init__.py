"""File index formats, registered by Paimon's index type name.

    w = writer("bloom-filter", "BIGINT", {"items": "1000", "fpp": "0.01"})
    w.write_batch(pa.array([1, 2, None])); data = w.finish()
    r = reader("bloom-filter", "BIGINT", data)
    r.evaluate(field("x") == 5)        # REMAIN / SKIP / BitmapResult

Each format lives in its own module and registers an :class:`IndexFactory`
with :func:`register`; the built-in ones are imported on first use, so
``writer("bitmap", ...)`` works without importing anything else.
"""

from .base import EmptyFileIndexReader, FileIndexReader, FileIndexWriter, evaluate_tree
from .format import FileIndexFormat
from .options import Options
from .registry import IndexFactory, get_factory, index_types, reader, register, writer

__all__ = [
    "FileIndexWriter",
    "FileIndexReader",
    "EmptyFileIndexReader",
    "IndexFactory",
    "Options",
    "register",
    "get_factory",
    "index_types",
    "writer",
    "reader",
    "evaluate_tree",
    "FileIndexFormat",
]
