"""``paimon-fast hudi build|query|inspect``: the bitmap index of a Hudi table from the shell.

paimon-fast hudi build TABLE --columns city,rider [--spark]
paimon-fast hudi query TABLE --eq city=chennai --in rider=a,b [--where "..."] [--read]
paimon-fast hudi inspect TABLE
"""

from __future__ import annotations

import os

from ..cli import print_json, command, display_rows, examples_epilog


def _spark_session():
    from ..spark.session import cli_session

    # quiet, and a failing start in one line, as the other commands' sessions
    return cli_session(os.environ.get("PAIMON_FAST_SPARK_MASTER") or "local[*]", "paimon-fast hudi")


def _typed(value: str, t):
    import pyarrow as pa

    if pa.types.is_integer(t):
        return int(value)
    if pa.types.is_boolean(t):
        if value.lower() not in ("true", "false"):
            raise SystemExit(f"boolean literal must be true or false, got {value!r}")
        return value.lower() == "true"
    return value  # strings; dates, timestamps and decimals accept their text


def _predicate(args, schema):
    from ..core import predicate as P
    from .prune import as_predicate

    parts = []
    if args.where:
        parts.append(as_predicate(args.where))
    types = {f.name: f.type for f in schema}

    def col(spec):
        if "=" not in spec:
            raise SystemExit(f"expected COLUMN=VALUE, got {spec!r}")
        c, v = spec.split("=", 1)
        if c not in types:
            raise SystemExit(f"unknown column {c!r}; columns: {', '.join(types)}")
        return c, v, types[c]

    for spec in args.eq or []:
        c, v, t = col(spec)
        parts.append(P.field(c) == _typed(v, t))
    for spec in args.ne or []:
        c, v, t = col(spec)
        parts.append(P.field(c) != _typed(v, t))
    for spec in args.isin or []:
        c, v, t = col(spec)
        parts.append(P.field(c).isin([_typed(x, t) for x in v.split(",")]))
    for spec in args.notin or []:
        c, v, t = col(spec)
        parts.append(P.field(c).notin([_typed(x, t) for x in v.split(",")]))
    for c in args.is_null or []:
        parts.append(P.field(c).is_null())
    for c in args.is_not_null or []:
        parts.append(P.field(c).is_not_null())
    return P.And.of(*parts) if parts else None


def _sub(sub, name, help, examples):
    import argparse

    return sub.add_parser(
        name,
        help=help,
        description=help[:1].upper() + help[1:] + ".",
        epilog=examples_epilog(examples),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def _setup(p):
    sub = p.add_subparsers(dest="hudi_cmd", required=True, metavar="SUBCOMMAND", title="subcommands")
    b = _sub(
        sub,
        "build",
        "create or incrementally update the bitmap index of a Hudi table",
        """
        paimon-fast hudi build trips --columns city,rider
        paimon-fast hudi build trips --spark""",
    )
    b.add_argument("table", help="the Hudi table's base path or URI")
    b.add_argument(
        "--columns",
        default=None,
        help="comma-separated columns (default: the existing index's, or on a first build every indexable column)",
    )
    b.add_argument("--spark", action="store_true", help="index slices on a local Spark session")
    b.add_argument("--as-of", default=None, help="index the table as of this completed instant")
    q = _sub(
        sub,
        "query",
        "prune a Hudi table with a predicate (the AND of the conditions given); --read also reads the matching rows",
        """
        paimon-fast hudi query trips --eq city=chennai --in rider=rider-1,rider-2
        paimon-fast hudi query trips --where "city = 'chennai' AND fare > 100" --read --show 3""",
    )
    q.add_argument("table", help="the Hudi table's base path or URI")
    q.add_argument("--where", default=None, help="SQL-like predicate, e.g. \"city = 'chennai' AND fare > 100\"")
    q.add_argument("--eq", action="append", metavar="COL=VALUE")
    q.add_argument("--ne", action="append", metavar="COL=VALUE")
    q.add_argument("--in", dest="isin", action="append", metavar="COL=V1,V2")
    q.add_argument("--not-in", dest="notin", action="append", metavar="COL=V1,V2")
    q.add_argument("--is-null", action="append", metavar="COL")
    q.add_argument("--is-not-null", action="append", metavar="COL")
    q.add_argument("--read", action="store_true", help="read the matching rows (in-process) and count them")
    q.add_argument("--show", type=int, default=0, help="print this many matching rows")
    q.add_argument("--candidates", action="store_true", help="list candidate slices")
    i = _sub(
        sub,
        "inspect",
        "show the index manifest: instant, columns, slices, segments, staleness",
        """
        paimon-fast hudi inspect trips""",
    )
    i.add_argument("table", help="the Hudi table's base path or URI")


@command("hudi", "the bitmap index of Hudi tables (RFC-92): build, query, inspect")
def hudi_main(args):
    from . import storage
    from .build import build_index
    from .prune import prune
    from .stream import read_arrow
    from ..io.fs import display_uri
    from .table import canonical, table_state

    path = canonical(args.table)
    if args.hudi_cmd == "build":
        cols = args.columns.split(",") if args.columns else None
        spark = _spark_session() if args.spark else None
        print_json(build_index(spark, path, cols, as_of=args.as_of))
    elif args.hudi_cmd == "query":
        state = table_state(path, listing=False)
        pred = _predicate(args, state.schema)
        pr = prune(path, pred, state=state)
        out = dict(pr.report)
        if args.candidates:
            out["candidates"] = [
                {
                    "partition": c.slice.partition,
                    "file_id": c.slice.file_id,
                    "base_file": c.slice.base_file,
                    "indexed": c.covered,
                    "rows": None if c.positions is None else len(c.positions),
                }
                for c in pr.candidates
            ]
        if args.read or args.show:
            res = read_arrow(path, pred, state=state)
            tbl = res.table
            out["rows_returned"] = tbl.num_rows
            if args.show:
                out["rows"] = display_rows(tbl.slice(0, args.show))
        print_json(out)
    else:
        table_state(path, listing=False)  # no table there: the one-line mistake, exit 2
        m = storage.read_manifest(path)
        if m is None:  # a table without an index: said in the JSON, exit 1
            print_json({"table": display_uri(path), "index": None})
            return 1
        state = table_state(path)
        covered = {(e["partition"], e["file_id"], e["base_file"], tuple(e["log_files"])) for e in m["slices"]}
        store = storage.index_location(path)[0]
        seg_sizes = {s: store.size(storage.segment_path(path, s)) for s in m["segments"]}
        print_json(
            {
                "table": display_uri(path),
                "index_dir": storage.index_dir(path),
                "instant": m["instant"],
                "table_instant": state.latest_instant,
                "columns": m["columns"],
                "slices": len(m["slices"]),
                "records": sum(e.get("records", 0) for e in m["slices"]),
                "rows": sum(e["row_count"] for e in m["slices"]),
                "slices_without_positions": sum(1 for e in m["slices"] if not e["positions"]),
                "segments": seg_sizes,
                "manifests": storage.list_manifests(path),
                "current_slices_not_indexed": sum(1 for s in state.slices if s.identity not in covered),
            }
        )


hudi_main.setup = _setup
hudi_main.description = """\
The bitmap index of Hudi tables (Hudi's RFC-92 layout), through the hudi package (the tables
extra):
  build    create the index, or update it with the table's new commits
  query    which file slices and rows may match a predicate (--read: the rows)
  inspect  what the index holds and how far it is behind the table
Each takes --help for its options."""
hudi_main.examples = """
paimon-fast hudi build trips --columns city,rider
paimon-fast hudi query trips --eq city=chennai
"""
