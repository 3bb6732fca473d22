"""A data file's identity: what proves that the bytes an index was built from are the bytes there now.

An index, a deletion vector or a global index describes one version of a data file.  The catalog
records that version's identity, and every operation compares it with the identity the file has in
the operation's own listing (:func:`judge`):

* **local files**: size, ``st_mtime_ns``, ``st_ctime_ns`` and the inode.  ``utime`` can put the
  modification time back, but nothing short of changing the system clock puts the change time back,
  and a file replaced by another (write + rename) has another inode.  A file changed within the
  timestamp granularity of its last change could keep its ctime, so writers take identities only of
  files whose last change is older than :data:`SETTLE_NS` (:func:`unsettled`: a build or a delete
  waits those few milliseconds and lists again); after that any change moves the ctime forward.
* **object stores**: the ETag (S3, listed through boto3: the ``s3`` extra) and the size.  Reads of
  such a file are conditional on that ETag (``If-Match``, :func:`open_data_file`), so a file replaced
  between the listing and the read fails the read instead of being read in place of the listed one,
  at no extra request.
* **weak**: stores that give neither (S3 without boto3, GCS, Azure and fsspec filesystems through
  pyarrow, HDFS) are known by size and modification time only (seconds on most object stores).  An
  index of such a file is used to skip files and rows but never taken as exact: the rows read are
  filtered by the predicate again.  A rewrite with the same size within the same second can go
  unnoticed there (docs/object-stores.md says so).

:func:`judge` answers one of :data:`VERIFIED` (strong identity, equal), :data:`WEAK` (only size and
time to compare, equal), :data:`CHANGED`, :data:`UNVERIFIED` (the catalog entry has no strong
identity while the store gives one: written by an earlier version, not trusted until rebuilt) and
:data:`UNKNOWN` (no entry).

**Copies.**  A dataset copied or restored (``cp -a``, ``rsync``, a backup) has new inodes and change
times: its files are other files to the identity, although their bytes are the same.  The catalog
also records a *witness* of each version, a checksum of its last 64 KiB (the Parquet footer: row
groups, column chunk offsets, sizes and statistics).  A file whose identity differs but whose size
and witness are the recorded ones is :data:`COPIED`: its deletion vector applies (ignoring it would
bring deleted rows back) and its index answers, but never as exact (the rows are filtered again), and
the next build rebuilds it.  The witness is read only for such files (one ranged read of the tail).
"""

from __future__ import annotations

import io
import os
import threading
import time
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Optional

from ..errors import DataFileChangedError  # noqa: F401 (raised here, handed on)

VERIFIED = "verified"
WEAK = "weak"
COPIED = "copied"
CHANGED = "changed"
UNVERIFIED = "unverified"
UNKNOWN = "unknown"

# why an index is not used for a file, per verdict (reports and explain())
REASONS = {
    CHANGED: "changed since the build",
    UNVERIFIED: "identity not recorded (indexed by an earlier version of paimon-fast): rebuild",
    UNKNOWN: "not indexed yet (not in the catalog)",
}
COPIED_NOTE = "copied or restored since the build (the same bytes, a new identity): filtered again until rebuilt"

# A change within this long after the previous one may keep the ctime (timestamps are taken from a
# coarse clock, one scheduler tick: 1-10 ms); writers take identities only of older files.
SETTLE_NS = 25_000_000
SETTLE_MAX_WAIT = 2.0  # seconds a writer waits for files to settle (a clock ahead of ours: go on)

IDENTITY_KEYS = ("size", "mtime_ns", "ctime_ns", "ino", "etag", "witness")
WITNESS_BYTES = 65536  # the file's tail (its Parquet footer, whole in most files) a witness covers
# what a PinnedS3File fetches of a file's end in one GET and keeps (the footer and the witness's
# bytes; 64 KiB is also what pyarrow reads first of a Parquet file's end)
TAIL_BYTES = WITNESS_BYTES


@dataclass(frozen=True)
class Identity:
    """One version of a data file (see the module docstring)."""

    size: int
    mtime_ns: int
    ctime_ns: Optional[int] = None
    ino: Optional[int] = None
    etag: Optional[str] = None

    @property
    def strong(self) -> bool:
        """Does this identity change with every rewrite (not only with size and time)?"""
        return self.etag is not None or (self.ctime_ns is not None and self.ino is not None)

    def to_json(self) -> dict:
        """The keys a catalog entry records."""
        d = {"size": int(self.size), "mtime_ns": int(self.mtime_ns)}
        if self.ctime_ns is not None and self.ino is not None:
            d["ctime_ns"] = int(self.ctime_ns)
            d["ino"] = int(self.ino)
        if self.etag is not None:
            d["etag"] = self.etag
        return d

    @staticmethod
    def of_entry(e) -> "Identity":
        """The identity of a :class:`paimon_fast.io.fs.FileEntry` (or ``os.stat_result``)."""
        if isinstance(e, os.stat_result):
            return Identity(e.st_size, e.st_mtime_ns, e.st_ctime_ns, e.st_ino)
        return Identity(e.size, e.mtime_ns, e.ctime_ns, e.ino, e.etag)

    def same(self, other: "Identity") -> bool:
        """The same version of the file (strong fields compared where either has them)."""
        if self.etag is not None or other.etag is not None:
            return self.etag == other.etag and self.size == other.size
        return (self.size, self.mtime_ns, self.ctime_ns, self.ino) == (
            other.size,
            other.mtime_ns,
            other.ctime_ns,
            other.ino,
        )


