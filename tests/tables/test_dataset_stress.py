"""Unforced concurrency: 4 processes of deletes, builds, reads and gc on one dataset, 30 rounds each,
nothing forced (tests/tables/test_dataset_trust.py forces the interleavings one step at a time).

Each process logs what it did: a delete its id set and the catalog version it committed, a read its
query, the ids it got and the catalog version of its snapshot.  Then, with the oracle of
trust_support.py (the rows read with pyarrow, the queries as Python functions):

* every read equals its query over the rows minus the ids of every delete committed at or before
  the version it read (a snapshot that existed), and its count agrees;
* no committed delete is lost: the final read misses exactly the ids of all committed deletes;
* the dataset stays readable (no process failed) and a final gc leaves it so.

About 7 s on the shared 2-core machine (6.5 s measured, under load; the processes mostly wait for one
another's commits), so it runs with the suite (not marked slow).
"""

import json
import os
import subprocess
import sys

from paimon_fast.tables import ParquetDataset
from paimon_fast.tables.gc import collect
from tests.support.trust_support import OPTIONS, QUERIES, Where, make, rows_now
from tests.support.paths import ROOT

PROCESSES = 4
ROUNDS = 30
FILES = 6

WORKER = r"""
import json, random, sys, time, traceback
sys.path.insert(0, sys.argv[5])
from paimon_fast.tables import ParquetDataset
from paimon_fast.tables.gc import collect
from tests.support.trust_support import OPTIONS, QUERIES

root, me, rounds, log = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
rng = random.Random(me)
queries = list(QUERIES)
roles = [("delete", "read"), ("delete", "build"), ("build", "read", "gc"), ("read", "delete")][me % 4]
with open(log, "w") as out:
    def put(**kw):
        out.write(json.dumps(kw) + "\n")
        out.flush()
    try:
        for r in range(rounds):
            for op in roles:
                if op == "delete":
                    ids = sorted(rng.sample(range(6 * 200), 4))
                    rep = ParquetDataset(root).delete("id IN (" + ", ".join(map(str, ids)) + ")")
                    put(op="delete", ids=ids, version=rep.catalog_version, rows=rep.rows_deleted)
                elif op == "build":
                    opts = dict(OPTIONS)
                    if rng.random() < 0.5:
                        opts["file-index.bloom-filter.id.fpp"] = rng.choice(["0.01", "0.05"])
                    rep = ParquetDataset(root).build(opts, force=rng.random() < 0.3)
                    put(op="build", version=rep.catalog_version, built=rep.files_built)
                elif op == "gc":
                    collect(root, delete=True)
                else:
                    q = rng.choice(queries)
                    rd = ParquetDataset(root).read(q)
                    t = rd.to_arrow()
                    put(op="read", query=q, version=rd.report.catalog_version,
                        ids=sorted(t.column("id").to_pylist()), count=rd.count())
    except Exception:
        put(op="error", error=traceback.format_exc())
        sys.exit(1)
"""


def test_four_processes_of_deletes_builds_and_reads(tmp_path):
    where = Where(str(tmp_path / "ds"))
    make(where, FILES)
    ParquetDataset(where.uri).build(OPTIONS)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    root = str(ROOT)
    logs = [str(tmp_path / f"worker-{i}.log") for i in range(PROCESSES)]
    procs = [
        subprocess.Popen([sys.executable, "-c", WORKER, where.uri, str(i), str(ROUNDS), logs[i], root], env=env)
        for i in range(PROCESSES)
    ]
    for p in procs:
        assert p.wait(timeout=900) == 0, [open(x).read()[-3000:] for x in logs]
    records = [json.loads(line) for x in logs for line in open(x)]
    assert not [r for r in records if r["op"] == "error"]
    rows = rows_now(where)
    deletes = sorted(
        (r for r in records if r["op"] == "delete" and r["version"] is not None), key=lambda r: r["version"]
    )
    versions = [r["version"] for r in records if r["op"] in ("delete", "build") and r["version"] is not None]
    assert len(versions) == len(set(versions))  # every commit created its own version
    reads = [r for r in records if r["op"] == "read"]
    assert len(reads) >= ROUNDS * 2 and len(deletes) >= ROUNDS
    for r in reads:
        gone = {i for d in deletes if d["version"] <= r["version"] for i in d["ids"]}
        want = sorted(x["id"] for x in rows if x["id"] not in gone and QUERIES[r["query"]](x))
        assert r["ids"] == want and r["count"] == len(want), (r["query"], r["version"])
    # no committed delete is lost, and nothing else is gone
    gone = {i for d in deletes for i in d["ids"]}
    assert sum(d["rows"] for d in deletes) == len(gone)
    final = sorted(ParquetDataset(where.uri).read(None).to_arrow().column("id").to_pylist())
    assert final == sorted(x["id"] for x in rows if x["id"] not in gone)
    collect(where.uri, delete=True, min_age=0)
    assert sorted(ParquetDataset(where.uri).read(None).to_arrow().column("id").to_pylist()) == final
