"""``paimon-fast paimon ...``: pruned queries, index rewrites and sort compaction on Paimon tables.

    paimon-fast paimon query WAREHOUSE db.table --where "category = 'red'" [--select id,name] [--limit 20] [--explain]
    paimon-fast paimon rewrite-index WAREHOUSE db.table [--option file-index.bloom-filter.columns=name]
        [--force] [--spark] [--dry-run]
    paimon-fast paimon create-global-index WAREHOUSE db.table COLUMN [--type bitmap|btree|multivalue]
        [--partition p=x ...] [--option sorted-index.records-per-range=1000000] [--spark]
    paimon-fast paimon optimize WAREHOUSE db.table --cluster-by a,b [--strategy zorder] [--partition p=x ...]

All print a report (``--json`` for machine-readable output).  ``--where`` is
parsed with :func:`paimon_fast.core.sqlpredicate.parse_predicate`.  A table or
database that does not exist is a :class:`~paimon_fast.errors.NotFoundError`.
"""

from __future__ import annotations

import argparse
import json
import sys

from ..cli import command, display_rows, examples_epilog
from ..errors import NotFoundError, require


def parse_where(text: str, table=None):
    """Our predicate for a SQL-like WHERE string (None for an empty one)."""
    if not text or not text.strip():
        return None
    from ..core.sqlpredicate import parse_predicate

    return parse_predicate(text)


def _get_table(warehouse, name, catalog_options):
    """The pypaimon table ``name`` of the filesystem catalog at ``warehouse``; a table or database
    that does not exist is a NotFoundError naming it and the warehouse."""
    from pypaimon import CatalogFactory

    opts = {"warehouse": warehouse}
    opts.update(catalog_options)
    try:
        return CatalogFactory.create(opts).get_table(name)
    except Exception as e:
        if type(e).__name__ in ("TableNotExistException", "DatabaseNotExistException"):
            raise NotFoundError(f"table {name} does not exist in warehouse {warehouse!r}") from None
        raise


def _local_spark(app: str):
    """A local SparkSession, after checking what Spark needs (pyspark, Java 17+): a missing one is
    a MissingDependencyError naming what to install."""
    from ..spark.env import check_spark_environment

    check_spark_environment()
    from pyspark.sql import SparkSession

    return SparkSession.builder.master("local[2]").appName(app).getOrCreate()


def _open(warehouse, name, catalog_options):
    from .compat import legacy_manifest_table

    return legacy_manifest_table(_get_table(warehouse, name, catalog_options))