def recorded(entry: Optional[Mapping]) -> Optional[dict]:
    """The identity keys a catalog entry records (None: none)."""
    if not entry or "size" not in entry:
        return None
    return {k: entry[k] for k in IDENTITY_KEYS if k in entry}


def judge(ident: Identity, entry: Optional[Mapping], witness: Optional[Callable[[], Optional[str]]] = None) -> str:
    """How the file's identity now compares with the one ``entry`` recorded (module docstring);
    ``witness()`` gives the file's witness now (:func:`read_witness`), asked only when the identity
    differs but the size does not."""
    if not entry or "size" not in entry:
        return UNKNOWN
    if entry.get("size") != ident.size:
        return CHANGED
    v = _judge(ident, entry)
    if v == CHANGED and entry.get("witness") and witness is not None and witness() == entry["witness"]:
        return COPIED
    return v


def _judge(ident: Identity, entry: Mapping) -> str:
    if ident.etag is not None:
        e = entry.get("etag")
        if e is not None:
            return VERIFIED if e == ident.etag else CHANGED
        return CHANGED if entry.get("mtime_ns") != ident.mtime_ns else UNVERIFIED
    if entry.get("mtime_ns") != ident.mtime_ns:
        return CHANGED
    if ident.ctime_ns is not None and ident.ino is not None:
        if "ctime_ns" not in entry or "ino" not in entry:
            return UNVERIFIED
        return VERIFIED if (entry["ctime_ns"], entry["ino"]) == (ident.ctime_ns, ident.ino) else CHANGED
    return WEAK


def usable(verdict: str) -> bool:
    """May an index recorded for the file answer for it (exactly only when :data:`VERIFIED`)?"""
    return verdict in (VERIFIED, WEAK, COPIED)


def witness_of(tail) -> str:
    """The witness of a file whose last bytes (at most :data:`WITNESS_BYTES`) are ``tail``."""
    from ..io.checksum import digest32

    return f"xxh3:{digest32(tail):08x}:{len(tail)}"


def read_witness(store, path: str, ident: Identity, counter=None, opened=None) -> Optional[str]:
    """The witness of the file at ``path`` (as ``ident``: on S3 the read is conditional on its
    ETag); None when it cannot be read.  ``opened``: the caller's :class:`PinnedS3File` of the same
    file and version, still open (its kept tail holds the bytes: no request of its own)."""
    n = min(int(ident.size), WITNESS_BYTES)
    try:
        if isinstance(opened, PinnedS3File) and opened._etag == ident.etag and opened.size() == int(ident.size):
            opened.seek(int(ident.size) - n)
            return witness_of(opened.read(n))
        f = open_data_file(store, path, ident, counter)
        if isinstance(f, str):
            with open(f, "rb") as fh:
                return witness_of(os.pread(fh.fileno(), n, int(ident.size) - n))
        try:
            f.seek(int(ident.size) - n)
            return witness_of(f.read(n))
        finally:
            f.close()
    except (OSError, DataFileChangedError):
        return None


def unsettled(identities: Iterable[Identity], since_ns: int) -> int:
    """The latest ctime (ns) of the identities changed less than :data:`SETTLE_NS` before
    ``since_ns`` (when their listing started), 0 when every one is settled."""
    late = 0
    for i in identities:
        if i.ctime_ns is not None and i.ctime_ns > since_ns - SETTLE_NS:
            late = max(late, i.ctime_ns)
    return late


def wait_settled(latest_ctime_ns: int, waited: float) -> bool:
    """Sleep until ``latest_ctime_ns`` is settled; False when :data:`SETTLE_MAX_WAIT` is used up."""
    delay = (latest_ctime_ns + SETTLE_NS - time.time_ns()) / 1e9
    if waited + max(delay, 0) > SETTLE_MAX_WAIT:
        return False
    if delay > 0:
        time.sleep(delay + 0.001)
    return True


def current(store, path: str) -> Optional[Identity]:
    """The identity of the file at ``path`` now (one stat or HEAD), None when it is gone."""
    if store.local:
        try:
            return Identity.of_entry(os.stat(path))
        except FileNotFoundError:
            return None
    head = store.head(path)
    return None if head is None else Identity.of_entry(head)


