"""The Hudi table as the ``hudi`` package (the Rust reader's Python binding) sees it."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Tuple

import pyarrow as pa

_TABLES = {}


def _hudi():
    try:
        import hudi
    except ImportError as e:  # pragma: no cover - exercised only without the extra
        raise ImportError("the Hudi bitmap index needs the `hudi` package: pip install 'paimon-fast[tables]'") from e
    return hudi


def open_table(table_path: str, cached: bool = False):
    """A ``hudi.HudiTable`` for ``table_path`` (made absolute, as the package requires)."""
    hudi = _hudi()
    p = os.path.abspath(table_path)
    if cached:
        t = _TABLES.get(p)
        if t is None:
            t = _TABLES[p] = hudi.HudiTableBuilder.from_base_uri(p).build()
        return t
    return hudi.HudiTableBuilder.from_base_uri(p).build()


@dataclass(frozen=True)
class SliceRef:
    """One file slice: its file group and the files that make it up."""

    partition: str
    file_id: str
    base_file: str            # base file name ("" for a log-only slice)
    log_files: Tuple[str, ...] = ()
    instant: str = ""

    @property
    def identity(self):
        return (self.partition, self.file_id, self.base_file, self.log_files)

    @property
    def group(self):
        return (self.partition, self.file_id)

    def base_path(self, table_path: str) -> str:
        return os.path.join(table_path, self.partition, self.base_file) if self.partition else \
            os.path.join(table_path, self.base_file)

    def base_rel(self) -> str:
        return f"{self.partition}/{self.base_file}" if self.partition else self.base_file

    def logs_rel(self):
        return [f"{self.partition}/{n}" if self.partition else n for n in self.log_files]

    def to_json(self) -> dict:
        return {"partition": self.partition, "file_id": self.file_id, "base_file": self.base_file,
                "log_files": list(self.log_files), "instant": self.instant}

    @staticmethod
    def from_json(d) -> "SliceRef":
        return SliceRef(d["partition"], d["file_id"], d["base_file"], tuple(d.get("log_files", ())),
                        d.get("instant", ""))


@dataclass
class TableState:
    """Current snapshot of a table: its file slices, schema, latest completed instant."""

    path: str
    slices: list
    schema: pa.Schema                  # as a snapshot read returns it
    latest_instant: str
    completed_instants: list = field(default_factory=list)
    is_mor: bool = False
    populate_meta_fields: bool = True
    options: dict = field(default_factory=dict)


def table_state(table_path: str, as_of=None) -> TableState:
    """Slices, schema and instants of the table now (or as of instant ``as_of``)."""
    t = open_table(table_path)
    opts = t.hudi_options()
    populate = opts.get("hoodie.populate.meta.fields", "true").lower() != "false"
    schema = t.get_schema_with_meta_fields() if populate else t.get_schema()
    tl = t.get_timeline()
    instants = []
    for fn in (tl.get_completed_commits, tl.get_completed_deltacommits, tl.get_completed_replacecommits):
        try:
            instants.extend(i.timestamp for i in fn())
        except Exception:  # noqa: BLE001 - the package raises a generic error on empty timelines
            pass
    instants = sorted(set(instants))
    if as_of is not None:
        instants = [i for i in instants if i <= as_of]
        latest = instants[-1] if instants else "0"
    else:
        try:
            latest = tl.get_latest_commit_timestamp()
        except Exception:  # noqa: BLE001 - "Timeline has no completed commit."
            latest = instants[-1] if instants else "0"
    slices = []
    if instants:
        hudi = _hudi()
        ro = hudi.HudiReadOptions().with_as_of_timestamp(latest) if as_of is not None else None
        for s in t.get_file_slices(ro):
            slices.append(SliceRef(s.partition_path, s.file_id, s.base_file_name, tuple(s.log_file_names),
                                   s.creation_instant_time))
    return TableState(os.path.abspath(table_path), slices, schema, latest, instants, t.is_mor, populate,
                      t.hudi_options())
