"""Orphan files of failed or superseded runs, listed and removed (``paimon-fast gc``).

Writers on object stores never replace a file in place: index files get unique
names and a run becomes visible only through the commit object it writes last
(the dataset catalog, a global index listing, a Hudi sidecar manifest).  A run
killed before that commit leaves files nothing references; superseded commit
versions stay behind too.  :func:`collect` finds them:

* in a Parquet dataset: file index containers (``_file_index/**.index``, and the old
  layout's ``*.index`` beside the data files) that no live catalog version names, data files an
  optimize replaced (``_optimize/retired/``) once no live catalog version names them, files of an
  optimize that never committed (``_optimize/<run>/``), deletion files in
  ``_deletion_vectors/`` no live version points at, ``_global_index/<column>/*.index`` files no
  live listing of the column lists, the exchange files (``_global_index/<column>/.runs-*/``) of a
  Spark build that died, expired commit versions, and temporary files (``.<name>.tmp-*``) of
  interrupted local / HDFS writes;
* in a Hudi table's sidecar index (:mod:`paimon_fast.hudi.storage`): segments no
  manifest references and temporary files.

**Live versions.**  A catalog (or listing) version is live while it is one of the newest
``keep_versions`` or was superseded less than ``min_age`` seconds ago: an operation that took its
snapshot at that version may still be reading the files it names, so those files stay; an expired
version goes with the files only it named.  Data files and files of unknown kinds are never
touched.  Files younger than ``min_age`` seconds are left alone too (a run in progress writes its
files before its commit, and its temporary files belong to it); the default is one hour.  An
operation that runs longer than ``min_age`` may find files of its snapshot gone: it fails with a
clear error, never with a wrong answer.  ``delete=False`` (the default, and the CLI's unless
``--delete``) only lists.  A live version that is damaged stops gc before it removes anything.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from typing import List

from ..cli import command
from ..io.fs import TMP_MARK, VERSION_DIR, CommitFile, resolve
from .catalog import GRACE_SECONDS
from .steps import step

DEFAULT_MIN_AGE = GRACE_SECONDS


@dataclass
class Orphan:
    path: str  # as shown (URI or local path)
    size: int
    reason: str


@dataclass
class GcReport:
    """What :func:`collect` found (``orphans``) and, with ``delete=True``, removed."""

    root: str = ""
    kind: str = ""
    orphans: List[Orphan] = field(default_factory=list)
    removed: int = 0
    bytes_removed: int = 0
    too_young: int = 0
    deleted: bool = False

    @property
    def orphan_bytes(self) -> int:
        return sum(o.size for o in self.orphans)

    def as_dict(self) -> dict:
        d = dict(self.__dict__)
        d["orphans"] = [o.__dict__ for o in self.orphans]
        d["orphan_bytes"] = self.orphan_bytes
        return d

    def __str__(self):
        lines = [f"{o.path}  {o.size:,} bytes  ({o.reason})" for o in self.orphans]
        what = (
            f"removed {self.removed} orphan files ({self.bytes_removed:,} bytes)"
            if self.deleted
            else f"{len(self.orphans)} orphan files ({self.orphan_bytes:,} bytes); dry run, nothing removed "
            "(--delete removes them)"
        )
        young = f", {self.too_young} younger than the minimum age kept" if self.too_young else ""
        return "\n".join(lines + [f"{self.kind} {self.root}: {what}{young}"])


def collect(
    path, filesystem=None, *, delete: bool = False, min_age: float = DEFAULT_MIN_AGE, keep_versions: int = 1
) -> GcReport:
    """Orphans of the dataset or Hudi table at ``path`` (a path or URI); removed when
    ``delete``.  See the module docstring."""
    now_ns = time.time_ns()
    store, root = resolve(path, filesystem)
    if store.is_dir(store.join(root, ".hoodie")):
        # an import between table kinds (the one allowed): one gc command serves both; the Hudi
        # sidecar's orphan rule lives with the sidecar's layout (hudi/storage.py, nothing above fs)
        from ..hudi.storage import orphan_files

        kind, found = "hudi table", orphan_files(path if filesystem is None else root, store)
    else:
        kind, found = "dataset", _dataset_orphans(store, root, keep_versions, min_age, now_ns)
    step("gc.collected")
    rep = GcReport(root=store.uri(root), kind=kind, deleted=delete)
    for e, reason in found:
        if min_age > 0 and e.mtime_ns and (now_ns - e.mtime_ns) < min_age * 1e9:
            rep.too_young += 1
            continue
        rep.orphans.append(Orphan(store.uri(e.path), e.size, reason))
        if delete and store.delete(e.path):
            rep.removed += 1
            rep.bytes_removed += e.size
            parent = store.dirname(e.path)
            if store.local and store.basename(parent).startswith(".runs-"):
                try:  # an interrupted global index build's exchange directory, once empty
                    os.rmdir(parent)
                except OSError:
                    pass
    return rep


def _live_versions(cf, keep: int, min_age: float, now_ns: int):
    """``(live versions, expired [(version, FileEntry)])`` of a commit file (module docstring)."""
    entries = cf.version_entries()
    keep = max(1, keep)
    live, expired = [], []
    for i, (v, e) in enumerate(entries):
        if i >= len(entries) - keep:
            live.append(v)
            continue
        successor = entries[i + 1][1]
        if min_age > 0 and (not successor.mtime_ns or now_ns - successor.mtime_ns < min_age * 1e9):
            live.append(v)  # superseded moments ago: a reader may still be at this version
        else:
            expired.append((v, e))
    if not entries and cf.store.exists(cf.legacy_path):
        live.append(0)  # the plain catalog file of earlier versions is the current one
    return live, expired


def _read_version(cf, v: int) -> dict:
    from ..io.checksum import open_json

    path = cf.version_path(v)
    try:
        data = cf.store.read_bytes(path)
    except FileNotFoundError:
        return {}
    return open_json(data, f"{cf.store.uri(path)} (a live version: gc removes nothing)")[0]


def _dataset_orphans(store, root, keep_versions: int, min_age: float = 0.0, now_ns: int = 0):
    from .deletes import DV_DIR, DV_KEY
    from ..globalindex.runs import RUNS_PREFIX
    from .globalindex import INDEX_DIR, LISTING
    from .layout import FILE_INDEX_DIR, data_rel_of_index
    from .parquet import CATALOG_NAME, INDEX_SUFFIX, ParquetDataset, is_data_file_name
    from .replaced import OPT_DIR, OPT_KEY, RETIRED_DIR, token

    now_ns = now_ns or time.time_ns()
    ds = ParquetDataset(root, store)
    files = {f.path: f for f in ds.files()}
    live, expired = _live_versions(ds.catalog, keep_versions, min_age, now_ns)
    live_index, live_dv = set(), set()
    live_retired, live_runs = set(), set()  # (data file, identity token) an optimize moved away; runs pending
    for v in live:
        version = _read_version(ds.catalog, v)
        opt = version.get(OPT_KEY) or {}
        live_runs.update((opt.get("pending") or {}).keys())
        for rel, ident in (opt.get("replaced") or {}).items():
            if isinstance(ident, dict):
                live_retired.add((rel, token(ident)))
        for rel, e in (version.get("files") or {}).items():
            if not isinstance(e, dict):
                continue
            if "size" in e:
                live_retired.add((rel, token(e)))
            fi = e.get("file_index") or {}
            if "path" in fi:
                live_index.add(fi["path"])
            elif "file" in fi:  # the old layout: beside the data file
                d = rel.rsplit("/", 1)[0] + "/" if "/" in rel else ""
                live_index.add(d + fi["file"])
            dv = e.get(DV_KEY)
            if dv:
                live_dv.add(dv["file"])
    stale_versions = {e.path for _, e in expired}
    listings = {}
    out = []
    for e in store.list_files(root):
        parts = e.rel.split("/")
        name = parts[-1]
        if TMP_MARK in name and name.startswith("."):
            out.append((e, "temporary file of an interrupted write"))
            continue
        if e.path in stale_versions:
            out.append((e, "superseded catalog version"))
            continue
        if parts[0] == INDEX_DIR and len(parts) >= 3:
            col = parts[1]
            if col not in listings:
                cf = CommitFile(store, store.join(root, INDEX_DIR, col), LISTING)
                col_live, col_expired = _live_versions(cf, keep_versions, min_age, now_ns)
                listed = set()
                for v in col_live:
                    listed |= {f["file"] for f in _read_version(cf, v).get("files", [])}
                listings[col] = (listed, {x.path for _, x in col_expired})
            listed, stale = listings[col]
            if len(parts) == 3 and name.endswith(INDEX_SUFFIX) and name not in listed:
                out.append((e, f"global index file of column {col!r} no live listing lists"))
            elif len(parts) == 4 and parts[2].startswith(RUNS_PREFIX):
                out.append((e, f"exchange file of an interrupted global index build of column {col!r}"))
            elif e.path in stale:
                out.append((e, f"superseded global index listing of column {col!r}"))
            continue
        if parts[0] == FILE_INDEX_DIR:
            if name.endswith(INDEX_SUFFIX) and e.rel not in live_index:
                out.append((e, _index_orphan_reason(data_rel_of_index(e.rel), files)))
            continue
        if parts[0] == OPT_DIR:
            if len(parts) >= 3 and parts[1] == RETIRED_DIR:
                data_rel, _, tok = "/".join(parts[2:]).rpartition(".")
                if (data_rel, tok) not in live_retired:
                    out.append((e, "data file an optimize replaced that no live catalog version names"))
            elif len(parts) >= 3 and parts[1] not in live_runs:
                out.append((e, "file of an optimize that never committed"))
            continue
        if parts[0] == DV_DIR and len(parts) == 2:
            if name.startswith("index-") and name not in live_dv:
                out.append((e, "deletion file no live catalog version references"))
            continue
        if any(p.startswith(("_", ".")) for p in parts[:-1]) or name == CATALOG_NAME or parts[0] == VERSION_DIR:
            continue
        if name.endswith(INDEX_SUFFIX) and not is_data_file_name(name) and e.rel not in live_index:
            out.append((e, _index_orphan_reason(data_rel_of_index(e.rel), files)))
    return out


def _index_orphan_reason(data_rel, files) -> str:
    return (
        "file index the catalog does not name"
        if data_rel in files
        else "file index of a data file that no longer exists"
    )


def gc_setup(p):
    p.add_argument("path", help="dataset or Hudi table: a path or URI (s3://, gs://, abfs://, hdfs://, file://)")
    p.add_argument("--delete", action="store_true", help="remove the orphans (default: list them only)")
    p.add_argument(
        "--min-age",
        type=float,
        default=DEFAULT_MIN_AGE,
        help="leave files younger than this many seconds (a run may still be writing; default 3600)",
    )
    p.add_argument(
        "--keep-versions",
        type=int,
        default=1,
        help="commit versions to keep besides those superseded within --min-age (default 1)",
    )
    p.add_argument("--json", action="store_true", help="print the report as JSON")


@command("gc", "list (--delete: remove) orphan files of failed or superseded runs in a dataset or Hudi table")
def gc_main(args):
    rep = collect(args.path, delete=args.delete, min_age=args.min_age, keep_versions=args.keep_versions)
    if args.json:
        print(json.dumps(rep.as_dict(), indent=1))
    else:
        print(rep)
    return 0


gc_main.setup = gc_setup
gc_main.examples = """
paimon-fast gc events
paimon-fast gc s3://bucket/events --delete --min-age 86400
"""
