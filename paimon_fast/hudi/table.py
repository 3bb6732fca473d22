"""The Hudi table as the ``hudi`` package (the Rust reader's Python binding) sees it."""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field
from typing import Tuple

import pyarrow as pa

from ..io.fs import resolve

_TABLES = {}


def table_root(table_path: str):
    """``(Store, root)`` of a table path or URI (``s3://...``; see :mod:`paimon_fast.io.fs`)."""
    return resolve(table_path)


def canonical(table_path: str) -> str:
    """The table's path as every function here takes it: absolute when local, the URI as given
    otherwise (its query may carry the store's options: shown and recorded only through
    :func:`paimon_fast.io.fs.display_uri`)."""
    store, root = resolve(table_path)
    return root if store.local else str(table_path)


def storage_options(store) -> dict:
    """The ``hudi`` package's storage options for a non-local pyarrow store: the endpoint,
    scheme, region and explicit credentials of an S3 filesystem (anything else the
    package reads from the environment, as pyarrow does)."""
    if store.local or store.type_name != "s3":
        return {}
    try:
        o = dict(store.fs.__reduce__()[1][0])
    except Exception:  # noqa: BLE001 - another pyarrow: the environment decides
        return {}
    out = {}
    ep = o.get("endpoint_override") or ""
    if ep:
        url = ep if "://" in ep else f"{o.get('scheme') or 'https'}://{ep}"
        out["aws_endpoint_url"] = url
        if url.startswith("http://"):
            out["aws_allow_http"] = "true"
    if o.get("region"):
        out["aws_region"] = o["region"]
    if o.get("access_key"):
        out["aws_access_key_id"] = o["access_key"]
        out["aws_secret_access_key"] = o.get("secret_key") or ""
        if o.get("session_token"):
            out["aws_session_token"] = o["session_token"]
    return out


def _builder(table_path: str):
    store, root = resolve(table_path)
    b = _hudi().HudiTableBuilder.from_base_uri(root if store.local else store.uri(root))
    opts = storage_options(store)
    return b.with_storage_options(opts) if opts else b


def _hudi():
    from ..errors import require

    return require("hudi", "the Hudi bitmap index")


def open_table(table_path: str, cached: bool = False):
    """A ``hudi.HudiTable`` for ``table_path`` (made absolute, as the package requires).

    ``cached=True`` reuses a table opened on exactly the current timeline (a table
    object keeps the timeline it loaded: reusing it after a commit would merge log
    files without the new instants)."""
    p = canonical(table_path)
    _hudi()  # the package first: without it, MissingDependencyError naming the extra
    store, root = resolve(p)
    if store.local and not os.path.isfile(os.path.join(root, ".hoodie", "hoodie.properties")):
        raise FileNotFoundError(2, "No Hudi table here (no .hoodie/hoodie.properties)", root)
    if cached:
        fp = timeline_fingerprint(p).digest
        hit = _TABLES.get(p)
        if hit is None or hit[0] != fp:
            if len(_TABLES) > 64:
                _TABLES.clear()
            hit = _TABLES[p] = (fp, _builder(p).build())
        return hit[1]
    return _builder(p).build()


@dataclass(frozen=True)
class SliceRef:
    """One file slice: its file group and the files that make it up."""

    partition: str
    file_id: str
    base_file: str  # base file name ("" for a log-only slice)
    log_files: Tuple[str, ...] = ()
    instant: str = ""

    @property
    def identity(self):
        return (self.partition, self.file_id, self.base_file, self.log_files)

    @property
    def group(self):
        return (self.partition, self.file_id)

    def base_path(self, table_path: str) -> str:
        """The base file's path in the table's store (see :func:`table_root`)."""
        store, root = table_root(table_path)
        return store.join(root, self.partition, self.base_file) if self.partition else store.join(root, self.base_file)

    def base_rel(self) -> str:
        return f"{self.partition}/{self.base_file}" if self.partition else self.base_file

    def logs_rel(self):
        return [f"{self.partition}/{n}" if self.partition else n for n in self.log_files]

    def log_sizes(self, table_path: str):
        """Current byte size of each log file (None when one is missing).  A log file can grow
        in place (table version 6 merge-on-read on storage with append, such as HDFS), so its
        name alone does not identify its content: the index records these sizes with the
        slice and trusts an entry only while they are unchanged."""
        out = []
        store, root = table_root(table_path)
        for rel in self.logs_rel():
            st = store.stat(store.join(root, *rel.split("/")))
            if st is None:
                return None
            out.append(st[0])
        return out

    def to_json(self) -> dict:
        return {
            "partition": self.partition,
            "file_id": self.file_id,
            "base_file": self.base_file,
            "log_files": list(self.log_files),
            "instant": self.instant,
        }

    @staticmethod
    def from_json(d) -> "SliceRef":
        return SliceRef(
            d["partition"], d["file_id"], d["base_file"], tuple(d.get("log_files", ())), d.get("instant", "")
        )


@dataclass
class TableState:
    """Current snapshot of a table: its file slices, schema, latest completed instant."""

    path: str
    slices: list
    schema: pa.Schema  # as a snapshot read returns it
    latest_instant: str
    completed_instants: list = field(default_factory=list)
    is_mor: bool = False
    populate_meta_fields: bool = True
    options: dict = field(default_factory=dict)


def _is_empty_timeline(e: Exception) -> bool:
    """The ``hudi`` package's generic error for a timeline without completed instants (the only
    error listing instants may ignore; any other one is raised)."""
    return "no completed commit" in str(e).lower()


