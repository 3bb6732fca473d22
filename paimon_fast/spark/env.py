"""What local Spark needs outside this package, checked before a session starts.

pyspark starts a JVM: without Java (or with one older than Spark needs) it fails
deep inside py4j with a message about a gateway.  pyspark 4.3's ``mapInArrow``
(the index build) also needs pandas >= 2.2 and pyarrow >= 18 and only says so
when the first job is planned.  :func:`check_spark_environment` finds all of
these up front and raises one :class:`~paimon_fast.errors.MissingDependencyError`
that names the missing piece and the command that installs it.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import warnings
from typing import Optional, Tuple

from ..errors import MissingDependencyError, install_hint, require

# Spark 4.x runs on Java 17 and 21
MIN_JAVA = 17
JAVA_INSTALL = (
    f"install Java {MIN_JAVA} or newer: `apt-get install openjdk-{MIN_JAVA}-jre-headless` (Debian/Ubuntu), "
    f"`dnf install java-{MIN_JAVA}-openjdk-headless` (Fedora/RHEL), `brew install openjdk@{MIN_JAVA}` "
    "(macOS); or point JAVA_HOME at one"
)

_CHECKED = []

# pyspark 4.3 (``require_minimum_pandas_version``) warns on every Arrow UDF it plans, every Arrow
# hand-off and on its own imports once pandas is 3.x
PANDAS3_WARNING = r"PySpark does not yet fully support pandas >= 3"


@contextlib.contextmanager
def arrow_only():
    """Run pyspark calls of ours without pyspark's pandas 3 FutureWarning.

    Our Spark jobs hand Spark Arrow batches only (``mapInArrow``, ``createDataFrame`` of an Arrow
    table): pandas' version does not matter to them, so the warning would only be noise.  It is
    silenced around those calls, and only there: a user's own pandas UDF still gets it."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=PANDAS3_WARNING, category=FutureWarning)
        yield


def java_executable() -> Optional[str]:
    """The ``java`` pyspark would start: ``$JAVA_HOME/bin/java`` if JAVA_HOME is set, else the PATH's."""
    home = os.environ.get("JAVA_HOME")
    if home:
        exe = os.path.join(home, "bin", "java")
        return exe if os.path.isfile(exe) else None
    return shutil.which("java")


def parse_java_version(text: str) -> Optional[int]:
    """Major version from ``java -version`` output (``"1.8.0_372"`` -> 8, ``"17.0.9"`` -> 17)."""
    m = re.search(r'version "(\d+)(?:\.(\d+))?', text)
    if not m:
        return None
    major = int(m.group(1))
    if major == 1 and m.group(2):
        major = int(m.group(2))
    return major


def java_version(exe: str) -> Tuple[Optional[int], str]:
    try:
        p = subprocess.run([exe, "-version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, str(e)
    out = (p.stderr or "") + (p.stdout or "")
    return parse_java_version(out), out.strip().splitlines()[0] if out.strip() else ""


def check_java() -> int:
    """The Java major version Spark will use, or MissingDependencyError saying what to install."""
    exe = java_executable()
    if exe is None:
        where = (
            f"JAVA_HOME={os.environ['JAVA_HOME']} has no bin/java"
            if os.environ.get("JAVA_HOME")
            else "no `java` on the PATH and JAVA_HOME is not set"
        )
        raise MissingDependencyError(f"Spark needs Java, which was not found ({where}): {JAVA_INSTALL}", name="java")
    major, first = java_version(exe)
    if major is None:
        raise MissingDependencyError(
            f"Spark needs Java {MIN_JAVA}+, and `{exe} -version` did not say which "
            f"version it is ({first!r}): {JAVA_INSTALL}",
            name="java",
        )
    if major < MIN_JAVA:
        raise MissingDependencyError(
            f"Spark {_spark_version()} needs Java {MIN_JAVA} or newer; {exe} is Java {major}: {JAVA_INSTALL}",
            name="java",
        )
    return major


def _spark_version() -> str:
    try:
        import pyspark

        return pyspark.__version__
    except ImportError:  # pragma: no cover
        return "4"


def check_python_packages() -> None:
    """pyspark, and the pandas / pyarrow its Arrow UDFs need (pyspark's own minimums), importable."""
    require("pyspark", "the Spark pipeline")
    try:
        from pyspark.sql.pandas import utils
    except ImportError:  # pragma: no cover - a pyspark without the module
        return
    for name in ("require_minimum_pandas_version", "require_minimum_pyarrow_version"):
        check = getattr(utils, name, None)
        if check is None:  # pragma: no cover
            continue
        try:
            with arrow_only():
                check()
        except ImportError as e:
            raise MissingDependencyError(
                f"pyspark {_spark_version()}'s Arrow UDFs (the index build) cannot run: {e}: {install_hint('pyspark')}",
                name=getattr(e, "name", None),
            ) from None


def check_spark_environment() -> None:
    """Check everything local Spark needs once per process (the Java check starts a JVM: ~0.1 s)."""
    if _CHECKED:
        return
    check_python_packages()
    check_java()
    _CHECKED.append(True)
