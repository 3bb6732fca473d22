"""A SparkSession for paimon-fast, and the ``paimon-fast`` Data Source registered in one.

Spark's own start-up output (log4j's INFO / WARN lines, the "default log4j profile" notice) is
kept quiet from the JVM's first line: the driver JVM starts with this package's
``log4j2.properties`` (ERROR and above), unless the Spark configuration directory has one of
its own.  The command line goes further (:func:`cli_session`): the JVM's stdout and stderr go
to a log file, so nothing of Spark's reaches the terminal, and a failing start is one line
naming the cause and the log (:class:`SparkStartError`).
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from typing import Mapping, Optional

from ..errors import InvalidArgumentError, PaimonFastError

DATA_SOURCE_NAME = "paimon-fast"
LOG4J_CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "log4j2.properties")

# the master URLs Spark 4 takes (spark.apache.org/docs/latest/submitting-applications.html#master-urls)
_MASTER = re.compile(
    r"^(local(\[(\*|\d+)(,\s*\d+)?\])?"
    r"|local-cluster\[\d+,\s*\d+,\s*\d+\]"
    r"|spark://[^\s/]+(:\d+)?(,[^\s/,]+(:\d+)?)*"
    r"|yarn|k8s://\S+|connect://\S+|sc://\S+)$"
)


class SparkStartError(PaimonFastError, RuntimeError):
    """Spark did not start: the master is not reachable, the JVM exited, ... (``str()`` is one
    line with the cause; ``log`` is the file holding Spark's own output, or None)."""

    def __init__(self, message: str, log: Optional[str] = None):
        super().__init__(message)
        self.log = log


def default_master() -> str:
    return os.environ.get("SPARK_MASTER") or "local[*]"


def check_master(master: str) -> str:
    """``master`` if it is a Spark master URL, else :class:`InvalidArgumentError` naming it
    (before a JVM starts, instead of Spark's stack trace)."""
    if not _MASTER.match(master.strip()):
        raise InvalidArgumentError(
            f"{master!r} is not a Spark master URL (local, local[N], local[*], spark://HOST:PORT, yarn, k8s://URL)"
        )
    return master.strip()


def describe_master(master: str) -> str:
    """``master`` in words: ``local Spark (local[*], every core of this machine)`` or
    ``Spark at spark://host:7077``."""
    if master == "local":
        return "local Spark (local, 1 core)"
    if master.startswith("local["):
        n = master[6:-1].split(",")[0].strip()
        return f"local Spark ({master}, {'every core of this machine' if n == '*' else n + ' cores'})"
    return f"Spark at {master}"


def _own_log4j_config() -> bool:
    """Does the Spark configuration directory (``$SPARK_CONF_DIR``, else ``$SPARK_HOME/conf``)
    hold a log4j2 configuration of its own (which then decides, not ours)?"""
    conf_dir = os.environ.get("SPARK_CONF_DIR") or (
        os.path.join(os.environ["SPARK_HOME"], "conf") if os.environ.get("SPARK_HOME") else None
    )
    return bool(conf_dir) and any(
        os.path.exists(os.path.join(conf_dir, n)) for n in ("log4j2.properties", "log4j2.xml", "log4j2.yaml")
    )


def _java_options(conf: dict) -> None:
    """Start the driver JVM with our quiet log4j configuration (kept: a user's own)."""
    key = "spark.driver.extraJavaOptions"
    opts = str(conf.get(key, ""))
    if "log4j2.configurationFile" in opts or "log4j.configurationFile" in opts or _own_log4j_config():
        return
    conf[key] = (opts + " " if opts else "") + f"-Dlog4j2.configurationFile=file:{LOG4J_CONFIG}"


def session(
    master: Optional[str] = None,
    app_name: str = "paimon-fast",
    conf: Optional[Mapping] = None,
    log_file: Optional[str] = None,
):
    """A SparkSession set up for paimon-fast (workers run this Python, Data Source
    filter pushdown on, ``paimon-fast`` registered, Spark's logging at ERROR from the start).
    ``master`` defaults to ``$SPARK_MASTER`` or ``local[*]`` (every core of this machine).
    Without pyspark, Java 17+, or the pandas / pyarrow pyspark's Arrow UDFs need, raises
    :class:`~paimon_fast.errors.MissingDependencyError` naming what to install.

    ``log_file``: where the JVM's own stdout and stderr go when this call starts it (the
    command line's choice; by default they are this process's).  Reuses a running session:
    then only ``conf`` (and the Data Source's filter pushdown) is applied to it: the defaults
    (no UI, 8 shuffle partitions) are for a session this call starts, so they never undo
    settings its owner chose."""
    from .env import arrow_only, check_spark_environment

    check_spark_environment()  # Java, pandas, pyarrow: one clear error instead of a py4j traceback
    master = master or default_master()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    running = SparkContext._active_spark_context is not None
    # what the Data Source needs, always; the rest only for a session this call starts
    settings = {"spark.sql.python.filterPushdown.enabled": "true"}
    if not running:
        settings.update({"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false"})
        settings["spark.sql.shuffle.partitions"] = "8"
    settings.update({k: str(v) for k, v in dict(conf or {}).items()})
    if not running:
        _java_options(settings)
    if log_file is not None:
        _launch_jvm(master, app_name, settings, log_file)
    b = SparkSession.builder.master(master).appName(app_name)
    for k, v in settings.items():
        b = b.config(k, v)
    with arrow_only():
        spark = b.getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")
        register(spark)
    return spark


def _launch_jvm(master: str, app_name: str, settings: dict, log_file: str) -> None:
    """Start pyspark's JVM (unless one runs) with its stdout and stderr in ``log_file``."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None:
        return
    sconf = SparkConf(loadDefaults=False).setMaster(master).setAppName(app_name)
    for k, v in settings.items():
        sconf.set(k, v)
    with open(log_file, "ab") as out:
        gateway = launch_gateway(sconf, popen_kwargs={"stdout": out, "stderr": out})
    SparkContext._ensure_initialized(gateway=gateway)


SPARK_LOG_ENV = "PAIMON_FAST_SPARK_LOG"


def cli_session(master: Optional[str] = None, app_name: str = "paimon-fast"):
    """:func:`session` for the command line: the master checked first (a URL Spark would not
    parse, a ``spark://`` master nobody answers at: :class:`SparkStartError` at once), Spark's
    own output in a log file (``$PAIMON_FAST_SPARK_LOG``, else a temporary
    ``paimon-fast-spark-<pid>-*.log`` removed at exit unless the command failed), and a start
    that fails raised as :class:`SparkStartError`: one line with the cause and the log's path."""
    master = check_master(master or default_master())
    unreachable = _unreachable(master)
    if unreachable:
        raise SparkStartError(f"Spark did not start on {master}: {unreachable}")
    log = os.environ.get(SPARK_LOG_ENV)
    if not log:
        fd, log = tempfile.mkstemp(prefix=f"paimon-fast-spark-{os.getpid()}-", suffix=".log")
        os.close(fd)
        _remove_at_exit(log)
    try:
        return session(master, app_name, log_file=log)
    except (PaimonFastError, ImportError):
        raise
    except Exception as e:  # noqa: BLE001 - py4j / pyspark errors of every kind: their cause, in one line
        _KEEP.append(log)
        raise SparkStartError(
            f"Spark did not start on {master}: {start_failure_cause(e, log)} (Spark's log: {log})",
            log,
        ) from e


_KEEP: list = []


def _remove_at_exit(log: str) -> None:
    import atexit

    def remove():
        # kept when the start failed or the process ends with an exception (a failed job)
        if log in _KEEP or getattr(sys, "last_value", None) is not None:
            return
        try:
            os.remove(log)
        except OSError:
            pass

    atexit.register(remove)


def _unreachable(master: str, timeout: float = 5.0) -> Optional[str]:
    """Why no master of a ``spark://`` URL answers (connection refused, unknown host, time-out), or
    None: Spark itself would retry for a minute and then fail with a stack trace."""
    import socket

    if not master.startswith("spark://"):
        return None
    why = []
    for hostport in master[len("spark://") :].split(","):
        host, _, port = hostport.rpartition(":")
        if not host:
            host, port = port, "7077"
        try:
            with socket.create_connection((host, int(port)), timeout=timeout):
                return None
        except (OSError, ValueError) as e:
            why.append(f"{host}:{port} ({e.strerror or e})" if isinstance(e, OSError) else f"{hostport} ({e})")
    return "no master answers at " + ", ".join(why)


def start_failure_cause(e: BaseException, log: Optional[str] = None) -> str:
    """The cause of a failed Spark start in one line (at most 300 characters): the last ERROR
    Spark logged (``All masters are unresponsive! Giving up.``), else the first line of the
    deepest Java exception's message, else of Python's."""

    def one_line(text) -> str:
        first = str(text).strip().splitlines()[0] if str(text).strip() else ""
        first = " ".join(first.split())
        return first if len(first) <= 300 else first[:297] + "..."

    if log and os.path.exists(log):
        with open(log, errors="replace") as f:
            errors = [m.group(1) for m in (re.search(r"\bERROR\s+\S+:\s+(.+)$", ln) for ln in f) if m]
        if errors:
            return one_line(errors[-1])
    java = getattr(e, "java_exception", None)
    if java is not None:
        try:
            cause = java
            while cause.getCause() is not None and not cause.getCause().equals(cause):
                cause = cause.getCause()
            return one_line(cause.getMessage() or cause.toString())
        except Exception:  # noqa: BLE001 - the JVM is gone: Python's message
            pass
    return one_line(e) or type(e).__name__


def register(spark) -> None:
    """Register the ``paimon-fast`` Python Data Source and turn on filter pushdown."""
    from .datasource import PaimonFastDataSource

    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    spark.dataSource.register(PaimonFastDataSource)
