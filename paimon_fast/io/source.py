"""Where index bytes come from: an in-memory buffer or a seekable file.

Readers never assume the whole index is in memory.  They take a
:class:`Source` and read the ranges they need with :meth:`Source.read_at`;
every range is checked against the source's size first, so a length field
read from a corrupt file can never make us allocate or read past the end.
"""

from __future__ import annotations

import io
import os
from typing import Optional

from . import memory as _memory
from ..errors import IndexFormatError


class Source:
    """A random-access, read-only byte range. Subclasses implement ``_read``."""

    size: int

    def read_at(self, offset: int, length: int, what: str = "bytes"):
        """Return ``length`` bytes at ``offset`` (a bytes-like object).

        Raises :class:`IndexFormatError` if the range is not inside the source.
        """
        if offset < 0 or length < 0 or offset + length > self.size:
            raise IndexFormatError(
                f"{what}: range [{offset}, {offset + length}) is outside the {self.size}-byte input",
                offset,
            )
        return self._read(offset, length)

    def slice(self, offset: int, length: int, what: str = "slice") -> "Source":
        """A sub-range of this source, itself a Source (offsets relative to it)."""
        if offset < 0 or length < 0 or offset + length > self.size:
            raise IndexFormatError(
                f"{what}: range [{offset}, {offset + length}) is outside the {self.size}-byte input",
                offset,
            )
        return SliceSource(self, offset, length)

    def read_all(self):
        return self.read_at(0, self.size)

    def _read(self, offset, length):  # pragma: no cover - abstract
        raise NotImplementedError

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class BytesSource(Source):
    """Bytes in memory; reads are zero-copy memoryview slices."""

    def __init__(self, data):
        self._mv = memoryview(data).cast("B")
        self.size = len(self._mv)

    def _read(self, offset, length):
        return self._mv[offset : offset + length]


class ReopeningSource(Source):
    """A source read through ``inner`` until it is closed and then, read by read, through a new
    source from ``opener()`` (closed after each read): for index readers held beyond the life
    of the container that opened them (:class:`~paimon_fast.fileindex.format.HeldReaders`).
    ``inner`` None: ``first()`` (default ``opener``) opens it at the first read, if any, and
    ``size`` is the size the caller knows the input has (checked when it is opened)."""

    def __init__(self, inner: Optional[Source], opener, size: Optional[int] = None, first=None):
        import threading

        if inner is None and size is None:
            raise ValueError("ReopeningSource without an inner source needs its size")
        self._inner, self._opener, self._first = inner, opener, first or opener
        self.size = inner.size if inner is not None else size
        self._closed = False
        self._lock = threading.Lock()  # a held reader may read on another thread while this closes

    def _opened(self, src: Source) -> Source:
        if src.size != self.size:
            src.close()
            raise IndexFormatError(f"the index file is {src.size} bytes now, not {self.size}", 0)
        return src

    def _read(self, offset, length):
        with self._lock:
            if not self._closed:
                if self._inner is None:
                    self._inner = self._opened(self._first())
                return self._inner._read(offset, length)
        with self._opened(self._opener()) as src:
            return bytes(src.read_at(offset, length))  # (a copy: the source closes)

    def close(self):
        with self._lock:
            inner, self._inner, self._closed = self._inner, None, True
        if inner is not None:
            inner.close()


def checked_read(data, length: int, offset: int, path: str, counter=None):
    """``data`` read from ``path`` at ``offset``: counted in ``counter`` (a
    :class:`paimon_fast.io.fs.IOCounter`), refused with IndexFormatError when short."""
    if counter is not None:
        counter.add(len(data))
    if len(data) != length:
        raise IndexFormatError(f"short read from {path}: {len(data)} of {length} bytes", offset)
    return data


class FileSource(Source):
    """A local file read with ``os.pread`` (thread-safe, no shared position).  A large read comes
    back as a ``memoryview`` over pyarrow's pool (:mod:`paimon_fast.io.memory`), a small one as
    ``bytes``; the memory is the reader's own either way (nothing else writes it)."""

    def __init__(self, path, counter=None):
        self.path = os.fspath(path)
        self._fd = os.open(self.path, os.O_RDONLY)
        try:  # pread ignores the position; lseek costs a tenth of fstat (a pipe cannot seek: fstat)
            self.size = os.lseek(self._fd, 0, os.SEEK_END)
        except OSError:
            self.size = os.fstat(self._fd).st_size
        self.counter = counter  # a paimon_fast.io.fs.IOCounter: bytes read are added to it

    @classmethod
    def adopt(cls, path, fd: int, size: int) -> "FileSource":
        """A FileSource over ``fd``, already open on ``path`` (``size`` bytes); it owns ``fd``."""
        self = cls.__new__(cls)
        self.path, self._fd, self.size, self.counter = path, fd, size, None
        return self

    def _pread(self, offset, length):
        """The bytes at ``offset``: large reads into pool memory, small ones as ``bytes``."""
        data = _memory.pread(self._fd, length, offset)
        return os.pread(self._fd, length, offset) if data is None else data

    def _read(self, offset, length):
        return checked_read(self._pread(offset, length), length, offset, self.path, self.counter)

    def read_at(self, offset: int, length: int, what: str = "bytes"):
        # Source.read_at and _read in one call (cold index lookups make a few small reads);
        # subclasses that read their own way (their _read) and bad ranges take Source's path
        if type(self) is not FileSource or offset < 0 or length < 0 or offset + length > self.size:
            return Source.read_at(self, offset, length, what)
        data = self._pread(offset, length)
        if self.counter is not None or len(data) != length:
            return checked_read(data, length, offset, self.path, self.counter)
        return data

    def close(self):
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


class FileObjSource(Source):
    """A seekable binary file object (seek + read). Not thread-safe."""

    def __init__(self, f):
        self._f = f
        self.size = f.seek(0, io.SEEK_END)

    def _read(self, offset, length):
        self._f.seek(offset)
        data = self._f.read(length)
        if len(data) != length:
            raise IndexFormatError(f"short read: {len(data)} of {length} bytes", offset)
        return data


class SliceSource(Source):
    def __init__(self, parent: Source, offset: int, length: int):
        # flatten nested slices so reads stay one hop
        while isinstance(parent, SliceSource):
            offset += parent._offset
            parent = parent._parent
        self._parent = parent
        self._offset = offset
        self.size = length

    @property
    def base(self) -> int:
        """Offset of this slice in the underlying input (for error messages)."""
        return self._offset

    def _read(self, offset, length):
        return self._parent._read(self._offset + offset, length)


def file_tail(path, n: int, at_least: int) -> Optional[bytes]:
    """The last ``n`` bytes of the local file ``path``, or None when it is shorter than
    ``at_least`` bytes or cannot be read (a format's sniffer: does the file end with its magic?)."""
    try:
        size = os.path.getsize(path)
        if size < max(at_least, n):
            return None
        with open(path, "rb") as f:
            f.seek(size - n)
            return f.read(n)
    except OSError:
        return None


def as_source(obj) -> Source:
    """Turn bytes / bytearray / memoryview / path / seekable binary file into a Source."""
    if isinstance(obj, Source):
        return obj
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return BytesSource(obj)
    if isinstance(obj, (str, os.PathLike)):
        return FileSource(obj)
    if hasattr(obj, "read") and hasattr(obj, "seek"):
        return FileObjSource(obj)
    try:
        return BytesSource(memoryview(obj))
    except TypeError:
        raise TypeError(
            f"cannot read index bytes from {type(obj).__name__}: give bytes, a path or a binary file"
        ) from None
