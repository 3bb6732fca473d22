"""Java Paimon 0.9 as a same-run anchor: compiles and runs ``benchmarks/java/*.java``
against the bridge jar (``paimon-python-java-bridge-0.9.0.jar`` inside pypaimon 0.2.0's
sdist; ``.ci/run`` fetches it into ``.ci-cache/`` and exports ``PAIMON09_BRIDGE_JAR``).

Every function returns ``(results, reason)``: results is None when Java could not run,
and reason says why, so a report can print it instead of leaving the figure out.
"""

import hashlib
import os
import shutil
import subprocess
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
_CI_JAR = os.path.join(ROOT, ".ci-cache", "pypaimon-0.2.0", "deps", "jars", "paimon-python-java-bridge-0.9.0.jar")


def bridge_jar():
    """Path of the Paimon 0.9 bridge jar, or None."""
    for p in (os.environ.get("PAIMON09_BRIDGE_JAR", ""), _CI_JAR):
        if p and os.path.exists(p):
            return p
    return None


def unavailable():
    """Why Java cannot run here (None when it can)."""
    if not (shutil.which("java") and shutil.which("javac")):
        return "no JDK (java/javac) on the PATH"
    if bridge_jar() is None:
        return (
            "Paimon 0.9 bridge jar not found: set PAIMON09_BRIDGE_JAR or run .ci/run once "
            "(it fetches pypaimon 0.2.0's sdist into .ci-cache/)"
        )
    return None


def _run(main, args, timeout=900):
    jar = bridge_jar()
    with tempfile.TemporaryDirectory(prefix="pf-javac-") as out:
        subprocess.run(
            ["javac", "-cp", jar, "-d", out, os.path.join(HERE, "java", main + ".java")],
            check=True,
            capture_output=True,
            timeout=300,
        )
        r = subprocess.run(
            ["java", "-Xmx2g", "-cp", jar + os.pathsep + out, main, *map(str, args)],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    if r.returncode:
        raise RuntimeError(f"{main} failed: {r.stderr[-2000:]}")
    return r.stdout


def bloom(ints, int_probes, strs, str_probes, items, rounds=15):
    """Java 0.9 BloomFilterFileIndex add / probe timings on the same data (fpp 0.01).

    Returns ({case: {"median": s, "min": s, "sha256": hex or None}}, None) or (None, reason);
    cases are add_bigint, add_string, probe_bigint, probe_string.
    """
    why = unavailable()
    if why:
        return None, why
    with tempfile.TemporaryDirectory(prefix="pf-bloom-java-") as d:
        np.asarray(ints, dtype="<i8").tofile(os.path.join(d, "longs.bin"))
        np.asarray(int_probes, dtype="<i8").tofile(os.path.join(d, "long_probes.bin"))
        for name, vals in (("strings.txt", strs), ("string_probes.txt", str_probes)):
            with open(os.path.join(d, name), "w") as f:
                f.write("\n".join(vals) + "\n")
        with open(os.path.join(d, "items.txt"), "w") as f:
            f.write(str(items))
        try:
            out = _run("BloomBench", [d, rounds])
        except Exception as e:  # a failed Java run is reported, not raised
            return None, f"Java run failed: {e}"
    res = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4:
            res[parts[0]] = {
                "median": int(parts[1]) / 1e9,
                "min": int(parts[2]) / 1e9,
                "sha256": None if parts[3] == "-" else parts[3],
            }
    return res, None


def sha256(b):
    return hashlib.sha256(bytes(b)).hexdigest()
