"""What the tests of a dataset's guarantees share (test_dataset_trust.py, test_dataset_stress.py):
small datasets whose files can be rewritten with the same byte size, and an oracle of their own.

The oracle never asks the product: it reads every data file with pyarrow (listed through the
store's pyarrow filesystem, not through paimon-fast), evaluates each query with a Python function
of the row, and removes the ids the test itself recorded as deleted.  Ids are unique across the
dataset, and a rewritten file gets new ids (its ``base``), so "deleted" is a set of ids.
"""

from __future__ import annotations

import os
import posixpath

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

COUNTRIES = ["NO", "IN", "DE", "FR"]
ROWS = 200
FILES = 3
# no compression, no dictionary: the same number of rows gives the same byte size whatever the values
WRITE = dict(compression="none", use_dictionary=False)
OPTIONS = {
    "file-index.bitmap.columns": "country",
    "file-index.bloom-filter.columns": "id",
    "file-index.range-bitmap.columns": "amount",
    "file-index.in-manifest-threshold": "64",  # index files, not inline: their checksums are tested
}
QUERIES = {
    None: lambda r: True,
    "country = 'NO'": lambda r: r["country"] == "NO",
    "id = 217 OR id = 100217": lambda r: r["id"] in (217, 100217),
    "amount > 900": lambda r: r["amount"] > 900,
    "country IN ('DE', 'FR') AND amount < 300": lambda r: r["country"] in ("DE", "FR") and r["amount"] < 300,
}
DELETE = "country = 'IN' AND amount < 500"


def delete_fn(r):
    return r["country"] == "IN" and r["amount"] < 500


def content(k: int, base: int = 0, rows: int = ROWS) -> pa.Table:
    """File ``k``'s rows; ``base`` (a multiple of 100,000) gives the rows of a rewrite: other ids,
    other countries, other amounts, the same byte size."""
    ids = np.arange(k * rows, (k + 1) * rows, dtype=np.int64) + base
    return pa.table(
        {
            "id": ids,
            "country": [COUNTRIES[(i * 7 + k + base // 100_000) % 4] for i in range(rows)],
            "amount": (ids * 37 + base // 1000) % 1000,
        }
    )


class Where:
    """A dataset's directory: locally (``fs`` None) or in a bucket (a pyarrow filesystem); data
    files written with :attr:`write_options`."""

    write_options = WRITE

    def __init__(self, uri: str, fs=None, path: str = ""):
        self.uri, self.fs, self.path = uri, fs, path or uri

    def join(self, rel: str) -> str:
        return os.path.join(self.path, rel) if self.fs is None else posixpath.join(self.path, rel)

    def write(self, rel: str, table: pa.Table) -> None:
        if self.fs is None:
            os.makedirs(os.path.dirname(self.join(rel)), exist_ok=True)
            pq.write_table(table, self.join(rel), **self.write_options)
        else:
            with self.fs.open_output_stream(self.join(rel)) as out:
                pq.write_table(table, out, **self.write_options)

    def data_files(self) -> list:
        """The data files a plain reader lists (hidden names skipped as Spark skips them)."""
        if self.fs is None:
            out = []
            for d, dirs, files in os.walk(self.path):
                dirs[:] = [x for x in dirs if not x.startswith(("_", "."))]
                out += [os.path.relpath(os.path.join(d, f), self.path) for f in files if f.endswith(".parquet")]
            return sorted(x.replace(os.sep, "/") for x in out if not os.path.basename(x).startswith((".", "_")))
        import pyarrow.fs as pafs

        infos = self.fs.get_file_info(pafs.FileSelector(self.path, recursive=True))
        rels = [i.path[len(self.path) + 1 :] for i in infos if i.type == pafs.FileType.File]
        return sorted(r for r in rels if r.endswith(".parquet") and not any(p[:1] in "_." for p in r.split("/")))

    def read(self, rel: str) -> pa.Table:
        if self.fs is None:
            return pq.read_table(self.join(rel))
        with self.fs.open_input_file(self.join(rel)) as f:
            return pq.read_table(f)

    def metadata(self, rel: str):
        if self.fs is None:
            return pq.ParquetFile(self.join(rel)).metadata
        with self.fs.open_input_file(self.join(rel)) as f:
            return pq.ParquetFile(f).metadata

    def size(self, rel: str) -> int:
        if self.fs is None:
            return os.path.getsize(self.join(rel))
        return self.fs.get_file_info(self.join(rel)).size


def make(where: Where, files: int = FILES) -> None:
    for k in range(files):
        where.write(f"p=a/f{k}.parquet", content(k))


def rewrite(where: Where, rel: str, base: int = 100_000, rename: bool = False) -> None:
    """Rewrite the data file ``rel`` with other rows of the same byte size and, locally, put its
    modification time back: size and mtime say nothing changed (in place, or a new file renamed
    over it)."""
    k = int(rel.rsplit("/f", 1)[1].split(".")[0])
    before = where.size(rel)
    if where.fs is None:
        st = os.stat(where.join(rel))
        if rename:
            tmp = where.join(rel) + ".new"
            pq.write_table(content(k, base), tmp, **WRITE)
            os.replace(tmp, where.join(rel))
        else:
            pq.write_table(content(k, base), where.join(rel), **WRITE)
        os.utime(where.join(rel), ns=(st.st_atime_ns, st.st_mtime_ns))
        assert os.stat(where.join(rel)).st_mtime_ns == st.st_mtime_ns
    else:
        where.write(rel, content(k, base))
    assert where.size(rel) == before, "the rewrite must keep the byte size"


def rows_now(where: Where) -> list:
    out = []
    for rel in where.data_files():
        out += where.read(rel).to_pylist()
    return out


def oracle(where: Where, deleted: set, query=None, rows=None) -> list:
    """Ids of the rows where ``query`` holds (a key of :data:`QUERIES`), of the files as they are
    (or of ``rows``), without ``deleted``."""
    fn = QUERIES[query]
    return sorted(r["id"] for r in (rows_now(where) if rows is None else rows) if r["id"] not in deleted and fn(r))


def deleted_by(where: Where, deleted: set, fn=delete_fn) -> set:
    """The ids a delete of ``fn`` deletes now."""
    return {r["id"] for r in rows_now(where) if r["id"] not in deleted and fn(r)}


def queries_for(uri: str) -> list:
    """The queries asked: all of them locally, three on S3 (each read there costs requests of a
    test server in this process)."""
    return list(QUERIES) if "://" not in uri else [None, "country = 'NO'", "id = 217 OR id = 100217"]


def answers(uri: str, filesystem=None) -> dict:
    """The queries' ids as the product reads them (a new dataset object each time; locally the
    count too)."""
    from paimon_fast.tables import ParquetDataset

    out = {}
    for q in queries_for(uri):
        r = ParquetDataset(uri, filesystem).read(q)
        t = r.to_arrow()
        out[q] = sorted(t.column("id").to_pylist())
        if "://" not in uri:
            assert r.count() == len(out[q]), q
    return out


def expected(where: Where, deleted: set) -> dict:
    rows = rows_now(where)
    return {q: oracle(where, deleted, q, rows) for q in queries_for(where.uri)}
