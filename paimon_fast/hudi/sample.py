"""A minimal copy-on-write Hudi writer for sample tables (``paimon-fast sample hudi``) and the
tests: small tables (table version 6, timeline layout 1) that the ``hudi`` package reads back.
Each commit rewrites the base file of every file group it touches, as a copy-on-write writer
does; meta columns are populated.  Not Hudi's writer: no compaction, cleaning, metadata table or
log files; for examples, tests and benchmarks.

    t = CowTable("trips", schema, partition_field="city")
    t.insert(rows, groups=2)                      # one commit, two file groups per partition
    t.update(lambda tbl: tbl.filter(...))         # another commit rewriting the groups
"""

from __future__ import annotations

import datetime as dt
import json
import os
import uuid

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

META = [
    "_hoodie_commit_time",
    "_hoodie_commit_seqno",
    "_hoodie_record_key",
    "_hoodie_partition_path",
    "_hoodie_file_name",
]


def _avro_type(t):
    if pa.types.is_int32(t):
        return "int"
    if pa.types.is_int64(t):
        return "long"
    if pa.types.is_string(t):
        return "string"
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_float64(t):
        return "double"
    if pa.types.is_date32(t):
        return {"type": "int", "logicalType": "date"}
    if pa.types.is_timestamp(t):
        return {"type": "long", "logicalType": "timestamp-micros"}
    raise TypeError(f"the sample writer does not support {t}")


def avro_schema(name, schema):
    return json.dumps(
        {
            "type": "record",
            "name": f"{name}_record",
            "namespace": f"hoodie.{name}",
            "fields": [{"name": f.name, "type": ["null", _avro_type(f.type)], "default": None} for f in schema],
        }
    )


class CowTable:
    """A copy-on-write table at ``path`` with the data columns of ``schema``, record key ``key``,
    hive-style partitions by ``partition_field`` (None: unpartitioned)."""

    def __init__(self, path, schema: pa.Schema, key="id", partition_field=None, name="pf_test"):
        self.path = os.path.abspath(path)
        self.schema = schema
        self.key = key
        self.partition_field = partition_field
        self.name = name
        self.groups = {}  # (partition, file_id) -> current pa.Table (data columns)
        self._last = 0
        os.makedirs(os.path.join(self.path, ".hoodie"), exist_ok=True)
        props = {
            "hoodie.table.name": name,
            "hoodie.table.type": "COPY_ON_WRITE",
            "hoodie.table.version": "6",
            "hoodie.timeline.layout.version": "1",
            "hoodie.table.recordkey.fields": key,
            "hoodie.archivelog.folder": "archived",
            "hoodie.datasource.write.hive_style_partitioning": "true",
            "hoodie.datasource.write.partitionpath.urlencode": "false",
            "hoodie.populate.meta.fields": "true",
            "hoodie.datasource.write.drop.partition.columns": "false",
            "hoodie.table.keygenerator.class": (
                "org.apache.hudi.keygen.SimpleKeyGenerator"
                if partition_field
                else "org.apache.hudi.keygen.NonpartitionedKeyGenerator"
            ),
            "hoodie.table.create.schema": avro_schema(name, schema).replace(":", "\\:"),
        }
        if partition_field:
            props["hoodie.table.partition.fields"] = partition_field
        with open(os.path.join(self.path, ".hoodie", "hoodie.properties"), "w") as fh:
            fh.write("#Properties saved by paimon-fast\n")
            for k, v in props.items():
                fh.write(f"{k}={v}\n")

    def next_instant(self):
        t = dt.datetime(2025, 1, 1) + dt.timedelta(seconds=self._last + 1)
        self._last += 1
        return t.strftime("%Y%m%d%H%M%S") + "000"

    def _partition_of(self, value):
        return f"{self.partition_field}={value}" if self.partition_field else ""

    def commit(self, changes, complete=True, instant=None):
        """``changes``: {(partition, file_id): new full content (pa.Table of data columns)}.
        Returns the instant.  ``complete=False`` leaves the commit in flight."""
        ts = instant or self.next_instant()
        stats = {}
        for i, ((part, fid), tbl) in enumerate(sorted(changes.items())):
            tbl = tbl.cast(self.schema)
            fname = f"{fid}_{i}-1-{i}_{ts}.parquet"
            n = tbl.num_rows
            meta = {
                "_hoodie_commit_time": pa.array([ts] * n, pa.string()),
                "_hoodie_commit_seqno": pa.array([f"{ts}_{i}_{j}" for j in range(n)], pa.string()),
                "_hoodie_record_key": pc.cast(tbl.column(self.key), pa.string()),
                "_hoodie_partition_path": pa.array([part] * n, pa.string()),
                "_hoodie_file_name": pa.array([fname] * n, pa.string()),
            }
            full = pa.table({**meta, **{c: tbl.column(c) for c in tbl.column_names}})
            d = os.path.join(self.path, part) if part else self.path
            os.makedirs(d, exist_ok=True)
            pm = os.path.join(d, ".hoodie_partition_metadata")
            if not os.path.exists(pm):
                with open(pm, "w") as fh:
                    fh.write(f"#partition metadata\ncommitTime={ts}\npartitionDepth={1 if part else 0}\n")
            pq.write_table(full, os.path.join(d, fname), row_group_size=max(1, min(n, 131072)))
            stats.setdefault(part, []).append(
                {
                    "fileId": fid,
                    "path": f"{part}/{fname}" if part else fname,
                    "prevCommit": "null",
                    "numWrites": n,
                    "numDeletes": 0,
                    "numUpdateWrites": 0,
                    "numInserts": n,
                    "totalWriteBytes": 0,
                    "totalWriteErrors": 0,
                    "partitionPath": part,
                    "fileSizeInBytes": 0,
                }
            )
            if complete:
                self.groups[(part, fid)] = tbl
        hd = os.path.join(self.path, ".hoodie")
        open(os.path.join(hd, f"{ts}.commit.requested"), "w").close()
        with open(os.path.join(hd, f"{ts}.inflight"), "w") as fh:
            fh.write("{}")
        if complete:
            meta = {
                "partitionToWriteStats": stats,
                "compacted": False,
                "extraMetadata": {"schema": avro_schema(self.name, self.schema)},
                "operationType": "UPSERT",
            }
            with open(os.path.join(hd, f"{ts}.commit"), "w") as fh:
                json.dump(meta, fh)
        return ts

    # convenience operations -------------------------------------------------
    def insert(self, table: pa.Table, groups: int = 1):
        """Insert rows into ``groups`` new file groups per partition."""
        changes = {}
        parts = [None] if not self.partition_field else sorted(set(table.column(self.partition_field).to_pylist()))
        for p in parts:
            sub = table if p is None else table.filter(pc.equal(table.column(self.partition_field), p))
            part = self._partition_of(p) if p is not None else ""
            n = sub.num_rows
            for g in range(groups):
                chunk = sub.slice(g * n // groups, (g + 1) * n // groups - g * n // groups)
                changes[(part, f"{uuid.uuid4()}-0")] = chunk
        return self.commit(changes)

    def update(self, fn, groups=None, complete=True):
        """Rewrite file groups: ``fn(table) -> new table`` (updates / deletes)."""
        changes = {}
        for g, tbl in self.groups.items():
            if groups is None or g in groups:
                changes[g] = fn(tbl)
        return self.commit(changes, complete=complete)
