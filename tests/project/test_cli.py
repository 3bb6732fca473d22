"""``paimon-fast`` as a user meets it: a mistake is one line naming it and exit code 2, every
help reads as plain text with examples that parse, ``inspect`` prints a summary (``--json``: all).

Mistakes are made through :func:`paimon_fast.cli.main` (the console script's function) and once
through the console entry point itself, in a fresh interpreter, to see that no traceback is
printed.  The ones on a Paimon table need pypaimon (the full CI job) and skip without it; the
rest run in every job, without Spark: a dataset's mistakes are named before Spark starts.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import struct
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import paimon_fast as pf
from paimon_fast import cli
from tests.support.paths import DATA
from tests.support.vectorlib import load_bin
from tests.support.paimon_helpers import commit_arrow


@pytest.fixture
def dataset(tmp_path):
    """A small Parquet dataset with file indexes (built in-process)."""
    from paimon_fast.tables import ParquetDataset

    root = tmp_path / "events"
    (root / "region=eu").mkdir(parents=True)
    t = pa.table(
        {
            "id": pa.array(np.arange(100), pa.int64()),
            "country": [["DE", "FR", "NO"][i % 3] for i in range(100)],
            "amount": pa.array(np.arange(100) * 1.5),
            "ts": pa.array(np.arange(100) * 1001, pa.timestamp("ns")),
        }
    )
    pq.write_table(t, root / "region=eu" / "part-0.parquet")
    ParquetDataset(str(root)).build(
        {
            "file-index.bloom-filter.columns": "id",
            "file-index.range-bitmap.columns": "amount",
            "file-index.bitmap.columns": "country",
        }
    )
    return root


@pytest.fixture
def warehouse(tmp_path):
    """A Paimon warehouse with table db.t (id BIGINT, cat STRING), no row tracking."""
    pytest.importorskip("pypaimon", reason="Paimon tables are read through pypaimon (the tables extra)")
    from pypaimon import CatalogFactory, Schema

    wh = str(tmp_path / "wh")
    catalog = CatalogFactory.create({"warehouse": wh})
    catalog.create_database("db", True)
    schema = pa.schema([("id", pa.int64()), ("cat", pa.string())])
    catalog.create_table("db.t", Schema.from_pyarrow_schema(schema), True)
    commit_arrow(
        catalog.get_table("db.t"),
        pa.table({"id": list(range(8)), "cat": [f"c{i % 4}" for i in range(8)]}, schema=schema),
    )
    return wh


def mistake(argv, capsys, names):
    """Run a mistaken command: exit 2, nothing on stdout, one line on stderr starting with the
    command and naming every string of ``names``."""
    rc = cli.main(argv)
    out, err = capsys.readouterr()
    assert rc == 2, (argv, out, err)
    assert out == "", (argv, out)
    lines = err.splitlines()
    assert len(lines) == 1 and err.endswith("\n"), (argv, err)
    assert "Traceback" not in err
    cmd = "paimon-fast " + " ".join(argv[:2] if argv[0] in ("paimon", "hudi") else argv[:1])
    assert lines[0].startswith(cmd + ": "), (cmd, err)
    for n in names:
        assert n in lines[0], (n, err)
    return lines[0]


# ---------------------------------------------------------------- the mistakes


def test_predicate_syntax_error_on_a_paimon_table(warehouse, capsys):
    mistake(
        ["paimon", "query", warehouse, "db.t", "--where", "cat = = 'c3'"],
        capsys,
        ["expected a literal", "cat = = 'c3'"],
    )


def test_unknown_column_on_a_paimon_table(warehouse, capsys):
    mistake(["paimon", "query", warehouse, "db.t", "--where", "nosuch > 1"], capsys, ["'nosuch'", "id, cat"])


def test_unknown_table_and_warehouse(warehouse, tmp_path, capsys):
    mistake(["paimon", "query", warehouse, "db.nope"], capsys, ["db.nope", warehouse])
    mistake(["paimon", "rewrite-index", warehouse, "db.nope"], capsys, ["db.nope"])
    mistake(["paimon", "query", str(tmp_path / "no-warehouse"), "db.t"], capsys, ["db.t", "no-warehouse"])


def test_global_index_on_a_table_without_row_tracking(warehouse, capsys):
    mistake(["paimon", "create-global-index", warehouse, "db.t", "cat"], capsys, ["db.t", "row-tracking.enabled"])


def test_literal_of_another_type_on_a_paimon_table(warehouse, capsys):
    mistake(["paimon", "query", warehouse, "db.t", "--where", "cat = 5"], capsys, ["'cat'", "string", "5"])


def test_dataset_that_does_not_exist(tmp_path, capsys):
    missing = str(tmp_path / "no" / "such" / "dir")
    for argv in (
        ["query", missing, "--where", "a = 1"],
        ["build", missing, "--options", "file-index.bitmap.columns=a"],
        ["delete", missing, "--where", "a = 1"],
        ["gc", missing],
        ["query", missing, "--top", "a:3"],
    ):
        mistake(argv, capsys, [missing])
    a_file = tmp_path / "data.parquet"
    a_file.write_bytes(b"PAR1")
    mistake(["query", str(a_file), "--where", "a = 1"], capsys, ["Not a dataset directory", str(a_file)])


def test_mistakes_in_a_dataset_query(dataset, capsys):
    d = str(dataset)
    mistake(["query", d, "--where", "country = = 'DE'"], capsys, ["expected a literal", "country = = 'DE'"])
    mistake(["query", d, "--where", "nosuch > 1"], capsys, ["'nosuch'", "country"])
    mistake(["query", d, "--where", "country = 5"], capsys, ["'country'", "5"])
    mistake(["delete", d, "--where", "nosuch = 1"], capsys, ["'nosuch'"])
    mistake(["query", d, "--top", "nosuch:3"], capsys, ["'nosuch'"])
    mistake(["query", d, "--top", "amount"], capsys, ["COLUMN:K", "'amount'"])
    mistake(["query", d], capsys, ["--where"])
    mistake(["build", d], capsys, ["no index configured"])
    mistake(["build", d, "--options", "nokeyvalue"], capsys, ["'nokeyvalue'"])


def test_inspect_mistakes(tmp_path, capsys):
    mistake(["inspect", str(tmp_path / "nope.index")], capsys, ["No such file", "nope.index"])
    mistake(["inspect", str(tmp_path)], capsys, [str(tmp_path)])
    mistake(["inspect", str(tmp_path / "nope.index"), "--row-type", "x"], capsys, ["nope.index"])


def test_hudi_table_that_does_not_exist(tmp_path, capsys):
    """Without the hudi package the line names its extra; with it, the path."""
    missing = str(tmp_path / "no-table")
    for argv in (
        ["hudi", "query", missing, "--eq", "a=1"],
        ["hudi", "inspect", missing],
        ["hudi", "build", missing],
    ):
        line = mistake(argv, capsys, [])
        assert missing in line or 'pip install "paimon-fast[tables]"' in line


def test_corrupt_or_foreign_file_is_one_line_exit_1(tmp_path, capsys):
    """Not a mistake in the command: bytes that are not an index (IndexFormatError) are named in
    one line too, with exit code 1."""
    p = tmp_path / "notes.index"
    p.write_bytes(b"# not an index file at all\n" * 4)
    assert cli.main(["inspect", str(p)]) == 1
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1 and err.startswith("paimon-fast inspect: ")
    assert "magic" in err


def test_traceback_on_request(tmp_path, monkeypatch):
    monkeypatch.setenv("PAIMON_FAST_TRACEBACK", "1")
    with pytest.raises(FileNotFoundError):
        cli.main(["inspect", str(tmp_path / "nope.index")])


def test_console_script_prints_one_line(tmp_path):
    """The entry point as a user runs it (a fresh interpreter): one line on stderr, exit 2."""
    missing = str(tmp_path / "no-such-dir")
    p = subprocess.run(
        [sys.executable, "-m", "paimon_fast.cli", "query", missing, "--where", "a = 1"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 2, p.stderr
    assert p.stderr.splitlines() == [f"paimon-fast query: No such dataset directory: {missing}"]
    assert p.stdout == ""


# ---------------------------------------------------------------- help


def _parsers(parser, path=("paimon-fast",)):
    """(command words, parser) of the top parser and every subcommand, recursively."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, path + (name,))


