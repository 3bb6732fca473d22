import os
import sys

import pytest

from tests.support.paths import ROOT

# The tests' JVMs (a local Spark per xdist worker, and those that the README's, the docs' and the
# command line's examples start) live a few minutes and run small jobs, so their C2 compiler costs
# more CPU than it saves: tests/spark/test_spark_reads.py alone took 167 s of the machine's CPU
# with it and 119 s without, in the same wall time.  spark-submit puts $SPARK_SUBMIT_OPTS on the
# command line of the driver's JVM, where local Spark's executors also run.  A value already set is
# kept.
os.environ.setdefault("SPARK_SUBMIT_OPTS", "-XX:TieredStopAtLevel=1")


def pytest_xdist_auto_num_workers(config):
    """``-n auto``: a worker per core, at most 4 (each may start a local Spark of its own)."""
    return max(1, min(os.cpu_count() or 1, 4))


def pytest_collection_modifyitems(config, items):
    """A test that uses the S3 server (:func:`s3_server`, itself or through a fixture; not the
    ``local`` variant of a test run on both) is marked ``s3`` (CI's oldest job runs three of them:
    ``.ci/run``).

    ``PAIMON_FAST_TEST_EXAMPLES=0.2``: every Hypothesis test runs that share of its examples (at
    least 5).  CI's oldest job sets it: the same tests, each code path still run, while the full
    counts run in quickstart-2 (the README's test command, which sets nothing)."""
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        local = any(isinstance(v, str) and v == "local" for v in params.values())
        if "s3_server" in getattr(item, "fixturenames", ()) and not local:
            item.add_marker(pytest.mark.s3)
    share = os.environ.get("PAIMON_FAST_TEST_EXAMPLES")
    if not share:
        return
    from hypothesis import settings

    f = float(share)
    if not 0 < f <= 1:
        raise pytest.UsageError(f"PAIMON_FAST_TEST_EXAMPLES must be in (0, 1], not {share!r}")
    done = set()
    for item in items:
        fn = getattr(getattr(item, "obj", None), "__func__", getattr(item, "obj", None))
        s = getattr(fn, "_hypothesis_internal_use_settings", None)
        if s is None or id(fn) in done:
            continue
        done.add(id(fn))
        fn._hypothesis_internal_use_settings = settings(s, max_examples=max(5, int(s.max_examples * f)))


#: the settings of the tests' one SparkSession; a test that changes a runtime setting sets it back
SPARK_CONF = {
    "spark.sql.shuffle.partitions": "2",
    "spark.sql.files.openCostInBytes": "8192",  # small test files: a scan packs several into a task
    "spark.sql.session.timeZone": "UTC",
}


@pytest.fixture(scope="session")
def spark():
    """The one SparkSession of the tests (per xdist worker): local[2] with :data:`SPARK_CONF`,
    started as the package starts it (``paimon_fast.spark.session``).  Its Python workers run
    this interpreter and import this checkout, ``tests.support`` included (the test-only file
    index type ``tests.support.toy_index`` is loaded there by its module's name).
    Skips where pyspark or Java is missing."""
    pytest.importorskip("pyspark")
    import shutil

    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("no Java for a local SparkSession")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    from paimon_fast.spark import session

    yield session("local[2]", "paimon-fast-tests", conf=SPARK_CONF)


@pytest.fixture(autouse=True)
def _spark_settings_kept(request):
    """A test that takes ``spark`` leaves its runtime settings as it found them (the next test
    on the worker's session must see :data:`SPARK_CONF`, whatever the order)."""
    if "spark" not in request.fixturenames:
        yield
        return
    s = request.getfixturevalue("spark")
    yield
    changed = {k: s.conf.get(k, None) for k, v in SPARK_CONF.items() if s.conf.get(k, None) != v}
    assert not changed, f"the test changed the shared SparkSession's settings: {changed}"


@pytest.fixture(scope="session")
def s3_server():
    """A moto S3 server on 127.0.0.1 (a free port) for the whole session (tests/support/s3_support.py)."""
    from tests.support.s3_support import S3Server

    srv = S3Server()
    yield srv
    srv.stop()
