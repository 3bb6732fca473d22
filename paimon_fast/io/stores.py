"""The stores: :class:`Store` (a pyarrow filesystem with the few operations tables need: paths,
metadata and listings, ranged reads, atomic writes and exclusive creates per store), the
:class:`FileEntry` its listings give, :class:`CommitConflictError` (an exclusive create lost a race)
and :class:`LazySource` (a store's file opened on its first read).  See :mod:`paimon_fast.io.fs`
(which hands these names on) for what each store guarantees."""

from __future__ import annotations

import os
import posixpath
import threading
import uuid
import warnings
from typing import Callable, List, NamedTuple, Optional, Tuple

from ..errors import PaimonFastError
from .fsutil import TMP_MARK, write_all, write_atomic as _local_write_atomic, write_or_fault
from .ranged import ArrowFileSource, CountingFile, IOCounter
from .source import Source

OBJECT_STORES = ("s3", "gcs", "abfs", "azure")


class CommitConflictError(PaimonFastError):
    """Another writer committed first: the object this commit would create already exists.
    Nothing of this commit is visible; re-run it (it starts from the new state)."""


class FileEntry(NamedTuple):
    """One file found by :meth:`Store.list_files`: path relative to the listed root (POSIX),
    full path in the store, size, modification time (ns), and what tells one version of the file
    from another beyond those: locally its change time (ns) and inode, on S3 (listed through
    boto3) its ETag; None where the store does not say.  (A named tuple: a plan lists its dataset
    each time and compares the listing with the last one, at C speed.)"""

    rel: str
    path: str
    size: int
    mtime_ns: int
    ctime_ns: Optional[int] = None
    ino: Optional[int] = None
    etag: Optional[str] = None


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
            return _list_local(root, recursive, skip_dir, keep)
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
        """Remove a file; False when it was not there.  A local file's mapping, if a read kept
        one (:mod:`paimon_fast.io.parquet.filemap`), is dropped, so its blocks are freed."""
        try:
            if self.local:
                from .parquet import filemap

                filemap.forget(path)
                os.unlink(path)
            else:
                self.fs.delete_file(path)
            return True
        except (FileNotFoundError, OSError):
            return False


def _mtime_ns(info) -> int:
    m = info.mtime_ns
    return int(m) if m is not None else 0


# The last listing of each local directory tree: (what the scans gave, the entries made of it).  A
# read lists its dataset each time; when the scans give what they gave last time (names, sizes,
# times, inodes), the entries of last time are handed out again (in a new list), not made and
# sorted anew.  Bounded by _LISTED_MAX trees; a dict operation at a time, so threads share it.
_LISTED: dict = {}
_LISTED_MAX = 64


def _list_local(root, recursive, skip_dir, keep) -> List[FileEntry]:
    """:meth:`Store.list_files` on the local filesystem, in os.walk's order of business (links to
    directories listed, not entered; a directory under ``root`` that cannot be listed skipped),
    each directory read by the ``dirscan`` kernel (``readdir`` and ``fstatat`` in C: a plan lists
    its dataset each time, and a scandir loop's Python cost more than its stats).
    ``recursive=False``: the files of ``root`` only."""
    from .._kernels import load

    scan = load("dirscan").scan
    scans = []  # (directory, its files as the kernel gave them), in the order scanned
    todo = [(root, "")]
    while todo:
        where, rel_dir = todo.pop()
        try:
            dirs, files = scan(where, keep)
        except (FileNotFoundError, NotADirectoryError):
            continue  # a missing root lists nothing
        except OSError:
            if not rel_dir:
                raise  # a root that is there but cannot be listed is not an empty one
            continue
        if recursive:
            for name, link in dirs:
                if not link and (skip_dir is None or not skip_dir(name)):
                    todo.append((os.path.join(where, name), rel_dir + name + "/"))
        scans.append((where, rel_dir, files))
    key = (root, recursive, skip_dir, keep)
    last = _LISTED.get(key)
    if last is not None and last[0] == scans:
        return list(last[1])
    out = []
    for where, rel_dir, files in scans:
        base = where if where.endswith(os.sep) else where + os.sep  # (os.path.join's, as scandir's paths)
        out += [FileEntry(rel_dir + n, base + n, size, mt, ct, ino) for n, size, mt, ct, ino in files]
    out.sort(key=lambda e: e.rel)
    if len(_LISTED) >= _LISTED_MAX and key not in _LISTED:
        _LISTED.clear()
    _LISTED[key] = (scans, out)
    return list(out)


def _local_entry(rel: str, path: str, st) -> FileEntry:
    return FileEntry(rel, path, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def boto_mtime_ns(dt) -> int:
    """A boto3 ``LastModified`` (an aware datetime) in ns since the epoch, exactly."""
    import calendar

    return calendar.timegm(dt.utctimetuple()) * 1_000_000_000 + dt.microsecond * 1000


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
