"""paimon_fast: Apache Paimon's index formats, byte-compatible with Java, with
compiled kernels and a PySpark pipeline.

    import paimon_fast as pf
    w = pf.fileindex.writer("bloom-filter", "BIGINT", {"items": "1000", "fpp": "0.01"})
    w.write_batch(pa.array([1, 2, None])); data = w.finish()
    r = pf.fileindex.reader("bloom-filter", "BIGINT", data)
    r.evaluate(pf.field("x") == 5)                     # pf.REMAIN or pf.SKIP
    blob = pf.FileIndexFormat.write({"x": {"bloom-filter": data}})
    pf.FileIndexFormat.open(blob, {"x": "BIGINT"}).evaluate(pf.field("x") == 5)
"""

from . import compat as _compat
from . import fileindex
from .errors import ColumnNotFoundError, IndexFormatError, IndexTooLargeError, InvalidArgumentError
from .errors import LiteralTypeError, MissingDependencyError, NotFoundError, OptionError, PaimonFastError
from .errors import PredicateError, UnknownIndexTypeError, UnsupportedTypeError
from .fileindex import FileIndexFormat
from .core.predicate import And, Field, Leaf, Or, Predicate, TopN, field
from .core.result import REMAIN, SKIP, UNSUPPORTED, BitmapResult, FileIndexResult
from .core.types import DataType
from .io.pool import set_threads, threads

__version__ = "0.1.0"

_compat.install()  # old import paths (paimon_fast.fs, paimon_fast.parquet, ...) until 0.2.0

# attribute -> module, loaded on first use (and Spark only when asked for)
_SUBPACKAGES = {
    n: n for n in ("globalindex", "tableindex", "hudi", "paimon", "spark", "reference", "cli", "tables", "read")
}
_SUBPACKAGES["roaring"] = "core.roaring"


def __getattr__(name):
    if name in _SUBPACKAGES:
        import importlib

        return importlib.import_module(f"{__name__}.{_SUBPACKAGES[name]}")
    if f"{__name__}.{name}" in _compat.MOVED:  # pf.predicate, pf.fs, ...: old names, with a warning
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "threads",
    "set_threads",
    "fileindex",
    "FileIndexFormat",
    "field",
    "Field",
    "Predicate",
    "Leaf",
    "And",
    "Or",
    "TopN",
    "REMAIN",
    "SKIP",
    "UNSUPPORTED",
    "BitmapResult",
    "FileIndexResult",
    "DataType",
    "PaimonFastError",
    "IndexFormatError",
    "UnsupportedTypeError",
    "UnknownIndexTypeError",
    "OptionError",
    "MissingDependencyError",
    "PredicateError",
    "ColumnNotFoundError",
    "LiteralTypeError",
    "IndexTooLargeError",
    "InvalidArgumentError",
    "NotFoundError",
]
