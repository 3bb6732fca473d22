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


class UnsupportedTypeError(PaimonFastError, TypeError):
    """An index type cannot index this data type (e.g. bloom filter on BOOLEAN)."""


class UnknownIndexTypeError(PaimonFastError, KeyError):
    """No index type is registered under this name."""

    def __str__(self):  # KeyError quotes its argument; keep the message readable
        return str(self.args[0]) if self.args else ""


class OptionError(PaimonFastError, ValueError):
    """An index option has a value that cannot be parsed or is out of range."""
