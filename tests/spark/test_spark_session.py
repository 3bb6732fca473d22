"""The Spark session of the package and of the command line: quiet from the JVM's first line, the
master checked and named, a failing start in one line."""

import importlib
import socket

import pytest

from paimon_fast import cli
from paimon_fast.errors import InvalidArgumentError

ss = importlib.import_module("paimon_fast.spark.session")  # the package hands on session(), the function


@pytest.mark.parametrize(
    "master",
    ["local", "local[2]", "local[*]", "local[4, 2]", "local-cluster[2, 1, 1024]", "spark://h:7077",
     "spark://h1:7077,h2:7077", "yarn", "k8s://https://host:443"],
)  # fmt: skip
def test_master_urls_spark_takes(master):
    assert ss.check_master(master) == master


@pytest.mark.parametrize("master", ["foo", "spark:/h:7077", "local[x]", "", "spark://"])
def test_master_urls_spark_would_refuse(master):
    with pytest.raises(InvalidArgumentError, match="not a Spark master URL"):
        ss.check_master(master)


def test_master_named():
    assert ss.describe_master("local[*]") == "local Spark (local[*], every core of this machine)"
    assert ss.describe_master("local[2]") == "local Spark (local[2], 2 cores)"
    assert ss.describe_master("spark://h:7077") == "Spark at spark://h:7077"


def _one_line(capsys, rc, want_rc, *names):
    out, err = capsys.readouterr()
    assert rc == want_rc and out == "", (rc, out, err)
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    for n in names:
        assert n in err, err
    return err


def test_a_bad_master_is_named_before_spark_starts(tmp_path, capsys):
    (tmp_path / "d").mkdir()
    rc = cli.main(["query", str(tmp_path / "d"), "--where", "a = 1", "--master", "spark:/h:7077"])
    _one_line(capsys, rc, 2, "paimon-fast query: ", "'spark:/h:7077' is not a Spark master URL")


def test_a_master_nobody_answers_at_is_one_line(tmp_path, capsys):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (tmp_path / "d").mkdir()
    rc = cli.main(["query", str(tmp_path / "d"), "--where", "a = 1", "--master", f"spark://127.0.0.1:{port}"])
    _one_line(capsys, rc, 1, f"Spark did not start on spark://127.0.0.1:{port}: no master answers at 127.0.0.1:{port}")


def test_the_cause_of_a_failed_start(tmp_path):
    log = tmp_path / "spark.log"
    log.write_text(
        "WARNING: Using incubator modules: jdk.incubator.vector\n"
        "26/11/29 04:26:07 ERROR StandaloneSchedulerBackend: Application has been killed. Reason: All masters "
        "are unresponsive! Giving up.\n"
        "java.lang.IllegalStateException: Cannot call methods on a stopped SparkContext.\n"
        "\tat org.apache.spark.SparkContext.assertNotStopped(SparkContext.scala:123)\n"
    )
    err = RuntimeError("An error occurred while calling None.org.apache.spark.api.java.JavaSparkContext.\n: x")
    assert ss.start_failure_cause(err, str(log)) == (
        "Application has been killed. Reason: All masters are unresponsive! Giving up."
    )
    assert ss.start_failure_cause(err, str(tmp_path / "none.log")) == (
        "An error occurred while calling None.org.apache.spark.api.java.JavaSparkContext."
    )


def test_a_user_log4j_configuration_is_kept(monkeypatch, tmp_path):
    conf = {}
    monkeypatch.delenv("SPARK_CONF_DIR", raising=False)
    monkeypatch.delenv("SPARK_HOME", raising=False)
    ss._java_options(conf)
    assert conf["spark.driver.extraJavaOptions"] == f"-Dlog4j2.configurationFile=file:{ss.LOG4J_CONFIG}"
    conf = {"spark.driver.extraJavaOptions": "-Xss4m"}
    ss._java_options(conf)
    assert conf["spark.driver.extraJavaOptions"].startswith("-Xss4m -Dlog4j2.configurationFile=")
    conf = {"spark.driver.extraJavaOptions": "-Dlog4j2.configurationFile=mine.properties"}
    ss._java_options(conf)
    assert conf["spark.driver.extraJavaOptions"] == "-Dlog4j2.configurationFile=mine.properties"
    (tmp_path / "log4j2.properties").write_text("rootLogger.level = info\n")
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    conf = {}
    ss._java_options(conf)
    assert conf == {}


@pytest.mark.spark
def test_the_session_starts_with_the_quiet_configuration(spark):
    pytest.importorskip("pyspark")

    ctx = spark._jvm.org.apache.logging.log4j.LogManager.getContext(False)
    assert str(ctx.getConfiguration().getConfigurationSource().getLocation()).endswith("log4j2.properties")
    assert ss.LOG4J_CONFIG in spark.sparkContext.getConf().get("spark.driver.extraJavaOptions")


@pytest.mark.spark
def test_the_tests_jvm_gets_spark_submit_opts(spark):
    """tests/conftest.py sets ``SPARK_SUBMIT_OPTS`` (C1 only: the tests' JVMs are short-lived); the
    driver's JVM, started through spark-submit, runs with each of its options."""
    import os

    args = list(spark._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
    wanted = os.environ["SPARK_SUBMIT_OPTS"].split()
    assert wanted and all(a in args for a in wanted), (wanted, args)


@pytest.mark.spark
def test_a_running_session_keeps_the_settings_its_owner_chose(spark):
    """session() on a running session applies only what it is asked to: its defaults (8 shuffle
    partitions, no UI) are for a session it starts."""
    from tests.conftest import SPARK_CONF

    from paimon_fast import spark as pfs

    key = "spark.sql.shuffle.partitions"
    spark.conf.set(key, "3")
    try:
        assert pfs.session() is spark or pfs.session().sparkContext is spark.sparkContext
        assert spark.conf.get(key) == "3"
        pfs.session(conf={key: "5"})
        assert spark.conf.get(key) == "5"
        assert spark.conf.get("spark.sql.python.filterPushdown.enabled") == "true"
    finally:
        spark.conf.set(key, SPARK_CONF[key])