def table_state(table_path: str, as_of=None, listing: bool = True) -> TableState:
    """Slices, schema and instants of the table now (or as of instant ``as_of``).

    ``listing=False`` skips the file-slice listing (``slices`` is then None): callers
    that can reuse an index manifest's listing (:func:`listing_is_current`) use it."""
    t = open_table(table_path)
    opts = t.hudi_options()
    populate = opts.get("hoodie.populate.meta.fields", "true").lower() != "false"
    schema = t.get_schema_with_meta_fields() if populate else t.get_schema()
    tl = t.get_timeline()
    instants = []
    for fn in (tl.get_completed_commits, tl.get_completed_deltacommits, tl.get_completed_replacecommits):
        try:
            instants.extend(i.timestamp for i in fn())
        except Exception as e:  # noqa: BLE001 - the package raises a generic error on empty timelines
            if not _is_empty_timeline(e):
                raise
    instants = sorted(set(instants))
    if as_of is not None:
        instants = [i for i in instants if i <= as_of]
        latest = instants[-1] if instants else "0"
    else:
        try:
            latest = tl.get_latest_commit_timestamp()
        except Exception as e:  # noqa: BLE001 - "Timeline has no completed commit."
            if not _is_empty_timeline(e):
                raise
            latest = instants[-1] if instants else "0"
    slices = [] if listing else None
    if instants and listing:
        hudi = _hudi()
        ro = hudi.HudiReadOptions().with_as_of_timestamp(latest) if as_of is not None else None
        for s in t.get_file_slices(ro):
            slices.append(
                SliceRef(
                    s.partition_path, s.file_id, s.base_file_name, tuple(s.log_file_names), s.creation_instant_time
                )
            )
    return TableState(canonical(table_path), slices, schema, latest, instants, t.is_mor, populate, opts)


# ------------------------------------------------------------ timeline fingerprint
#
# The ``hudi`` package derives a table's current file slices from the active
# timeline (completed instants and their metadata), the table properties and the
# files in the partitions.  A writer changes partition files only under an
# instant it first records on the timeline (requested / inflight files), and every
# action that removes or replaces slices (rollback, restore, clean, replacecommit,
# compaction, clustering, archival) changes the timeline too.  So when the
# timeline directories hold exactly the files (names, sizes, modification times)
# they held when the index listed the slices, and no instant is pending, that
# listing is still the table's current one.  A pending instant (requested or
# inflight, of any action) may be writing files right now, so then the caller
# lists the slices again; anything unexpected also means "list again".

_INSTANT_RE = re.compile(r"^(\d{8,})(?:_(\d{8,}))?\.([A-Za-z_]+)(?:\.(requested|inflight))?$")
_TIMELINE_DIRS = (
    "",
    "timeline",
    ".schema",  # data table timeline (layouts 1 and 2), schemas
    "metadata/.hoodie",
    "metadata/.hoodie/timeline",  # the metadata table's timeline, when present
)


@dataclass(frozen=True)
class TimelineFingerprint:
    """Digest of the timeline files and whether any instant is pending (requested / inflight)."""

    digest: str
    pending: tuple
    files: int

    @property
    def settled(self) -> bool:
        return not self.pending


def timeline_fingerprint(table_path: str) -> TimelineFingerprint:
    """Fingerprint of ``<table>/.hoodie``'s timeline files (see the comment above).

    Regular files directly under ``.hoodie``, ``.hoodie/timeline``, ``.hoodie/.schema``
    and the metadata table's timeline directories enter the digest with their size,
    modification time and what tells a rewrite keeping both (locally the change time
    and inode, on S3 the ETag); ``pending`` lists instants with a requested/inflight
    file and no completed one."""
    store, root = table_root(table_path)
    hd = store.join(root, ".hoodie")
    h = hashlib.sha1()
    states = {}
    n = 0
    for sub in _TIMELINE_DIRS:
        d = store.join(hd, *sub.split("/")) if sub else hd
        if store.local:
            try:
                it = os.scandir(d)
            except (FileNotFoundError, NotADirectoryError):
                h.update(f"-{sub}\n".encode())
                continue
            with it:
                found = []
                for e in it:
                    if e.is_file(follow_symlinks=False):
                        st = e.stat(follow_symlinks=False)  # a rewrite keeping size and mtime: ctime, inode
                        found.append((e.name, st.st_size, f"{st.st_mtime_ns}\0{st.st_ctime_ns}\0{st.st_ino}"))
        else:  # object stores have no empty directories: an absent prefix lists nothing
            found = [(e.rel, e.size, f"{e.mtime_ns}\0{e.etag or ''}") for e in store.list_files(d, recursive=False)]
            if not found:
                h.update(f"-{sub}\n".encode())
                continue
        rows = []
        for name, size, mtime_ns in found:
            rows.append(f"{sub}/{name}\0{size}\0{mtime_ns}\n")
            if sub in ("", "timeline"):
                m = _INSTANT_RE.match(name)
                if m:
                    ts, action, state = m.group(1), m.group(3), m.group(4)
                    done = state is None and action != "inflight"  # layout 1 writes <ts>.inflight for commits
                    states[ts] = states.get(ts, False) or done
        rows.sort()
        n += len(rows)
        h.update(f"+{sub}\n".encode())
        for r in rows:
            h.update(r.encode("utf-8", "surrogateescape"))
    pending = tuple(sorted(ts for ts, done in states.items() if not done))
    return TimelineFingerprint(h.hexdigest(), pending, n)


def listing_is_current(table_path: str, recorded) -> bool:
    """True when ``recorded`` (a manifest's ``listing`` dict) was taken on exactly
    the current, settled timeline: its slices are then the table's current ones."""
    if not recorded or not isinstance(recorded, dict) or not recorded.get("timeline"):
        return False
    fp = timeline_fingerprint(table_path)
    return fp.settled and fp.digest == recorded["timeline"]
