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

import io
import os
import posixpath
import threading
import uuid
import warnings
from dataclasses import dataclass
from typing import Callable, List, Optional, Tuple

from ..errors import PaimonFastError
from .fsutil import TMP_MARK, write_all, write_atomic as _local_write_atomic, write_or_fault
from .source import Source, checked_read

__all__ = ["resolve", "Store", "CommitFile", "CommitConflictError", "IOCounter", "FileEntry", "TMP_MARK", "display_uri"]

OBJECT_STORES = ("s3", "gcs", "abfs", "azure")
VERSION_DIR = "_commits"


class CommitConflictError(PaimonFastError):
    """Another writer committed first: the object this commit would create already exists.
    Nothing of this commit is visible; re-run it (it starts from the new state)."""


class IOCounter:
    """Bytes and requests read through a store (thread-safe)."""

    def __init__(self):
        self._lock = threading.Lock()
        self.bytes = 0
        self.requests = 0

    def add(self, n: int) -> None:
        with self._lock:
            self.bytes += n
            self.requests += 1

    def snapshot(self) -> Tuple[int, int]:
        with self._lock:
            return self.bytes, self.requests

    def __getstate__(self):  # shipped to executors inside datasets: counts there stay there
        return self.snapshot()

    def __setstate__(self, state):
        self.__init__()
        self.bytes, self.requests = state


@dataclass(frozen=True)
class FileEntry:
    """One file found by :meth:`Store.list_files`: path relative to the listed root (POSIX),
    full path in the store, size, modification time (ns), and what tells one version of the file
    from another beyond those: locally its change time (ns) and inode, on S3 (listed through
    boto3) its ETag; None where the store does not say."""

    rel: str
    path: str
    size: int
    mtime_ns: int
    ctime_ns: Optional[int] = None
    ino: Optional[int] = None
    etag: Optional[str] = None


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


