"""The one exception family of paimon_fast.

Every error raised for bad index bytes is an :class:`IndexFormatError` whose
message says what was wrong and at which offset, so a user can tell a corrupt
file from a bug.
"""


class PaimonFastError(Exception):
    """Base class of every error raised by paimon_fast."""


class IndexFormatError(PaimonFastError, ValueError):
    """Corrupt, truncated or otherwise unreadable index bytes.

    ``what`` says what could not be read, ``offset`` where (absolute, in the
    buffer or file being read) when known.
    """

    def __init__(self, what, offset=None):
        self.what = what
        self.offset = offset
        msg = what if offset is None else f"{what} (at offset {offset})"
        super().__init__(msg)


class DamagedFileError(IndexFormatError):
    """A file a table's metadata depends on is damaged (a dataset catalog or global index listing
    that is not valid JSON or fails its checksum, a deletion file that fails its checksum).  The
    message names the file and what to do; the command line prints it as one line, exit code 2."""


class DataFileError(PaimonFastError, ValueError):
    """A data file of a table cannot be read as what it claims to be (a ``.parquet`` file that is
    not Parquet); the message names it."""


class DataFileChangedError(PaimonFastError):
    """A data file changed (or went) after an operation's snapshot was taken, while the operation
    read it: what was read is not the snapshot's file.  Nothing was returned from it; run the
    operation again (it starts from a new snapshot)."""


class IndexTooLargeError(PaimonFastError, ValueError):
    """An index would exceed a size Java cannot handle (e.g. a serialized
    deletion vector > 2 GB, Java's array limit)."""


class UnsupportedTypeError(PaimonFastError, TypeError):
    """An index type cannot index this data type (e.g. bloom filter on BOOLEAN)."""


class UnknownIndexTypeError(PaimonFastError, KeyError):
    """No index type is registered under this name."""

    def __str__(self):  # KeyError quotes its argument; keep the message readable
        return str(self.args[0]) if self.args else ""


class UnknownGlobalIndexTypeError(UnknownIndexTypeError, ValueError):
    """No global index type is registered under this name (also the ValueError the global
    index factory raised before the registry)."""


class OptionError(PaimonFastError, ValueError):
    """An index option has a value that cannot be parsed or is out of range."""


class MissingDependencyError(PaimonFastError, ImportError):
    """A feature needs something that is not installed: an optional Python package
    (the message names the extra, e.g. ``pip install "paimon-fast[tables]"``) or a
    program outside Python (Java for Spark, liblzo2 for LZO; the message names the
    command that installs it).  Raised when the feature is first used, never a
    bare ``ImportError`` from inside a dependency."""

    def __init__(self, msg, name=None):
        super().__init__(msg, name=name)


class MissingCodecError(MissingDependencyError, OptionError):
    """A compression codec's package is missing (also an :class:`OptionError`: the
    option asked for a codec this installation cannot run)."""


# optional module -> (PyPI name, extra that installs it)
OPTIONAL = {
    "pyspark": ("pyspark", "spark"),
    "pandas": ("pandas", "frames"),
    "pypaimon": ("pypaimon", "tables"),
    "pypaimon_rust": ("pypaimon-rust", "tables"),
    "hudi": ("hudi", "tables"),
    "fastavro": ("fastavro", "tables"),
    "lz4": ("lz4", "codecs"),
    "zstandard": ("zstandard", "codecs"),
    "lzo": ("python-lzo", "lzo"),
    "pyiceberg": ("pyiceberg", "iceberg"),
    "duckdb": ("duckdb", "frames"),
    "polars": ("polars", "frames"),
    "ray": ("ray[data]", "ray"),
    "pytest": ("pytest", "bench"),
    "pytest_benchmark": ("pytest-benchmark", "bench"),
    "matplotlib": ("matplotlib", "bench"),
}


def install_hint(module: str) -> str:
    """``pip install "paimon-fast[<extra>]"`` for an optional module (the package itself if no extra has it)."""
    pkg, extra = OPTIONAL.get(module.split(".")[0], (module.split(".")[0], None))
    return f'pip install "paimon-fast[{extra}]"' if extra else f"pip install {pkg}"


def missing(module: str, feature: str, cls=MissingDependencyError, detail: str = "") -> MissingDependencyError:
    """The one error for an optional package that cannot be imported."""
    pkg = OPTIONAL.get(module.split(".")[0], (module.split(".")[0], None))[0]
    return cls(
        f"{feature} needs the `{pkg}` package, which is not installed{detail}: {install_hint(module)}", name=module
    )


def require(module: str, feature: str, cls=MissingDependencyError):
    """Import ``module`` (an optional dependency) or raise :class:`MissingDependencyError`
    naming the extra that installs it.  ``feature`` says what needed it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as e:
        top = module.split(".")[0]
        if e.name is not None and e.name.split(".")[0] != top:
            # the package is there but one of its own dependencies is not: say which
            raise missing(module, feature, cls, f" in a working state ({e})") from None
        raise missing(module, feature, cls) from None


def needs(module: str, feature: str):
    """Decorator: the function raises :class:`MissingDependencyError` (naming the extra)
    when ``module`` cannot be imported, before any of its own code runs."""
    import functools

    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            require(module, feature)
            return fn(*args, **kwargs)

        return wrapper

    return deco


class PredicateError(PaimonFastError, ValueError):
    """A predicate that cannot be answered against this table or column."""


class ColumnNotFoundError(PredicateError, KeyError):
    """A predicate names a column the table (or index) does not have.

    ``column`` is the missing name, ``available`` the columns there are.
    """

    def __init__(self, column, available=()):
        self.column = column
        self.available = list(available)
        shown = ", ".join(map(str, self.available[:20])) + (", ..." if len(self.available) > 20 else "")
        super().__init__(f"no column {column!r} (columns: {shown})" if self.available else f"no column {column!r}")

    def __str__(self):  # KeyError quotes its argument; keep the message readable
        return str(self.args[0]) if self.args else ""


class LiteralTypeError(PredicateError, TypeError):
    """A predicate literal cannot be compared with its column's type
    (e.g. a string against an INT column).  Names the column, type and literal."""

    def __init__(self, column, column_type, literal, why=""):
        self.column = column
        self.column_type = column_type
        self.literal = literal
        msg = (
            f"cannot compare column {column!r} of type {column_type} with {type(literal).__name__} literal {literal!r}"
        )
        super().__init__(msg + (f": {why}" if why else ""))


class NotFoundError(PaimonFastError, LookupError):
    """A table, database or dataset a call names does not exist (a missing local path is
    Python's ``FileNotFoundError``)."""


class InvalidArgumentError(PaimonFastError, ValueError, TypeError):
    """An API argument of the wrong kind or value (``field(None)``, a fractional
    row position, duplicate row ids); a ``ValueError`` and a ``TypeError``, so
    either ``except`` catches it."""
