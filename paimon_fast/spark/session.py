"""A SparkSession for paimon-fast, and the ``paimon-fast`` Data Source registered in one."""

from __future__ import annotations

import os
import sys
from typing import Mapping, Optional

DATA_SOURCE_NAME = "paimon-fast"


def default_master() -> str:
    return os.environ.get("SPARK_MASTER") or "local[*]"


def session(master: Optional[str] = None, app_name: str = "paimon-fast", conf: Optional[Mapping] = None):
    """A SparkSession set up for paimon-fast (workers run this Python, Data Source
    filter pushdown on, ``paimon-fast`` registered).  ``master`` defaults to
    ``$SPARK_MASTER`` or ``local[*]`` (every core of this machine).  Without pyspark,
    Java 17+, or the pandas / pyarrow pyspark's Arrow UDFs need, raises
    :class:`~paimon_fast.errors.MissingDependencyError` naming what to install."""
    from .env import arrow_only, check_spark_environment

    check_spark_environment()  # Java, pandas, pyarrow: one clear error instead of a py4j traceback
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    b = (
        SparkSession.builder.master(master or default_master())
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.sql.python.filterPushdown.enabled", "true")
    )
    for k, v in dict(conf or {}).items():
        b = b.config(k, str(v))
    with arrow_only():
        spark = b.getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")
        register(spark)
    return spark


def register(spark) -> None:
    """Register the ``paimon-fast`` Python Data Source and turn on filter pushdown."""
    from .datasource import PaimonFastDataSource

    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    spark.dataSource.register(PaimonFastDataSource)
