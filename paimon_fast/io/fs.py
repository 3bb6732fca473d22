"""Where tables live: plain paths, ``file://``, ``s3://``, ``gs://``, ``abfs://``, ``hdfs://``
URIs or any ``pyarrow.fs.FileSystem``, behind one small layer.

    from paimon_fast.io import fs
    store, root = fs.resolve("s3://bucket/events")            # or a path, or filesystem=...
    store.write_atomic(store.join(root, "a.json"), b"...")     # visible whole or not at all
    store.create_exclusive(path, data)                         # CommitConflictError if it exists
    cf = fs.CommitFile(store, root, "_catalog.json")           # the one object a commit writes last
    version, data = cf.read(); cf.write(data, version)

**Resolving.**  :func:`resolve` turns a path or URI (and an optional filesystem)
into a :class:`Store` and a path inside it.  A plain path or ``file:`` URI is the
local filesystem and the path is made absolute; other URIs go through
``pyarrow.fs.FileSystem.from_uri``, so credentials and endpoints come the standard
way: the environment (``AWS_ACCESS_KEY_ID``, ``AWS_ENDPOINT_URL``, ...), the
store's credential chain, or pyarrow's URI options
(``s3://bucket/p?endpoint_override=host:port&scheme=http``).  An explicit
``filesystem`` (a ``pyarrow.fs.FileSystem``, or an fsspec filesystem, wrapped in
``PyFileSystem(FSSpecHandler(...))``) takes a path inside it (a URI's scheme is
dropped).  Nothing of the URI's query (where credentials may sit) is ever
written into a table: tables record paths relative to their root.  A
:class:`Store` pickles (it is shipped to Spark executors with the paths they
read), carrying the filesystem's explicit options; credentials from the
environment are resolved on each executor.

**Writes.**  Stores differ in what is atomic:

* local: :meth:`Store.write_atomic` writes a hidden temporary file, fsyncs it
  and renames it over the target (:func:`paimon_fast.io.fsutil.write_atomic`, as
  always); :meth:`Store.create_exclusive` hard-links the temporary file to the
  target, which fails if the target exists.
* object stores (S3, GCS, Azure): one PUT makes an object visible whole or not at
  all, so :meth:`Store.write_atomic` writes the object directly (a killed upload
  leaves nothing, or an incomplete multipart upload the store expires).  There is
  no atomic rename, so a commit never replaces an object in place: writers give
  new files unique names and publish them through one commit object written last
  (:class:`CommitFile`).  :meth:`Store.create_exclusive` on S3 is a conditional
  PUT (``If-None-Match: *``, through boto3: ``pip install "paimon-fast[s3]"``);
  a lost race raises :class:`CommitConflictError`.  **Weaker guarantee**: where
  no conditional PUT is available (S3 without boto3, GCS and Azure through
  pyarrow, fsspec filesystems) it checks that the object is absent, writes it,
  and reads it back: two writers racing inside that window can both believe they
  won (the later one's object stays); a warning names the store once.
* HDFS and other filesystems: temporary name + ``move`` (HDFS renames are
  atomic; a rename onto an existing file fails there, which
  :meth:`Store.create_exclusive` relies on).

**Reads** are ranged: :meth:`Store.open_source` gives a
:class:`~paimon_fast.io.source.Source` whose ``read_at`` is one ranged read of the
file, and :meth:`Store.open_input` a seekable file for ``pyarrow.parquet``
(footer first, then only the column chunks asked for).  Every byte read through
a store with an :class:`IOCounter` is counted (reports say ``bytes_read``).
"""

from __future__ import annotations

import os
from typing import List, Optional, Tuple

from .fsutil import TMP_MARK
from .ranged import ArrowFileSource, CountingFile, IOCounter  # noqa: F401  (handed on)
from .stores import (  # noqa: F401  (handed on)
    OBJECT_STORES,
    CommitConflictError,
    FileEntry,
    LazySource,
    Store,
    _local_entry,
    _mtime_ns,
    boto_mtime_ns,
)

