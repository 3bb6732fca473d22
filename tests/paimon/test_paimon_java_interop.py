"""Java Paimon 0.9 reads what rewrite_file_index and optimize wrote, and plans fewer files with it.

Needs Java 17 (javac) and the Paimon 0.9 bridge jar, which ships inside the
PyPI sdist of pypaimon 0.2.0 (``pip download --no-deps --no-binary :all:
pypaimon==0.2.0``, then ``deps/jars/paimon-python-java-bridge-0.9.0.jar``).
Point ``PAIMON09_BRIDGE_JAR`` at it; Hadoop's client jars come from pyspark.
Skipped when either is missing.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

pytest.importorskip("pypaimon")
pyspark = pytest.importorskip("pyspark")

from paimon_fast.paimon import legacy_manifest_table, optimize, rewrite_file_index  # noqa: E402

from tests.support.paimon_helpers import catalog, copy_table, unpack_java09  # noqa: E402
from tests.support.paths import JAVA  # noqa: E402

JAR = os.environ.get("PAIMON09_BRIDGE_JAR", "")

pytestmark = pytest.mark.skipif(
    not (JAR and os.path.exists(JAR) and shutil.which("javac") and shutil.which("java")),
    reason="set PAIMON09_BRIDGE_JAR to paimon-python-java-bridge-0.9.0.jar (and have a JDK) for the Java check",
)


@pytest.fixture(scope="module")
def java_plan(tmp_path_factory):
    out = tmp_path_factory.mktemp("javac")
    cp = os.pathsep.join([JAR, os.path.join(os.path.dirname(pyspark.__file__), "jars", "*")])
    subprocess.run(
        ["javac", "-J-XX:TieredStopAtLevel=1", "-cp", cp, "-d", str(out), os.path.join(JAVA, "PlanCount.java")],
        check=True,
        capture_output=True,
    )

    def run(wh, table, column, values):
        """[(files planned, rows read)] per value, one JVM for all of them."""
        r = subprocess.run(
            [
                "java",
                "-XX:TieredStopAtLevel=1",  # (a short run: C1 only, as the tests' other JVMs, tests/conftest.py)
                "-cp",
                cp + os.pathsep + str(out),
                "PlanCount",
                str(wh),
                table,
                column,
                ",".join(map(str, values)),
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        lines = [x for x in r.stdout.splitlines() if x.startswith("files=")]
        assert len(lines) == len(values), r.stderr[-2000:]
        return [tuple(int(x.split("=")[1]) for x in line.split()) for line in lines]

    return run


def test_java09_plans_fewer_files_after_rewrite(tmp_path_factory, tmp_path, java_plan):
    wh = unpack_java09(tmp_path_factory.mktemp("j09"))
    copy_table(wh, str(tmp_path), "append_dv")
    # prices are id * 10: 5, 15, ... are absent, inside file 0's min/max, so only an index can skip them
    probes = list(range(5, 200, 10))
    before = [f for f, _ in java_plan(tmp_path, "db.append_dv", "price", probes)]
    assert before == [1] * len(probes)
    table = legacy_manifest_table(catalog(tmp_path).get_table("db.append_dv"))
    rep = rewrite_file_index(
        None, table, {"file-index.bloom-filter.columns": "name,price", "file-index.bloom-filter.price.items": "1000"}
    )
    assert rep.committed and rep.embedded == 2
    after = [f for f, _ in java_plan(tmp_path, "db.append_dv", "price", probes)]
    assert sum(after) < sum(before) // 2
    # Java still reads every live row, its old indexes still work
    assert java_plan(tmp_path, "db.append_dv", "name", ["-", "name-1500"]) == [(2, 1666), (1, 1000)]
    assert java_plan(tmp_path, "db.append_dv", "category", ["magenta"]) == [(0, 0)]


def test_java09_reads_an_optimized_table_and_reads_less_of_it(tmp_path_factory, tmp_path, java_plan):
    """optimize on a table Java 0.9 wrote: Java reads every row, its bloom filters and bitmaps
    (version 1, as the replaced files had) still answer, and the files now hold one category
    each, so a category lookup reads fewer rows than before."""
    wh = unpack_java09(tmp_path_factory.mktemp("j09"))
    copy_table(wh, str(tmp_path), "append_embedded")
    t = "db.append_embedded"
    assert java_plan(tmp_path, t, "name", ["-"]) == [(4, 4000)]
    (before_red,) = java_plan(tmp_path, t, "category", ["red"])
    table = legacy_manifest_table(catalog(tmp_path).get_table(t)).copy({"target-file-size": "8 kb"})
    rep = optimize(table, ["category", "id"])
    assert rep.files_before == 4 and rep.files_after > 4
    assert java_plan(tmp_path, t, "name", ["-"]) == [(rep.files_after, 4000)]
    (hit, miss) = java_plan(tmp_path, t, "name", ["name-1500", "nope"])
    assert hit[0] == 1 and 0 < hit[1] < 1000 and miss == (0, 0)
    (red,) = java_plan(tmp_path, t, "category", ["red"])
    assert before_red == (2, 2000) and red[1] < before_red[1] and red[0] < rep.files_after