class Store:
    """A pyarrow filesystem with the few operations tables need (see the module docstring).

    Paths are the filesystem's own: absolute OS paths locally, ``bucket/key`` on
    object stores.  ``scheme`` is only used to show paths (:meth:`uri`)."""

    def __init__(self, filesystem=None, scheme: str = ""):
        import pyarrow.fs as pafs

        if filesystem is None:
            filesystem = pafs.LocalFileSystem()
        elif not isinstance(filesystem, pafs.FileSystem):
            if hasattr(filesystem, "protocol") and hasattr(filesystem, "open"):  # an fsspec filesystem
                filesystem = pafs.PyFileSystem(pafs.FSSpecHandler(filesystem))
            else:
                from ..errors import InvalidArgumentError

                raise InvalidArgumentError(
                    f"filesystem must be a pyarrow.fs.FileSystem or an fsspec filesystem, "
                    f"got {type(filesystem).__name__}"
                )
        self.fs = filesystem
        self.type_name = filesystem.type_name
        self.local = isinstance(filesystem, pafs.LocalFileSystem)
        self.object_store = self.type_name in OBJECT_STORES or any(
            f"'{p}'" in self.type_name for p in ("s3", "s3a", "gs", "gcs", "abfs", "az")
        )
        self.scheme = scheme or ("" if self.local else {"gcs": "gs"}.get(self.type_name, self.type_name))
        self._boto = None
        self._warned = False

    # ------------------------------------------------------------ pickling (Spark executors)
    def __getstate__(self):
        return {"fs": self.fs, "scheme": self.scheme}

    def __setstate__(self, state):
        self.__init__(state["fs"], state["scheme"])

    def __repr__(self):
        return f"Store({self.type_name})"

    # ------------------------------------------------------------ paths
    def join(self, *parts: str) -> str:
        if self.local:
            return os.path.join(*parts)
        return posixpath.join(*[p for p in parts if p != ""])

    def dirname(self, path: str) -> str:
        return os.path.dirname(path) if self.local else posixpath.dirname(path)

    def basename(self, path: str) -> str:
        return os.path.basename(path) if self.local else posixpath.basename(path)

    def relpath(self, path: str, root: str) -> str:
        if self.local:
            return os.path.relpath(path, root).replace(os.sep, "/")
        return posixpath.relpath(path, root)

    def uri(self, path: str) -> str:
        """How to show ``path`` (no credentials): a local path, or ``scheme://path``."""
        return path if self.local or not self.scheme or self.type_name.startswith("py::") else f"{self.scheme}://{path}"

    # ------------------------------------------------------------ metadata
    def _info(self, path: str):
        return self.fs.get_file_info(path)

    def exists(self, path: str) -> bool:
        if self.local:
            return os.path.exists(path)
        import pyarrow.fs as pafs

        return self._info(path).type != pafs.FileType.NotFound

    def is_dir(self, path: str) -> bool:
        if self.local:
            return os.path.isdir(path)
        import pyarrow.fs as pafs

        t = self._info(path).type
        if t == pafs.FileType.Directory:
            return True
        if t == pafs.FileType.NotFound and self.object_store:  # a prefix with objects under it
            try:
                return bool(self.fs.get_file_info(pafs.FileSelector(path, recursive=False)))
            except (FileNotFoundError, OSError):
                return False
        return False

    def stat(self, path: str) -> Optional[Tuple[int, int]]:
        """``(size, mtime_ns)`` of a file, None when it does not exist."""
        if self.local:
            try:
                st = os.stat(path)
            except FileNotFoundError:
                return None
            return st.st_size, st.st_mtime_ns
        import pyarrow.fs as pafs

        i = self._info(path)
        if i.type != pafs.FileType.File:
            return None
        return i.size, _mtime_ns(i)

    def size(self, path: str) -> int:
        st = self.stat(path)
        if st is None:
            raise FileNotFoundError(self.uri(path))
        return st[0]

    def list_files(
        self,
        root: str,
        recursive: bool = True,
        skip_dir: Optional[Callable[[str], bool]] = None,
        keep: Optional[Callable[[str], bool]] = None,
    ) -> List[FileEntry]:
        """Files under ``root`` (relative POSIX paths sorted), skipping directories whose name
        ``skip_dir`` accepts (and everything under them), and files whose name ``keep``
        refuses.  A missing root lists nothing."""
        out = []
        if self.local:
            if not recursive:
                try:
                    with os.scandir(root) as it:
                        for e in it:
                            if e.is_file() and (keep is None or keep(e.name)):
                                st = e.stat()
                                out.append(_local_entry(e.name, e.path, st))
                except (FileNotFoundError, NotADirectoryError):
                    pass
                return sorted(out, key=lambda e: e.rel)
            # os.walk's order of business (links to directories listed, not entered; a directory
            # that cannot be listed skipped), with the scandir entries' own paths and stats: a
            # plan lists its dataset each time, and os.walk's joins cost more than the stats
            todo = [(root, "")]
            while todo:
                where, rel_dir = todo.pop()
                try:
                    it = os.scandir(where)
                except OSError:
                    continue
                with it:
                    for e in it:
                        try:
                            is_dir = e.is_dir()
                        except OSError:
                            is_dir = False
                        if is_dir:
                            try:
                                link = e.is_symlink()
                            except OSError:
                                link = False
                            if not link and (skip_dir is None or not skip_dir(e.name)):
                                todo.append((e.path, rel_dir + e.name + "/"))
                            continue
                        if keep is not None and not keep(e.name):
                            continue
                        try:
                            st = e.stat()
                        except FileNotFoundError:
                            continue
                        out.append(_local_entry(rel_dir + e.name, e.path, st))
            return sorted(out, key=lambda e: e.rel)
        if self.type_name == "s3" and self._boto_client() is not None:
            return self._list_s3(root, recursive, skip_dir, keep)
        import pyarrow.fs as pafs

        try:
            infos = self.fs.get_file_info(pafs.FileSelector(root, recursive=recursive, allow_not_found=True))
        except FileNotFoundError:
            return []
        base = root.rstrip("/")
        for i in infos:
            if i.type != pafs.FileType.File:
                continue
            rel = i.path[len(base) + 1 :] if i.path.startswith(base + "/") else posixpath.relpath(i.path, base)
            parts = rel.split("/")
            if skip_dir is not None and any(skip_dir(d) for d in parts[:-1]):
                continue
            if keep is not None and not keep(parts[-1]):
                continue
            out.append(FileEntry(rel, i.path, i.size, _mtime_ns(i)))
        return sorted(out, key=lambda e: e.rel)

    def _list_s3(self, root, recursive, skip_dir, keep) -> List[FileEntry]:
        """:meth:`list_files` through boto3: the same requests as pyarrow's listing (1,000 keys
        each), and each object's ETag with it."""
        client = self._boto_client()
        bucket, _, prefix = root.rstrip("/").partition("/")
        pre = prefix + "/" if prefix else ""
        kw = {"Bucket": bucket, "Prefix": pre}
        if not recursive:
            kw["Delimiter"] = "/"
        out = []
        for page in client.get_paginator("list_objects_v2").paginate(**kw):
            for o in page.get("Contents", ()):
                key = o["Key"]
                if key.endswith("/"):
                    continue  # a directory marker
                rel = key[len(pre) :]
                parts = rel.split("/")
                if skip_dir is not None and any(skip_dir(d) for d in parts[:-1]):
                    continue
                if keep is not None and not keep(parts[-1]):
                    continue
                out.append(
                    FileEntry(rel, f"{bucket}/{key}", int(o["Size"]), boto_mtime_ns(o["LastModified"]), etag=o["ETag"])
                )
        return sorted(out, key=lambda e: e.rel)

    def head(self, path: str) -> Optional[FileEntry]:
        """The file at ``path`` as :meth:`list_files` would give it (one stat or HEAD request), None
        when it does not exist."""
        name = self.basename(path)
        if self.local:
            try:
                return _local_entry(name, path, os.stat(path))
            except FileNotFoundError:
                return None
        if self.type_name == "s3" and self._boto_client() is not None:
            bucket, _, key = path.partition("/")
            try:
                r = self._boto_client().head_object(Bucket=bucket, Key=key)
            except Exception as e:  # botocore.exceptions.ClientError
                code = str(getattr(e, "response", {}).get("Error", {}).get("Code", ""))
                if code in ("404", "NoSuchKey", "NotFound"):
                    return None
                raise
            return FileEntry(name, path, int(r["ContentLength"]), boto_mtime_ns(r["LastModified"]), etag=r["ETag"])
        st = self.stat(path)
        return None if st is None else FileEntry(name, path, st[0], st[1])

    # ------------------------------------------------------------ reads
    def open_source(self, path: str, counter: Optional[IOCounter] = None, head: int = 0) -> Source:
        """A ranged-read :class:`~paimon_fast.io.source.Source` over the file (one read per range).
        ``head`` (remote stores): reads inside the first ``head`` bytes are served from one
        read of them (a header parsed in small steps costs one request, not one per step)."""
        if self.local:
            from .source import FileSource

            return FileSource(path, counter)
        return ArrowFileSource(self.fs.open_input_file(path), path, counter, head)

    def open_input(self, path: str, counter: Optional[IOCounter] = None):
        """What ``pyarrow.parquet`` should open: the path itself for an uncounted local
        read (unchanged behaviour), else a seekable file whose reads are ranged and counted."""
        if self.local and counter is None:
            return path
        f = open(path, "rb") if self.local else self.fs.open_input_file(path)
        return f if counter is None else CountingFile(f, counter)

    def read_bytes(self, path: str, counter: Optional[IOCounter] = None) -> bytes:
        if self.local:
            with open(path, "rb") as fh:
                data = fh.read()
        else:
            with self.fs.open_input_file(path) as fh:
                data = fh.read()
        if counter is not None:
            counter.add(len(data))
        return data

    # ------------------------------------------------------------ writes
    def makedirs(self, path: str) -> None:
        if self.local:
            os.makedirs(path, exist_ok=True)
        elif not self.object_store:
            self.fs.create_dir(path, recursive=True)

    def write_atomic(self, path: str, data, _fault: Optional[str] = None) -> None:
        """Write ``data`` (bytes or :class:`paimon_fast.io.fsutil.Chunks`) so that ``path`` holds
        the old bytes or all the new ones, never part.

        ``_fault`` (tests): ``"raise"`` fails half-way, ``"exit"`` kills the process
        half-way (on an object store the PUT is then never completed)."""
        if self.local:
            _local_write_atomic(path, data, _fault)
            return
        if self.object_store:
            if _fault:  # a PUT that never completes leaves nothing behind
                if _fault == "exit":
                    os._exit(17)
                raise RuntimeError(f"injected failure while writing {self.uri(path)}")
            with self.fs.open_output_stream(path) as out:
                write_all(out, data)
            return
        self.makedirs(self.dirname(path))
        tmp = self._tmp_name(path)
        try:
            with self.fs.open_output_stream(tmp) as out:
                write_or_fault(out, data, _fault, self.uri(path))
            if self.exists(path):
                self.fs.delete_file(path)
            self.fs.move(tmp, path)
        except BaseException:
            self.delete(tmp)
            raise

    def _tmp_name(self, path: str) -> str:
        return self.join(self.dirname(path), f".{self.basename(path)}{TMP_MARK}{uuid.uuid4().hex}")

    def create_exclusive(self, path: str, data: bytes) -> None:
        """Create ``path`` holding ``data`` only if nothing is there yet; raises
        :class:`CommitConflictError` when it exists (see the module docstring for the
        stores where this is a weaker check-then-write)."""
        if self.local:
            d = os.path.dirname(os.path.abspath(path))
            os.makedirs(d, exist_ok=True)
            tmp = self._tmp_name(path)
            _local_write_atomic(tmp, data)
            try:
                os.link(tmp, path)
            except FileExistsError:
                raise CommitConflictError(f"{path} already exists: another writer committed first") from None
            finally:
                os.unlink(tmp)
            return
        if self.type_name == "s3":
            client = self._boto_client()
            if client is not None:
                bucket, _, key = path.partition("/")
                try:
                    client.put_object(Bucket=bucket, Key=key, Body=data, IfNoneMatch="*")
                except Exception as e:  # botocore.exceptions.ClientError
                    code = str(getattr(e, "response", {}).get("Error", {}).get("Code", ""))
                    if code in ("PreconditionFailed", "412", "ConditionalRequestConflict", "409"):
                        raise CommitConflictError(
                            f"{self.uri(path)} already exists: another writer committed "
                            f"first (conditional PUT refused: {code})"
                        ) from None
                    raise
                return
        if not self.object_store:  # HDFS & co: a rename onto an existing file fails
            self.makedirs(self.dirname(path))
            tmp = self._tmp_name(path)
            with self.fs.open_output_stream(tmp) as out:
                out.write(data)
            if self.exists(path):
                self.delete(tmp)
                raise CommitConflictError(f"{self.uri(path)} already exists: another writer committed first")
            try:
                self.fs.move(tmp, path)
            except OSError as e:
                self.delete(tmp)
                raise CommitConflictError(f"{self.uri(path)}: another writer committed first ({e})") from None
            return
        self._warn_weak()
        if self.exists(path):
            raise CommitConflictError(f"{self.uri(path)} already exists: another writer committed first")
        self.write_atomic(path, data)
        if self.read_bytes(path) != data:
            raise CommitConflictError(f"{self.uri(path)} was written by another writer at the same time")

    def _warn_weak(self):
        if not self._warned:
            self._warned = True
            why = (
                "install boto3 (pip install 'paimon-fast[s3]')"
                if self.type_name == "s3"
                else "this store offers no conditional PUT through pyarrow"
            )
            warnings.warn(
                f"commits on {self.type_name} check-then-write instead of a conditional PUT ({why}): "
                "two writers racing within moments may both succeed, the later one's commit winning",
                RuntimeWarning,
                stacklevel=3,
            )

    def _boto_client(self):
        """A boto3 S3 client configured like the pyarrow S3FileSystem (None without boto3)."""
        if self._boto is None:
            try:
                import boto3
            except ImportError:
                self._boto = False
                return None
            opts = {}
            try:
                opts = dict(self.fs.__reduce__()[1][0])
            except Exception:  # noqa: BLE001 - another pyarrow's pickling: use boto3's defaults
                pass
            kw = {}
            ep = opts.get("endpoint_override") or ""
            if ep:
                kw["endpoint_url"] = ep if "://" in ep else f"{opts.get('scheme') or 'https'}://{ep}"
            if opts.get("access_key"):
                kw["aws_access_key_id"] = opts["access_key"]
                kw["aws_secret_access_key"] = opts.get("secret_key")
                if opts.get("session_token"):
                    kw["aws_session_token"] = opts["session_token"]
            if opts.get("region"):
                kw["region_name"] = opts["region"]
            self._boto = boto3.session.Session().client("s3", **kw)
        return self._boto or None

    def delete(self, path: str) -> bool:
        """Remove a file; False when it was not there."""
        try:
            if self.local:
                os.unlink(path)
            else:
                self.fs.delete_file(path)
            return True
        except (FileNotFoundError, OSError):
            return False