def test_every_help_is_plain_text_with_examples_that_parse(monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    top = cli.build_parser()
    seen = []
    for path, parser in _parsers(top):
        text = parser.format_help()
        seen.append(" ".join(path))
        for markup in ("``", ":func:", ":class:", ":mod:", ":data:", "**"):
            assert markup not in text, (path, markup)
        assert "\nexamples:\n" in text, path
        examples = text.split("\nexamples:\n", 1)[1].splitlines()
        runnable = [ln.strip() for ln in examples if ln.strip().startswith(" ".join(path) + " ")]
        assert runnable, (path, examples)
        for line in runnable:
            words = shlex.split(line, comments=True)
            if "--help" in words or any(w.isupper() for w in words):
                continue  # a pointer to more help / a placeholder
            args = cli.build_parser().parse_args(words[1:])  # raises SystemExit if it does not parse
            assert callable(args.func), line
    assert {
        "paimon-fast",
        "paimon-fast inspect",
        "paimon-fast query",
        "paimon-fast paimon query",
        "paimon-fast paimon create-global-index",
        "paimon-fast hudi build",
        "paimon-fast gc",
    } <= set(seen)


def test_top_level_help_describes_the_tool(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    with pytest.raises(SystemExit) as e:
        cli.main(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    first = out.split("\n\n")[1]
    assert first.startswith("Apache Paimon's indexes from the command line")
    for name in ("inspect", "query", "build", "paimon", "hudi", "gc"):
        assert f"\n    {name} " in out, name


# ---------------------------------------------------------------- inspect


def test_inspect_prints_a_summary_and_json_on_request(dataset, capsys):
    from paimon_fast.tables import ParquetDataset

    (path,) = [
        str(dataset / "_file_index" / "region=eu" / n) for n in os.listdir(dataset / "_file_index" / "region=eu")
    ]
    assert path.endswith(".index") and ParquetDataset(str(dataset)).read_catalog()["files"]["region=eu/part-0.parquet"][
        "file_index"
    ]["path"] == os.path.relpath(path, dataset)
    assert cli.main(["inspect", path]) == 0
    text = capsys.readouterr().out
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)
    lines = text.splitlines()
    assert lines[0] == f"Parquet file index: {path}"
    head = next(i for i, ln in enumerate(lines) if ln.startswith("column "))
    assert lines[head].split()[:3] == ["column", "index", "type"] and set(lines[head + 1]) <= {"-", " "}
    rows = {ln.split()[0]: ln for ln in lines[head + 2 :]}
    assert set(rows) == {"id", "amount", "country"}
    assert "bloom-filter" in rows["id"] and "num hash functions" in rows["id"]
    assert "range-bitmap" in rows["amount"] and "min 0" in rows["amount"] and "max 148.5" in rows["amount"]
    assert "bitmap" in rows["country"] and "distinct values 3" in rows["country"]
    assert cli.main(["inspect", path, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert {c: [e["index_type"] for e in es] for c, es in d["columns"].items()} == {
        "id": ["bloom-filter"],
        "amount": ["range-bitmap"],
        "country": ["bitmap"],
    }
    # the summary shows the numbers the JSON holds
    bloom = d["columns"]["id"][0]
    assert f"{bloom['start']:,}" in rows["id"] and f"{bloom['length']:,}" in rows["id"]


@pytest.mark.parametrize("kind", ["container", "global", "deletion", "hash"])
def test_inspect_summary_of_every_kind(kind, tmp_path, capsys):
    if kind == "container":
        w = pf.fileindex.writer("bloom-filter", "BIGINT", {"items": "100"})
        w.write_batch([1, 2, 3])
        p = tmp_path / "f.index"
        p.write_bytes(pf.FileIndexFormat.write({"id": {"bloom-filter": w.finish()}}))
        want = ["file index container", "columns:", "bloom-filter"]
    elif kind == "global":
        from paimon_fast import globalindex as gi

        w = gi.writer("STRING")
        w.write_batch(pa.array(["a", "b", None]), np.arange(3, dtype=np.int64))
        p = tmp_path / "g.index"
        p.write_bytes(w.finish()[0])
        want = ["bitmap global index", "distinct values:", "null count:"]
    elif kind == "deletion":
        p = tmp_path / "index-dv-0"
        p.write_bytes(
            open(os.path.join(DATA, "paimon_append_dv", "index-d9a8c306-4466-4c01-b7f0-7aaefb2c1767-0"), "rb").read()
        )
        want = ["deletion file", "vectors:", "cardinality", "334"]
    else:
        p = tmp_path / "index-0f-0"
        p.write_bytes(load_bin("hash_index", "hash_pk_int_1000.index"))
        want = ["hash index", "count:", "1,000"]
    assert cli.main(["inspect", str(p)]) == 0
    text = capsys.readouterr().out
    for w_ in want:
        assert w_ in text, (w_, text)
    assert cli.main(["inspect", str(p), "--json"]) == 0
    assert isinstance(json.loads(capsys.readouterr().out), dict)


def test_summary_table_layout():
    """Numbers right-aligned with thousands separators, text left-aligned, the details last."""
    text = cli.summary_text(
        "thing",
        "/p",
        {
            "size": 1234567,
            "ok": True,
            "parts": [
                {"name": "a", "bytes": 5, "extra": {"x": 1}},
                {"name": "bbb", "bytes": 12345, "extra": {"x": 2.5}},
            ],
        },
    )
    assert text.splitlines() == [
        "thing: /p",
        "  size: 1,234,567",
        "  ok:   yes",
        "",
        "parts:",
        "name   bytes  details",
        "----  ------  -------",
        "a          5  extra (x 1)",
        "bbb   12,345  extra (x 2.5)",
    ]


def test_rows_are_printed_by_value(dataset, capsys):
    """Top-N rows print nanosecond timestamps with their digits, with or without pandas."""
    assert cli.main(["query", str(dataset), "--top", "ts:2", "--show", "2"]) == 0
    out = capsys.readouterr().out
    assert "1970-01-01 00:00:00.000099099" in out and "1970-01-01 00:00:00.000098098" in out


# ---------------------------------------------------------------- the command itself


def test_version_and_a_bare_command(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.strip() == f"paimon-fast {pf.__version__}"
    assert cli.main([]) == 0  # the help, not an error
    out, err = capsys.readouterr()
    assert out.startswith("usage: paimon-fast") and "commands:" in out and "examples:" in out and err == ""


def test_row_type_is_checked(dataset, capsys):
    path = str(next((dataset / "_file_index" / "region=eu").glob("part-0.parquet.*index")))
    mistake(["inspect", path, "--row-type", "garbage"], capsys, ["--row-type", "name=TYPE", "'garbage'"])
    mistake(["inspect", path, "--row-type", "id=BIGINTT"], capsys, ["--row-type", "id='BIGINTT'", "not a Paimon type"])
    mistake(["inspect", path, "--row-type", "m=MAP<INT>"], capsys, ["m='MAP<INT>'"])
    mistake(["inspect", path, "--row-type", "=INT"], capsys, ["no column name"])
    assert cli.main(["inspect", path, "--row-type", "id=BIGINT,a=ARRAY<STRING>,m=MAP<STRING, DECIMAL(10, 2)>"]) == 0


def test_inspect_a_dataset_directory(dataset, capsys):
    import shutil

    from paimon_fast.tables.globalindex import build_global_index_local

    build_global_index_local(str(dataset), "country")
    assert cli.main(["inspect", str(dataset), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert (d["data_files"], d["rows"], d["file_index_files"]) == (1, 100, "1 current")
    assert {(r["column"], r["index_type"]): (r["files"], r["stale"], r["missing"]) for r in d["file_indexes"]} == {
        ("id", "bloom-filter"): (1, 0, 0),
        ("amount", "range-bitmap"): (1, 0, 0),
        ("country", "bitmap"): (1, 0, 0),
    }
    idx = next((dataset / "_file_index" / "region=eu").glob("part-0.parquet.*index"))
    assert d["file_index_bytes"] == idx.stat().st_size
    assert sum(r["bytes"] for r in d["file_indexes"]) < idx.stat().st_size  # the indexes, without the header
    (g,) = d["global_indexes"]
    want = ("country", "bitmap", "STRING", 100, "current")
    assert (g["column"], g["index_type"], g["type"], g["rows"], g["state"]) == want
    # a second data file: the first is still current, the new one has no index, the global index is stale
    shutil.copy(dataset / "region=eu" / "part-0.parquet", dataset / "region=eu" / "part-1.parquet")
    assert cli.main(["inspect", str(dataset)]) == 0
    text = capsys.readouterr().out
    assert text.startswith(f"Parquet dataset: {dataset}\n")
    assert "file index files: 1 current, 1 without an index" in text
    assert "stale (data files changed: rebuild it)" in text
    rows = {ln.split()[0]: ln.split() for ln in text.split("file indexes:\n")[1].split("\n\n")[0].splitlines()[2:]}
    assert rows["id"][-2:] == ["0", "1"]  # stale, missing


def test_global_index_keys_are_typed(dataset, tmp_path, capsys):
    from paimon_fast.tables.globalindex import build_global_index_local, read_listing

    build_global_index_local(str(dataset), "amount", {"sorted-index.records-per-range": "1000"})
    (f,) = read_listing(str(dataset), "amount")["files"]
    path = str(dataset / "_global_index" / "amount" / f["file"])
    assert cli.main(["inspect", path, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert (d["type"], d["first_key"], d["last_key"]) == ("DOUBLE", 0.0, 148.5)
    assert "amount" in d["type_from"]
    # the same file elsewhere: nothing says its type, the keys are hex (--row-type decodes them)
    lone = tmp_path / "lone.index"
    lone.write_bytes(open(path, "rb").read())
    assert cli.main(["inspect", str(lone), "--json"]) == 0
    assert (
        json.loads(capsys.readouterr().out)["last_key"] == struct.pack("<d", 148.5).hex()
    )  # Java's key bytes, little-endian
    assert cli.main(["inspect", str(lone), "--json", "--row-type", "amount=DOUBLE"]) == 0
    assert json.loads(capsys.readouterr().out)["last_key"] == 148.5


def test_global_index_keys_of_a_paimon_table_are_typed(tmp_path, capsys):
    pytest.importorskip("pypaimon", reason="Paimon tables are written with pypaimon (the tables extra)")
    from pypaimon import CatalogFactory, Schema

    from paimon_fast.paimon import create_global_index

    catalog = CatalogFactory.create({"warehouse": str(tmp_path / "wh")})
    catalog.create_database("db", True)
    schema = pa.schema([("id", pa.int64()), ("price", pa.float64())])
    opts = {"row-tracking.enabled": "true", "data-evolution.enabled": "true"}
    catalog.create_table("db.t", Schema.from_pyarrow_schema(schema, options=opts), True)
    commit_arrow(catalog.get_table("db.t"), pa.table({"id": [1, 2, 3], "price": [2.5, -1.0, 7.25]}, schema=schema))
    create_global_index(catalog.get_table("db.t"), "price", "btree")
    (path,) = (tmp_path / "wh" / "db.db" / "t" / "index").iterdir()
    assert cli.main(["inspect", str(path), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert (d["type"], d["first_key"], d["last_key"]) == ("DOUBLE", -1.0, 7.25) and "'price'" in d["type_from"]


@pytest.mark.parametrize("width", [60, 80, 120, 250])
def test_demo_results_fit_the_terminal(width):
    """The demo's result table at a terminal's width: every line fits, every predicate and its
    speed-ups are there; a wide terminal gets one table with the predicates in it."""
    from paimon_fast.spark.demo import results_text

    pred = "region = 'us' AND id IN (5, 500000, 999999)"
    rows = [
        (pred if i % 2 else f"id = {i}", "partition + bloom-filter", "19/20", "1,990,000", "16,691", "0.04 / 0.96",
         f"{i + 2}.5x", "0.05 / 0.90", f"{i + 3}.5x", "executors", "yes")
        for i in range(8)
    ]  # fmt: skip
    text = results_text(rows, width)
    assert max(len(ln) for ln in text.splitlines()) <= width
    for i in range(8):
        assert f"{i + 2}.5x" in text and f"{i + 3}.5x" in text
    assert text.count(pred) == 4
    one_table = text.splitlines()[1].startswith("predicate")
    assert one_table == (width == 250)


def test_sample_writes_the_examples_tables(tmp_path, capsys):
    from paimon_fast.tables import ParquetDataset

    d = str(tmp_path / "events")
    assert cli.main(["sample", "parquet", d, "--rows", "2000", "--files", "2", "--indexed"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{d}: a Parquet dataset: 2,000 rows in 2 files") and "bloom-filter on user_id" in out
    ds = ParquetDataset(d)
    assert sum(ParquetDataset(d).row_counts().values()) == 2000
    assert ds.read("status = 'returned'").explain().index("bitmap", "status").used
    # a new table only: a directory with something in it is refused before anything is written
    mistake(["sample", "hudi", d], capsys, ["not an empty directory", d])
    mistake(["sample", "parquet", str(tmp_path / "x"), "--rows", "1", "--files", "3"], capsys, ["--files"])
