"""``paimon-fast paimon ...``: pruned queries and index rewrites on Paimon tables.

    paimon-fast paimon query WAREHOUSE db.table --where "category = 'red'" [--select id,name] [--limit 20]
    paimon-fast paimon rewrite-index WAREHOUSE db.table [--option file-index.bloom-filter.columns=name]
        [--force] [--spark] [--dry-run]
    paimon-fast paimon create-global-index WAREHOUSE db.table COLUMN [--type bitmap|btree|multivalue]
        [--partition p=x ...] [--option sorted-index.records-per-range=1000000] [--spark]

All print a report (``--json`` for machine-readable output).  ``--where``
is parsed with ``paimon_fast.sqlpredicate.parse_predicate`` when that module
is installed, else with pypaimon's own WHERE parser (typed by the table).
"""
from __future__ import annotations

import json
import sys

from ..cli import command


def parse_where(text: str, table):
    """Our predicate for a SQL-like WHERE string (None for an empty one)."""
    if not text or not text.strip():
        return None
    try:
        from ..sqlpredicate import parse_predicate  # written separately; optional here
    except ImportError:
        parse_predicate = None
    if parse_predicate is not None:
        return parse_predicate(text)
    from pypaimon.common.where_parser import parse_where_clause

    from .predicates import from_pypaimon

    return from_pypaimon(parse_where_clause(text, table.fields))


def _open(warehouse, name, catalog_options):
    from pypaimon import CatalogFactory

    from .compat import legacy_manifest_table

    opts = {"warehouse": warehouse}
    opts.update(catalog_options)
    return legacy_manifest_table(CatalogFactory.create(opts).get_table(name))


def _kv(items):
    out = {}
    for it in items or ():
        if "=" not in it:
            raise SystemExit(f"expected KEY=VALUE, got {it!r}")
        k, v = it.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def _setup(p):
    sub = p.add_subparsers(dest="paimon_cmd", required=True)
    q = sub.add_parser("query", help="read rows matching --where, pruned with the table's file indexes")
    q.add_argument("warehouse")
    q.add_argument("table", help="db.table")
    q.add_argument("--where", default="", help="SQL-like predicate, e.g. \"category = 'red' AND id < 10\"")
    q.add_argument("--select", default="", help="comma-separated columns (default: all)")
    q.add_argument("--limit", type=int, default=20, help="rows to print (default 20; 0 = none)")
    q.add_argument("--json", action="store_true", help="print the report (and rows) as JSON")
    q.add_argument("--catalog-option", action="append", default=[], metavar="KEY=VALUE")
    q.add_argument("--workers", type=int, default=8, help="threads reading index bytes")
    r = sub.add_parser("rewrite-index", help="build the configured file indexes for files that lack them, commit")
    r.add_argument("warehouse")
    r.add_argument("table", help="db.table")
    r.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="override a table option for this build (file-index.<type>.columns, ...)")
    r.add_argument("--force", action="store_true", help="rebuild every file (Java's procedure)")
    r.add_argument("--spark", action="store_true", help="build on a local SparkSession")
    r.add_argument("--dry-run", action="store_true", help="build but do not commit (sidecars are still written)")
    r.add_argument("--json", action="store_true")
    r.add_argument("--catalog-option", action="append", default=[], metavar="KEY=VALUE")
    g = sub.add_parser("create-global-index",
                       help="build a global index over the rows no index of that type covers yet, commit once")
    g.add_argument("warehouse")
    g.add_argument("table", help="db.table (row-tracking.enabled)")
    g.add_argument("column")
    g.add_argument("--type", default="bitmap", help="index type: bitmap (default), btree or multivalue")
    g.add_argument("--partition", action="append", default=[], metavar="KEY=VALUE",
                   help="build only this partition (repeat the flag for a multi-column partition spec)")
    g.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="override a table option (bitmap-index.*, btree-index.*, sorted-index.records-per-range)")
    g.add_argument("--spark", action="store_true", help="read, sort and write on a local SparkSession")
    g.add_argument("--quiet", action="store_true", help="no progress lines")
    g.add_argument("--catalog-option", action="append", default=[], metavar="KEY=VALUE")


def _create_global_index(args) -> int:
    import time

    from pypaimon import CatalogFactory

    from .globalindex import create_global_index

    opts = {"warehouse": args.warehouse}
    opts.update(_kv(args.catalog_option))
    table = CatalogFactory.create(opts).get_table(args.table)
    t0 = time.perf_counter()

    def progress(done, total, rows):
        if not args.quiet:
            print(f"row range {done}/{total}: {rows} rows indexed, {time.perf_counter() - t0:.1f} s",
                  file=sys.stderr, flush=True)

    spark = None
    if args.spark:
        from pyspark.sql import SparkSession

        spark = SparkSession.builder.master("local[2]").appName("paimon-fast create-global-index").getOrCreate()
    try:
        n = create_global_index(table, args.column, args.type, partitions=_kv(args.partition) or None,
                                options=_kv(args.option), spark=spark, progress=progress)
    finally:
        if spark is not None:
            spark.stop()
    print(f"{n} index files added to {args.table} ({args.type} on {args.column}) "
          f"in {time.perf_counter() - t0:.1f} s")
    return 0


@command("paimon", "Paimon tables via pypaimon: pruned 'query', 'rewrite-index', 'create-global-index'")
def paimon_main(args):
    if args.paimon_cmd == "create-global-index":
        return _create_global_index(args)
    table = _open(args.warehouse, args.table, _kv(args.catalog_option))
    if args.paimon_cmd == "query":
        from .scan import read_with_index

        pred = parse_where(args.where, table)
        cols = [c.strip() for c in args.select.split(",") if c.strip()] or None
        tb, rep = read_with_index(table, pred, projection=cols, max_workers=args.workers)
        rows = tb.slice(0, args.limit).to_pylist() if args.limit else []
        if args.json:
            print(json.dumps({"predicate": repr(pred), "report": rep.as_dict(), "rows": rows},
                             indent=2, default=str))
        else:
            for row in rows:
                print(row)
            if tb.num_rows > len(rows):
                print(f"... {tb.num_rows - len(rows)} more rows")
            print(rep, file=sys.stderr)
        return 0
    from .rewrite import rewrite_file_index

    spark = None
    if args.spark:
        from pyspark.sql import SparkSession

        spark = SparkSession.builder.master("local[2]").appName("paimon-fast rewrite-index").getOrCreate()
    try:
        rep = rewrite_file_index(spark, table, _kv(args.option), force=args.force,
                                 mode="spark" if args.spark else "local", commit=not args.dry_run)
    finally:
        if spark is not None:
            spark.stop()
    print(json.dumps(rep.as_dict(), indent=2, default=str) if args.json else rep)
    return 0


paimon_main.setup = _setup