__all__ = ["resolve", "Store", "CommitFile", "CommitConflictError", "IOCounter", "FileEntry", "TMP_MARK", "display_uri"]

VERSION_DIR = "_commits"


def display_uri(uri: str) -> str:
    """A URI without its query and user info (where credentials may sit)."""
    s = str(uri)
    if "://" not in s:
        return s
    scheme, rest = s.split("://", 1)
    rest = rest.split("?", 1)[0]
    netloc, sep, path = rest.partition("/")
    netloc = netloc.rsplit("@", 1)[-1]
    return f"{scheme}://{netloc}{sep}{path}"


def is_uri(s: str) -> bool:
    head = s.split("/", 1)[0]
    return head.endswith(":") and len(head) > 2 and "://" in s  # "s3://...", not "C:\\" nor "a:b"


def resolve(path, filesystem=None) -> Tuple[Store, str]:
    """``(Store, path inside it)`` for a path or URI (see the module docstring)."""
    s = os.fspath(path) if not isinstance(path, str) else path
    if isinstance(filesystem, Store):
        store = filesystem
    elif filesystem is not None:
        store = Store(filesystem)
    else:
        store = None
    if store is not None:
        if is_uri(s):
            scheme, rest = s.split("://", 1)
            if store.local:
                from urllib.parse import unquote

                rest = unquote(rest.split("?", 1)[0])
                s = rest if rest.startswith("/") else "/" + rest
            else:
                s = rest.split("?", 1)[0]
        return store, (os.path.abspath(s) if store.local else s.rstrip("/"))
    if s.startswith("file:"):
        from urllib.parse import unquote, urlparse

        return Store(), os.path.abspath(unquote(urlparse(s).path))
    if not is_uri(s):
        return Store(), os.path.abspath(s)
    hit = _RESOLVED.get(s)
    if hit is None:  # one filesystem per URI: creating one (credential chain, region lookup) costs
        import pyarrow.fs as pafs

        fs, p = pafs.FileSystem.from_uri(s)
        scheme = s.split("://", 1)[0].lower()
        st = Store(fs, scheme)
        hit = (st, (os.path.abspath(p) if st.local else p.rstrip("/")))
        if len(_RESOLVED) > 256:
            _RESOLVED.clear()
        _RESOLVED[s] = hit
    return hit


_RESOLVED: dict = {}


