"""Shared helpers for the Paimon-table tests (pypaimon tables in temporary warehouses)."""

from __future__ import annotations

import os
import re
import shutil
import tarfile

from tests.support.paths import DATA

TABLES = os.path.join(DATA, "paimon_tables")
TARBALL = os.path.join(TABLES, "java09-append-tables.tar.gz")
ANSWERS = os.path.join(TABLES, "java09-answers.txt")

_ANSWER_RE = re.compile(
    r"^JAVA (\w+) (\w+)='([^']*)': planned files=(\d+) "
    r"rows returned by read \(no residual filter\)=(\d+)$"
)


def java_answers():
    """``[(table, column, value, planned_files, rows_returned)]`` from java09-answers.txt."""
    out = []
    with open(ANSWERS) as f:
        for line in f:
            m = _ANSWER_RE.match(line.strip())
            if m:
                t, c, v, n, r = m.groups()
                out.append((t, c, v, int(n), int(r)))
    return out


def unpack_java09(dest) -> str:
    """Unpack the Java 0.9 tables under ``dest``; returns the warehouse path."""
    with tarfile.open(TARBALL) as tf:
        try:
            tf.extractall(dest, filter="data")
        except TypeError:  # Python < 3.12 without the filter argument
            tf.extractall(dest)
    return str(dest)


def copy_table(src_wh, dst_wh, name):
    os.makedirs(os.path.join(dst_wh, "db.db"), exist_ok=True)
    shutil.copytree(os.path.join(src_wh, "db.db", name), os.path.join(dst_wh, "db.db", name))
    return dst_wh


def catalog(wh):
    from pypaimon import CatalogFactory

    return CatalogFactory.create({"warehouse": str(wh)})


def sample_batch(k, n=1000):
    import pyarrow as pa

    ids = range(k * n, (k + 1) * n)
    return pa.table(
        {
            "id": pa.array(ids, pa.int32()),
            "name": [f"name-{i}" for i in ids],
            "category": [["red", "green", "blue", "cyan"][(i % 2) + 2 * (k % 2)] for i in ids],
            "price": pa.array([(i * 7) % 1000 for i in ids], pa.int64()),
        }
    )


def commit_arrow(table, data):
    """Write ``data`` (a pyarrow Table) to a pypaimon table in one commit."""
    wb = table.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    w.write_arrow(data)
    c.commit(w.prepare_commit())
    w.close()
    c.close()


def pypaimon_read(table, predicate=None, projection=None, native=False):
    """pypaimon's own read of a table, as an Arrow table: its planner and its reader, with our
    ``predicate`` translated for its ``with_filter`` and ``projection`` (column names); ``native``:
    pypaimon-rust's reader (``read.native.enabled``).  The side the Paimon tests compare with."""
    from paimon_fast.paimon import to_pypaimon

    if native:
        table = table.copy({"read.native.enabled": "true"})
    rb = table.new_read_builder()
    if predicate is not None:
        rb = rb.with_filter(to_pypaimon(predicate, table))
    if projection is not None:
        rb = rb.with_projection(list(projection))
    return rb.new_read().to_arrow(rb.new_scan().plan().splits())


def needs_index_readers(*types):
    """A mark: skip unless the file index readers of ``types`` are on this branch."""
    import pytest

    from paimon_fast.fileindex import index_types

    missing = [t for t in types if t not in index_types()]
    return pytest.mark.skipif(bool(missing), reason=f"file index readers not on this branch: {missing}")


def create_sample_table(wh, name="t", options=None, files=4, n=1000, primary_keys=None, native=False):
    """A pypaimon table of ``files`` commits of ``n`` rows each (one data file per commit)."""
    import pyarrow as pa
    from pypaimon import Schema

    cat = catalog(wh)
    cat.create_database("db", True)
    schema = pa.schema([("id", pa.int32()), ("name", pa.string()), ("category", pa.string()), ("price", pa.int64())])
    opts = {"bucket": "-1" if not primary_keys else "1"}
    if native:
        opts["write.native.enabled"] = "true"
    opts.update(options or {})
    if primary_keys:
        schema = pa.schema([f.with_nullable(False) if f.name in primary_keys else f for f in schema])
    cat.create_table(f"db.{name}", Schema.from_pyarrow_schema(schema, primary_keys=primary_keys, options=opts), False)
    t = cat.get_table(f"db.{name}")
    for k in range(files):
        commit_arrow(t, sample_batch(k, n))
    return cat.get_table(f"db.{name}")


def make_blob64(positions) -> bytes:
    """A 64-bit deletion vector blob (Paimon's layout: length, magic, portable roaring bytes, CRC)."""
    import struct
    import zlib

    from paimon_fast.core import roaring
    from paimon_fast.paimon.deletion import MAGIC_64

    bin_ = struct.pack("<i", MAGIC_64) + roaring.serialize64(positions)
    return struct.pack(">i", len(bin_)) + bin_ + struct.pack(">I", zlib.crc32(bin_) & 0xFFFFFFFF)


def rewrite_dv_as_64bit(table_root) -> int:
    """Rewrite the one deletion vector of a (copied) Java 0.9 table as a 64-bit one:
    its index file and the index manifest entry's range and size.  Returns the
    vector's cardinality."""
    import io

    import fastavro

    from paimon_fast.paimon.deletion import parse_deletion_blob

    mdir = os.path.join(table_root, "manifest")
    (im,) = [n for n in os.listdir(mdir) if n.startswith("index-manifest-")]
    with open(os.path.join(mdir, im), "rb") as fh:
        reader = fastavro.reader(fh)
        schema, codec, records = reader.writer_schema, reader.codec, list(reader)
    (rec,) = [r for r in records if r["_INDEX_TYPE"] == "DELETION_VECTORS"]
    idx_path = os.path.join(table_root, "index", rec["_FILE_NAME"])
    with open(idx_path, "rb") as fh:
        data = fh.read()
    (rng,) = rec["_DELETIONS_VECTORS_RANGES"]
    old = parse_deletion_blob(data[rng["f1"] : rng["f1"] + rng["f2"] + 8], rng["f2"])
    blob = make_blob64(old.positions().tolist())
    with open(idx_path, "wb") as f:
        f.write(data[:1] + blob)
    rng["f2"] = len(blob)
    rec["_FILE_SIZE"] = 1 + len(blob)
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema), records, codec=codec)
    with open(os.path.join(mdir, im), "wb") as f:
        f.write(buf.getvalue())
    return len(old)