def _mtime_ns(info) -> int:
    m = info.mtime_ns
    return int(m) if m is not None else 0


def _local_entry(rel: str, path: str, st) -> FileEntry:
    return FileEntry(rel, path, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def boto_mtime_ns(dt) -> int:
    """A boto3 ``LastModified`` (an aware datetime) in ns since the epoch, exactly."""
    import calendar

    return calendar.timegm(dt.utctimetuple()) * 1_000_000_000 + dt.microsecond * 1000


class ArrowFileSource(Source):
    """A pyarrow random-access file: each ``read_at`` is one ranged read (thread-safe), counted."""

    def __init__(self, f, path: str = "", counter: Optional[IOCounter] = None, head: int = 0):
        self._f = f
        self.path = path
        self.size = f.size()
        self.counter = counter
        self._head_len = min(head, self.size)
        self._head = None
        self._lock = threading.Lock()

    def _read(self, offset, length):
        if offset + length <= self._head_len:
            with self._lock:
                if self._head is None:
                    self._head = self._fetch(0, self._head_len)
            return memoryview(self._head)[offset : offset + length]
        return self._fetch(offset, length)

    def _fetch(self, offset, length):
        return checked_read(self._f.read_at(length, offset), length, offset, self.path, self.counter)

    def close(self):
        if self._f is not None:
            self._f.close()
            self._f = None


class LazySource(Source):
    """A file of a store opened on its first read (``size`` known beforehand, e.g. from a
    listing, saves a request): many files can be named while only the few a query needs are
    ever opened."""

    def __init__(self, store: Store, path: str, size: Optional[int] = None, counter: Optional[IOCounter] = None):
        self.store = store
        self.path = path
        self.counter = counter
        self._src = None
        self._lock = threading.Lock()
        if size is not None:
            self.size = int(size)

    def _open(self) -> Source:
        with self._lock:
            if self._src is None:
                self._src = self.store.open_source(self.path, self.counter)
            return self._src

    def __getattr__(self, name):
        if name == "size":  # not known from a listing: open now
            return self._open().size
        raise AttributeError(name)

    def _read(self, offset, length):
        return self._open()._read(offset, length)

    def close(self):
        with self._lock:
            if self._src is not None:
                self._src.close()
                self._src = None


class CountingFile(io.RawIOBase):
    """A seekable read-only file counting the bytes read (for ``pyarrow.parquet``)."""

    def __init__(self, f, counter: IOCounter):
        self._f = f
        self.counter = counter

    def readable(self):
        return True

    def seekable(self):
        return True

    def seek(self, offset, whence=io.SEEK_SET):
        return self._f.seek(offset, whence)

    def tell(self):
        return self._f.tell()

    def read(self, n=-1):
        data = self._f.read() if n is None or n < 0 else self._f.read(n)
        self.counter.add(len(data))
        return data

    def readinto(self, b):
        data = self.read(len(b))
        b[: len(data)] = data
        return len(data)

    def size(self):
        if hasattr(self._f, "size"):
            return self._f.size()
        cur = self._f.tell()
        end = self._f.seek(0, io.SEEK_END)
        self._f.seek(cur)
        return end

    def close(self):
        self._f.close()
        super().close()


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