def check_unchanged(
    store, path: str, ident: Optional[Identity], shown: str = "", if_gone: Optional[Callable[[], bool]] = None
) -> None:
    """Raise :class:`DataFileChangedError` when the file at ``path`` is no longer ``ident`` (after a
    read: what was read was that version).  Local files only: reads of object stores are
    conditional on the ETag instead, and weak stores cannot tell (their answers are re-filtered).
    ``if_gone``: asked when no file is at ``path``; True means the version read is still known
    elsewhere (moved away unchanged), so no error."""
    if ident is None or not store.local or ident.ctime_ns is None:
        return
    now = current(store, path)
    if now is None and if_gone is not None and if_gone():
        return
    if now is None or not now.same(ident):
        what = "was removed" if now is None else "changed"
        raise DataFileChangedError(
            f"data file {shown or path} {what} after this operation's snapshot was taken, while it was read; "
            "run it again (it starts from a new snapshot)"
        )


def open_data_file(store, path: str, ident: Optional[Identity], counter=None, shown: str = ""):
    """What ``pyarrow.parquet`` opens for a data file: on S3 with an ETag, a file whose every ranged
    read is conditional on it (a replaced object fails with :class:`DataFileChangedError`); else
    :meth:`paimon_fast.io.fs.Store.open_input`."""
    if ident is not None and ident.etag is not None and store.type_name == "s3":
        client = store._boto_client()
        if client is not None:
            return PinnedS3File(client, path, ident, counter, shown or store.uri(path))
    return store.open_input(path, counter)


class PinnedS3File(io.RawIOBase):
    """A seekable read-only S3 object whose ranged GETs carry ``If-Match: <ETag>``: every byte read
    belongs to the listed version, or the read fails (:class:`DataFileChangedError`).  The size comes
    from the listing: no HEAD request.

    The file's tail (its last :data:`TAIL_BYTES`) is fetched by one GET the first time a read falls
    inside it and kept while the object is open: a Parquet footer is read in steps (its length,
    then the footer; pyarrow's schema read and its table read each read it again; a build's
    witness reads the same last 64 KiB), and each step would otherwise be a request of its own.  A
    file no longer than the tail is read whole by that one GET.  The kept bytes came from a GET
    pinned to the ETag like every other, and live only as long as this object (one operation on
    one listed version): nothing is served across versions."""

    def __init__(self, client, path: str, ident: Identity, counter=None, shown: str = ""):
        self._client = client
        self._bucket, _, self._key = path.partition("/")
        self._etag = ident.etag
        self._size = int(ident.size)
        self._pos = 0
        self.counter = counter
        self.shown = shown or path
        self._tail_at = self._size - min(self._size, TAIL_BYTES)
        self._tail: Optional[bytes] = None
        self._tail_lock = threading.Lock()

    def readable(self):
        return True

    def seekable(self):
        return True

    def size(self):
        return self._size

    def tell(self):
        return self._pos

    def seek(self, offset, whence=io.SEEK_SET):
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def read(self, n=-1):
        end = self._size if n is None or n < 0 else min(self._size, self._pos + n)
        if end <= self._pos:
            return b""
        data = self.read_range(self._pos, end - self._pos)
        self._pos += len(data)
        return data

    def readinto(self, b):
        data = self.read(len(b))
        b[: len(data)] = data
        return len(data)

    def read_range(self, offset: int, length: int) -> bytes:
        """``length`` bytes at ``offset``: from the kept tail when the range lies inside it, else
        one pinned GET."""
        if offset >= self._tail_at and length > 0:
            with self._tail_lock:
                if self._tail is None:
                    self._tail = self._get(self._tail_at, self._size - self._tail_at)
            at = offset - self._tail_at
            return self._tail[at : at + length]
        return self._get(offset, length)

    def _get(self, offset: int, length: int) -> bytes:
        """One GET of the range, conditional on the listed ETag (counted)."""
        try:
            r = self._client.get_object(
                Bucket=self._bucket, Key=self._key, Range=f"bytes={offset}-{offset + length - 1}", IfMatch=self._etag
            )
        except Exception as e:  # botocore.exceptions.ClientError
            code = str(getattr(e, "response", {}).get("Error", {}).get("Code", ""))
            if code in ("PreconditionFailed", "412", "NoSuchKey", "404"):
                what = "was removed" if code in ("NoSuchKey", "404") else "was replaced"
                raise DataFileChangedError(
                    f"data file {self.shown} {what} after this operation's snapshot was taken (its ETag "
                    f"{self._etag} no longer matches); run it again (it starts from a new snapshot)"
                ) from None
            raise
        data = r["Body"].read()
        if self.counter is not None:
            self.counter.add(len(data))
        return data