class CommitFile:
    """The one object a commit writes last (a catalog, a listing), read and written whole, as
    immutable versions ``<dir>/_commits/<name>.<10-digit version>``.

    Each version is created with :meth:`Store.create_exclusive` (locally a hard link, which fails
    onto an existing name; on S3 a conditional PUT; on HDFS a rename, which fails onto an existing
    file), so of two writers that both read version ``n`` only one creates ``n + 1``; the other gets
    :class:`CommitConflictError` and nothing of its commit is visible.  The highest version is
    current.  A reader lists the versions and then probes the following numbers (a listing may lag
    a fresh object; a GET of a new key does not), so it never misses a commit that finished before
    it started.  Superseded versions stay until ``paimon-fast gc`` removes them (after a grace
    period: a reader may still be using one).

    Before versions existed locally the commit object was the plain file ``<dir>/<name>``, replaced
    in place; when no version exists it is read as version 0, and the first commit creates version 1.
    """

    def __init__(self, store: Store, directory: str, name: str):
        self.store = store
        self.dir = directory
        self.name = name
        self.versioned = True

    @property
    def path(self) -> str:
        """The versions' directory and name (for messages)."""
        return self.store.join(self.dir, VERSION_DIR, self.name)

    @property
    def legacy_path(self) -> str:
        """Where the plain (unversioned) commit file of earlier versions is."""
        return self.store.join(self.dir, self.name)

    def _vpath(self, v: int) -> str:
        return self.store.join(self.dir, VERSION_DIR, f"{self.name}.{v:010d}")

    def version_path(self, v: Optional[int]) -> str:
        """The file holding version ``v`` (0: the plain file of earlier versions)."""
        return self.legacy_path if not v else self._vpath(v)

    def version_entries(self) -> List[Tuple[int, FileEntry]]:
        """``[(version, FileEntry)]`` of the committed versions in the listing, ascending."""
        pre = self.name + "."
        out = []
        for e in self.store.list_files(self.store.join(self.dir, VERSION_DIR), recursive=False):
            n = e.rel.rsplit("/", 1)[-1]
            if n.startswith(pre) and n[len(pre) :].isdigit() and TMP_MARK not in n:
                out.append((int(n[len(pre) :]), e))
        return sorted(out, key=lambda x: x[0])

    def versions(self) -> List[int]:
        """Committed versions in the listing, ascending."""
        if self.store.local:  # names only: no stat per version
            pre = self.name + "."
            try:
                names = os.listdir(self.store.join(self.dir, VERSION_DIR))
            except (FileNotFoundError, NotADirectoryError):
                return []
            return sorted(int(n[len(pre) :]) for n in names if n.startswith(pre) and n[len(pre) :].isdigit())
        return [v for v, _ in self.version_entries()]

    def read(self, counter: Optional[IOCounter] = None) -> Tuple[Optional[int], Optional[bytes]]:
        """``(version, bytes)`` of the current commit; ``(None, None)`` when none exists; version 0
        is the plain file of earlier versions."""
        vs = self.versions()
        v = vs[-1] if vs else 0
        data = None
        if vs:
            try:
                data = self.store.read_bytes(self._vpath(v), counter)
            except FileNotFoundError:  # removed by gc between list and read: list again
                return self.read(counter)
        while True:  # a listing may lag: the next versions are probed directly
            try:
                nxt = self.store.read_bytes(self._vpath(v + 1), counter)
            except (FileNotFoundError, OSError):
                break
            v, data = v + 1, nxt
        if data is None:
            try:
                return 0, self.store.read_bytes(self.legacy_path, counter)
            except (FileNotFoundError, IsADirectoryError, OSError):
                return None, None
        return v, data

    def current_stat(self) -> Optional[Tuple[int, Tuple[int, int, int, int]]]:
        """Local stores: ``(version, (inode, size, mtime_ns, ctime_ns))`` of the current version's
        file as the listing finds it, without reading it; None elsewhere, or when no version file
        exists (the plain file of earlier versions, or no commit)."""
        if not self.store.local:
            return None
        vs = self.versions()
        if not vs:
            return None
        try:
            st = os.stat(self._vpath(vs[-1]))
        except OSError:
            return None
        return vs[-1], (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)

    def current_version(self) -> Optional[int]:
        """The current version's number, without reading it (the version :meth:`read` would
        return; None: no commit exists)."""
        vs = self.versions()
        v = vs[-1] if vs else 0
        while self.store.exists(self._vpath(v + 1)):
            v += 1
        if v == 0 and not self.store.exists(self.legacy_path):
            return None
        return v

    def write(self, data: bytes, base: Optional[int], _fault: Optional[str] = None) -> int:
        """Publish ``data`` as the commit following version ``base`` (what :meth:`read`
        returned).  Returns the new version."""
        if _fault:
            if _fault == "exit":
                os._exit(17)
            raise RuntimeError(f"injected failure before committing {self.store.uri(self.path)}")
        v = (base or 0) + 1
        try:
            self.store.create_exclusive(self._vpath(v), data)
        except CommitConflictError:
            raise CommitConflictError(
                f"{self.store.uri(self.store.join(self.dir, self.name))}: another writer committed version {v} "
                f"while this one ran (it started from version {base or 0}); nothing of this commit is visible, "
                "re-run it"
            ) from None
        return v

    def stale_versions(self, keep: int = 1) -> List[str]:
        """Paths of versions older than the newest ``keep``."""
        vs = self.versions()
        return [self._vpath(v) for v in (vs[:-keep] if keep else vs)]