def _kv(items):
    out = {}
    for it in items or ():
        if "=" not in it:
            raise SystemExit(f"expected KEY=VALUE, got {it!r}")
        k, v = it.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def _sub(sub, name, help, examples):
    return sub.add_parser(
        name,
        help=help,
        description=help[:1].upper() + help[1:] + ".",
        epilog=examples_epilog(examples),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def _pairs(p, flag, help=None):
    """A repeatable ``KEY=VALUE`` option (read with :func:`_kv`)."""
    p.add_argument(flag, action="append", default=[], metavar="KEY=VALUE", help=help)


def _setup(p):
    sub = p.add_subparsers(dest="paimon_cmd", required=True, metavar="SUBCOMMAND", title="subcommands")
    q = _sub(
        sub,
        "query",
        "read the rows matching --where, pruned with the table's file and global indexes",
        """
        paimon-fast paimon query warehouse db.orders --where "category = 'red' AND price < 10" --limit 5
        paimon-fast paimon query warehouse db.orders --where "id IN (1, 2)" --select id,price --json""",
    )
    q.add_argument("warehouse", help="the warehouse directory or URI of a filesystem catalog")
    q.add_argument("table", help="db.table")
    q.add_argument("--where", default="", help="SQL-like predicate, e.g. \"category = 'red' AND id < 10\"")
    q.add_argument("--select", default="", help="comma-separated columns (default: all)")
    q.add_argument("--limit", type=int, default=20, help="rows to print (default 20; 0 = none)")
    q.add_argument("--json", action="store_true", help="print the report (and rows) as JSON")
    _pairs(q, "--catalog-option")
    q.add_argument("--workers", type=int, default=8, help="threads reading index bytes")
    q.add_argument(
        "--explain",
        action="store_true",
        help="print which indexes the table holds for --where, which are used and why not",
    )
    r = _sub(
        sub,
        "rewrite-index",
        "build the configured file indexes for the files that lack them, and commit",
        """
        paimon-fast paimon rewrite-index warehouse db.orders
        paimon-fast paimon rewrite-index warehouse db.orders --option file-index.bitmap.columns=category --dry-run""",
    )
    r.add_argument("warehouse", help="the warehouse directory or URI of a filesystem catalog")
    r.add_argument("table", help="db.table")
    _pairs(r, "--option", "override a table option for this build (file-index.<type>.columns, ...)")
    r.add_argument("--force", action="store_true", help="rebuild every file (Java's procedure)")
    r.add_argument("--spark", action="store_true", help="build on a local SparkSession")
    r.add_argument("--dry-run", action="store_true", help="build but do not commit (sidecars are still written)")
    r.add_argument("--json", action="store_true")
    _pairs(r, "--catalog-option")
    g = _sub(
        sub,
        "create-global-index",
        "build a global index over the rows no index of that type covers yet, and commit once",
        """
        paimon-fast paimon create-global-index warehouse db.items category
        paimon-fast paimon create-global-index warehouse db.items tags --type multivalue""",
    )
    g.add_argument("warehouse", help="the warehouse directory or URI of a filesystem catalog")
    g.add_argument("table", help="db.table (with row-tracking.enabled)")
    g.add_argument("column")
    g.add_argument("--type", default="bitmap", help="index type: bitmap (default), btree or multivalue")
    _pairs(g, "--partition", "build only this partition (repeat the flag for a multi-column partition spec)")
    _pairs(g, "--option", "override a table option (bitmap-index.*, btree-index.*, sorted-index.records-per-range)")
    g.add_argument("--spark", action="store_true", help="read, sort and write on a local SparkSession")
    g.add_argument("--quiet", action="store_true", help="no progress lines")
    _pairs(g, "--catalog-option")
    o = _sub(
        sub,
        "optimize",
        "rewrite an append table's files clustered by columns, with their file indexes, in one commit",
        """
        paimon-fast paimon optimize warehouse db.orders --cluster-by price
        paimon-fast paimon optimize warehouse db.orders --cluster-by price,id --strategy zorder --partition dt=1""",
    )
    o.add_argument("warehouse", help="the warehouse directory or URI of a filesystem catalog")
    o.add_argument("table", help="db.table (an append table with bucket = -1)")
    o.add_argument("--cluster-by", required=True, help="comma-separated columns")
    o.add_argument("--strategy", default="order", help="order (default), zorder or hilbert")
    _pairs(o, "--partition", "only this partition (repeat the flag for a multi-column partition spec)")
    o.add_argument("--quiet", action="store_true", help="no progress lines")
    o.add_argument("--json", action="store_true")
    _pairs(o, "--catalog-option")


def _optimize(args) -> int:
    import time

    from .sort_compact import optimize

    table = _get_table(args.warehouse, args.table, _kv(args.catalog_option))
    parts = [_kv(args.partition)] if args.partition else None
    t0 = time.perf_counter()

    def progress(phase, done, total):
        if not args.quiet:
            print(f"{phase} {done}/{total}, {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)

    rep = optimize(table, args.cluster_by, args.strategy, partitions=parts, progress=progress)
    print(json.dumps(rep.as_dict(), indent=2, default=str) if args.json else rep)
    return 0


def _create_global_index(args) -> int:
    import time

    from .globalindex import create_global_index

    table = _get_table(args.warehouse, args.table, _kv(args.catalog_option))
    t0 = time.perf_counter()

    def progress(done, total, rows):
        if not args.quiet:
            print(
                f"row range {done}/{total}: {rows} rows indexed, {time.perf_counter() - t0:.1f} s",
                file=sys.stderr,
                flush=True,
            )

    spark = None
    if args.spark:
        spark = _local_spark("paimon-fast create-global-index")
    try:
        n = create_global_index(
            table,
            args.column,
            args.type,
            partitions=_kv(args.partition) or None,
            options=_kv(args.option),
            spark=spark,
            progress=progress,
        )
    finally:
        if spark is not None:
            spark.stop()
    print(f"{n} index files added to {args.table} ({args.type} on {args.column}) in {time.perf_counter() - t0:.1f} s")
    return 0


@command("paimon", "Paimon tables through pypaimon: a pruned query, file index rewrites, global index builds, optimize")
def paimon_main(args):
    require("pypaimon", "reading Paimon tables")  # the tables extra, named if missing
    if args.paimon_cmd == "create-global-index":
        return _create_global_index(args)
    if args.paimon_cmd == "optimize":
        return _optimize(args)
    table = _open(args.warehouse, args.table, _kv(args.catalog_option))
    if args.paimon_cmd == "query":
        from .scan import _read_all

        pred = parse_where(args.where, table)
        cols = [c.strip() for c in args.select.split(",") if c.strip()] or None
        ex = None
        if args.explain:
            from . import read

            ex = read(table, pred, cols, max_workers=args.workers).explain()
        tb, rep = _read_all(table, pred, projection=cols, max_workers=args.workers)
        rows = display_rows(tb.slice(0, args.limit)) if args.limit else []
        if args.json:
            out = {"predicate": repr(pred), "report": rep.as_dict(), "rows": rows}
            if ex is not None:
                out["explain"] = ex.as_dict()
            print(json.dumps(out, indent=2, default=str))
        else:
            if ex is not None:
                print(ex)
            for row in rows:
                print(row)
            if tb.num_rows > len(rows):
                print(f"... {tb.num_rows - len(rows)} more rows")
            print(rep, file=sys.stderr)
        return 0
    from .rewrite import rewrite_file_index

    spark = None
    if args.spark:
        spark = _local_spark("paimon-fast rewrite-index")
    try:
        rep = rewrite_file_index(
            spark,
            table,
            _kv(args.option),
            force=args.force,
            mode="spark" if args.spark else "local",
            commit=not args.dry_run,
        )
    finally:
        if spark is not None:
            spark.stop()
    print(json.dumps(rep.as_dict(), indent=2, default=str) if args.json else rep)
    return 0


paimon_main.setup = _setup
paimon_main.description = """\
Paimon tables of a filesystem catalog, through pypaimon (the tables extra):
  query                read the rows matching a predicate, pruned with the table's indexes
  rewrite-index        build the configured file indexes for the files that lack them
  create-global-index  build a bitmap or multivalue global index (row-tracking tables)
  optimize             rewrite an append table's files clustered by columns, in one commit
Each takes --help for its options."""
paimon_main.examples = """
paimon-fast paimon query warehouse db.orders --where "category = 'red'"
paimon-fast paimon query --help
"""
