"""``paimon-fast sample KIND DIR``: the small tables the examples of README.md and docs/ read.

    paimon-fast sample parquet events             # a Parquet dataset: 20,000 rows, 4 files, region= partitions
    paimon-fast sample parquet events --indexed   # the same with file indexes (built in this process)
    paimon-fast sample paimon warehouse           # a Paimon warehouse: db.orders and db.items (pypaimon)
    paimon-fast sample hudi trips                 # a copy-on-write Hudi table, partitioned by city

No Spark is needed.  The Paimon tables are written by pypaimon (the ``tables`` extra); the Hudi
table by the package's small copy-on-write writer (:mod:`paimon_fast.hudi.sample`), and read
with the ``hudi`` package.  :func:`generate_sample` also writes the demo's dataset.
"""

from __future__ import annotations

import os

from .cli import command

# the Parquet sample dataset (also the demo's) is written by tables/sample.py: handed on here
from .tables.sample import COUNTRIES, STATUSES, generate_sample  # noqa: E402,F401


#: the file indexes ``sample parquet --indexed`` builds (the examples' ``events/``)
SAMPLE_INDEXES = {
    "file-index.bloom-filter.columns": "user_id",
    "file-index.bloom-filter.user_id.items": "5000",
    "file-index.range-bitmap.columns": "amount",
    "file-index.bitmap.columns": "status",
}


def sample_parquet(path: str, rows: int = 20_000, files: int = 4, indexed: bool = False) -> list:
    """The examples' ``events/`` dataset (:func:`generate_sample`), with :data:`SAMPLE_INDEXES`
    built in this process when ``indexed``.  Returns the data files written."""
    paths = generate_sample(path, rows, files)
    if indexed:
        from .tables import ParquetDataset

        ParquetDataset(path).build(SAMPLE_INDEXES)
    return paths


def sample_paimon(warehouse: str) -> list:
    """A Paimon warehouse written by pypaimon: ``db.orders``, an append table with file indexes
    (a bloom filter on ``id``, a range bitmap on ``price``), and ``db.items``, a row-tracking,
    data-evolution table (for global indexes) with an ARRAY column ``tags``; 1,000 rows each in
    4 commits.  Returns the tables' names."""
    from .errors import require

    require("pypaimon", "the Paimon sample tables")
    import pyarrow as pa
    from pypaimon import CatalogFactory, Schema

    catalog = CatalogFactory.create({"warehouse": os.path.abspath(warehouse)})
    catalog.create_database("db", True)
    tables = {
        "orders": (
            [],
            {
                "file-index.bloom-filter.columns": "id",
                "file-index.bloom-filter.id.items": "1000",
                "file-index.range-bitmap.columns": "price",
            },
        ),
        "items": (
            [("tags", pa.list_(pa.string()))],
            {"row-tracking.enabled": "true", "data-evolution.enabled": "true"},
        ),
    }
    for name, (extra, options) in tables.items():
        schema = pa.schema([("id", pa.int64()), ("category", pa.string()), ("price", pa.float64()), *extra])
        catalog.create_table(f"db.{name}", Schema.from_pyarrow_schema(schema, options=options), False)
        table = catalog.get_table(f"db.{name}")
        for c in range(4):
            ids = list(range(c * 250, (c + 1) * 250))
            columns = {
                "id": ids,
                "category": [["red", "green", "blue", "black"][i % 4] for i in ids],
                "price": [float(i % 97) for i in ids],
            }
            if extra:
                columns["tags"] = [["new", "sale"] if i % 10 == 0 else ["new"] for i in ids]
            wb = table.new_batch_write_builder()
            w = wb.new_write()
            w.write_arrow(pa.table(columns, schema=schema))
            wb.new_commit().commit(w.prepare_commit())
            w.close()
    return [f"db.{name}" for name in tables]


def sample_hudi(path: str) -> str:
    """A copy-on-write Hudi table: ``id``, ``city`` (the partition: chennai, san_francisco,
    sao_paulo), ``rider`` (17 riders), ``fare``; 300 rows in two file groups per partition, one
    commit.  Returns its absolute path."""
    import pyarrow as pa

    from .hudi.sample import CowTable

    schema = pa.schema([("id", pa.int64()), ("city", pa.string()), ("rider", pa.string()), ("fare", pa.float64())])
    t = CowTable(path, schema, partition_field="city", name="trips")
    cities = ["chennai", "san_francisco", "sao_paulo"]
    rows = pa.table(
        {
            "id": list(range(300)),
            "city": [cities[i % 3] for i in range(300)],
            "rider": [f"rider-{i % 17}" for i in range(300)],
            "fare": [float(i) for i in range(300)],
        },
        schema=schema,
    )
    t.insert(rows, groups=2)
    return t.path


# ---------------------------------------------------------------- the command

KINDS = ("parquet", "paimon", "hudi")


def sample_setup(p):
    p.add_argument("kind", choices=KINDS, help="parquet (a dataset), paimon (a warehouse) or hudi (a table)")
    p.add_argument("dir", help="where to write it: a directory that does not exist yet, or an empty one")
    p.add_argument("--rows", type=int, default=20_000, help="parquet: rows (default 20,000)")
    p.add_argument("--files", type=int, default=4, help="parquet: data files (default 4)")
    p.add_argument("--indexed", action="store_true", help="parquet: also build file indexes, in this process")


@command(
    "sample", "write the small sample tables the examples read: a Parquet dataset, a Paimon warehouse, a Hudi table"
)
def sample_main(args):
    if os.path.exists(args.dir) and (not os.path.isdir(args.dir) or os.listdir(args.dir)):
        raise FileExistsError(17, "Exists and is not an empty directory (the sample writes a new table)", args.dir)
    if args.kind == "parquet":
        if args.rows < 1 or args.files < 1 or args.files > args.rows:
            raise SystemExit(f"--rows and --files take 1 <= files <= rows, got {args.rows:,} rows, {args.files} files")
        paths = sample_parquet(args.dir, args.rows, args.files, args.indexed)
        what = f"a Parquet dataset: {args.rows:,} rows in {len(paths)} files under region= partitions"
        if args.indexed:
            what += (
                ", with file indexes ("
                + ", ".join(f"{k.split('.')[1]} on {v}" for k, v in SAMPLE_INDEXES.items() if k.endswith(".columns"))
                + ")"
            )
    elif args.kind == "paimon":
        names = sample_paimon(args.dir)
        what = f"a Paimon warehouse with {' and '.join(names)} (1,000 rows each)"
    else:
        sample_hudi(args.dir)
        what = "a copy-on-write Hudi table partitioned by city (300 rows)"
    print(f"{args.dir}: {what}")


sample_main.setup = sample_setup
sample_main.description = """\
Writes one of the small tables the examples of README.md and docs/ read, in a new directory:
  parquet  events/: id, user_id, country, status, amount, qty under region= partitions
           (--indexed: with a bloom filter on user_id, a range bitmap on amount and a
           bitmap on status)
  paimon   warehouse/: db.orders (file indexes) and db.items (row tracking, data evolution;
           global indexes), written by pypaimon (the tables extra)
  hudi     trips/: a copy-on-write Hudi table (id, city, rider, fare), read with the hudi package
No Spark is needed."""
sample_main.examples = """
paimon-fast sample parquet events
paimon-fast sample parquet events --indexed --rows 100000 --files 8
paimon-fast sample paimon warehouse
paimon-fast sample hudi trips
"""
