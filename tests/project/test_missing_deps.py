"""Something outside the core is missing: one MissingDependencyError naming the extra or the install command."""

import os
import subprocess
import sys

import pytest

from tests.support.blocked_imports import json_of
from paimon_fast import cli
from paimon_fast.errors import MissingCodecError, MissingDependencyError, OptionError, PaimonFastError
from tests.support.paths import ROOT


@pytest.fixture
def hide(monkeypatch):
    """hide("hudi"): importing the module raises ImportError, as if it were not installed."""

    def run(*names):
        for n in names:
            for mod in [m for m in sys.modules if m == n or m.startswith(n + ".")]:
                monkeypatch.delitem(sys.modules, mod)
            monkeypatch.setitem(sys.modules, n, None)

    return run


def test_error_class_is_an_import_error_and_ours():
    e = MissingDependencyError("x", name="hudi")
    assert isinstance(e, ImportError) and isinstance(e, PaimonFastError) and e.name == "hudi"
    assert issubclass(MissingCodecError, OptionError) and issubclass(MissingCodecError, MissingDependencyError)


def test_hudi_without_hudi_names_the_tables_extra(hide):
    import paimon_fast.hudi as ph  # importing the feature works: the model needs no tables

    hide("hudi")
    with pytest.raises(MissingDependencyError, match=r'pip install "paimon-fast\[tables\]"') as ei:
        ph.read_arrow("/nonexistent/table", None)
    assert ei.value.__cause__ is None and "`hudi`" in str(ei.value)


def test_paimon_without_pypaimon_names_the_tables_extra(hide):
    import paimon_fast.paimon as pp

    hide("pypaimon")
    for call in (
        lambda: pp.read_with_index(None, None),
        lambda: pp.plan_with_index(None, None),
        lambda: pp.legacy_manifest_table(None),
        lambda: pp.rewrite_file_index(None, None),
    ):
        with pytest.raises(MissingDependencyError, match=r'`pypaimon`.*pip install "paimon-fast\[tables\]"'):
            call()


def test_spark_without_pyspark_names_the_spark_extra(hide):
    from paimon_fast.spark import env

    hide("pyspark")
    with pytest.raises(MissingDependencyError, match=r'`pyspark`.*pip install "paimon-fast\[spark\]"'):
        env.check_python_packages()


def test_data_source_module_without_pyspark(hide, monkeypatch):
    monkeypatch.delitem(sys.modules, "paimon_fast.spark.datasource", raising=False)
    hide("pyspark")
    with pytest.raises(MissingDependencyError, match=r"Data Source needs the `pyspark`.*paimon-fast\[spark\]"):
        import paimon_fast.spark.datasource  # noqa: F401


@pytest.mark.parametrize("module,call", [("zstandard", "_zstd"), ("lz4", "_lz4"), ("lzo", "lzo_module")])
def test_codec_without_its_package(hide, module, call):
    from paimon_fast.globalindex import sst as codec

    hide(module)
    extra = "lzo" if module == "lzo" else "codecs"
    with pytest.raises(MissingCodecError, match=rf'pip install "paimon-fast\[{extra}\]"') as ei:
        getattr(codec, call)()
    assert isinstance(ei.value, OptionError)
    if module == "lzo":
        assert "apt-get install liblzo2-dev" in str(ei.value)


def test_lzo_without_its_shared_library(monkeypatch):
    """python-lzo installed, liblzo2 gone: the message names the C library, not the extra."""
    import builtins

    from paimon_fast.globalindex import sst as codec

    real = builtins.__import__

    def fake(name, *a, **k):
        if name == "lzo":
            raise ImportError("liblzo2.so.2: cannot open shared object file: No such file or directory")
        return real(name, *a, **k)

    monkeypatch.delitem(sys.modules, "lzo", raising=False)
    monkeypatch.setattr(builtins, "__import__", fake)
    with pytest.raises(MissingCodecError, match=r"liblzo2 C library.*apt-get install liblzo2-2"):
        codec.lzo_module()


# ---------------------------------------------------------------- Java for Spark


def _fake_java(tmp_path, version_line):
    home = tmp_path / "jdk"
    (home / "bin").mkdir(parents=True)
    exe = home / "bin" / "java"
    exe.write_text(f"#!/bin/sh\necho '{version_line}' >&2\n")
    exe.chmod(0o755)
    return str(home)


@pytest.mark.parametrize(
    "text,major",
    [
        ('java version "1.8.0_372"', 8),
        ('openjdk version "11.0.21" 2023-10-17', 11),
        ('openjdk version "17.0.9" 2023-10-17', 17),
        ('openjdk version "21" 2023-09-19', 21),
        ("nonsense", None),
    ],
)
def test_parse_java_version(text, major):
    from paimon_fast.spark.env import parse_java_version

    assert parse_java_version(text) == major


def test_old_java_is_named_with_the_install_command(tmp_path, monkeypatch):
    from paimon_fast.spark import env

    monkeypatch.setenv("JAVA_HOME", _fake_java(tmp_path, 'openjdk version "11.0.21" 2023-10-17'))
    with pytest.raises(MissingDependencyError, match=r"needs Java 17 or newer.*is Java 11.*apt-get install openjdk-17"):
        env.check_java()
    monkeypatch.setenv("JAVA_HOME", _fake_java(tmp_path / "b", 'openjdk version "21.0.1" 2023-10-17'))
    assert env.check_java() == 21


def test_no_java(tmp_path, monkeypatch):
    from paimon_fast.spark import env

    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # no java on it
    with pytest.raises(MissingDependencyError, match=r"Spark needs Java, which was not found.*apt-get install"):
        env.check_java()


def test_cli_prints_what_to_install_not_a_traceback(tmp_path, monkeypatch, capsys):
    pytest.importorskip("pyspark")
    from paimon_fast.spark import env

    monkeypatch.setattr(env, "_CHECKED", [])
    monkeypatch.setenv("JAVA_HOME", _fake_java(tmp_path, 'java version "1.8.0_372"'))
    assert cli.main(["query", str(tmp_path), "--where", "id = 1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("paimon-fast query: Spark") and "Java 8" in err and "Traceback" not in err


# ---------------------------------------------------------------- the build


def test_build_without_kernel_sources_fails_loudly(tmp_path):
    """A source tree (or sdist) without the .pyx files must not build a package that cannot work."""
    src = tmp_path / "src"
    (src / "paimon_fast" / "_kernels").mkdir(parents=True)
    (src / "csrc").mkdir()
    for f in ("setup.py", "pyproject.toml", "README.md"):
        (src / f).write_bytes(open(os.path.join(ROOT, f), "rb").read())
    p = subprocess.run([sys.executable, "setup.py", "build_ext"], cwd=src, capture_output=True, text=True, timeout=120)
    assert p.returncode != 0
    assert "kernel sources" in p.stderr and "bloom.pyx" in p.stderr and "Traceback" not in p.stderr


# ---------------------------------------------------------------- the same answer without pandas

_NO_PANDAS_ANSWERS = """
    import json, os, sys, tempfile
    import numpy as np, pyarrow as pa, pyarrow.parquet as pq
    from paimon_fast import globalindex as gi
    from paimon_fast.cli import display_rows
    from paimon_fast.spark.cli import format_rows
    from paimon_fast.tables import ParquetDataset
    from paimon_fast.read.arrow_filter import filter_table
    from paimon_fast.core.predicate import field

    out = {"pandas loaded": "pandas" in sys.modules}
    ns = [3_739_558_079_750_704_648, 5, 3, 1_000_000_001, None, -1_500]
    tm = [1, 5, 3, 2, None, 86_399_999_999_999]
    t = pa.table({"ts": pa.array(ns, pa.timestamp("ns")), "ltz": pa.array(ns, pa.timestamp("ns", tz="UTC")),
                  "tm": pa.array(tm, pa.time64("ns")), "id": list(range(6))})
    d = tempfile.mkdtemp()
    pq.write_table(t, os.path.join(d, "a.parquet"))
    ds = ParquetDataset(d)
    ds.build({"file-index.bloom-filter.columns": "ts", "file-index.bitmap.columns": "tm"})
    for c in ("ts", "ltz", "tm"):           # top-N ranks nanosecond values (as_py needs pandas)
        for desc in (True, False):
            out[f"top {c} {desc}"] = ds.top_n(c, 3, desc=desc).column("id").to_pylist()
    for w in ("ts > TIMESTAMP '1970-01-01 00:00:00.000000004'", "ltz = TIMESTAMP '2088-07-01 22:07:59.750704648Z'",
              "tm < '00:00:00.000000004'", "ts < '1970-01-01T00:00:00.000000004'"):
        out[w] = sorted(ds.scan(w)[0].column("id").to_pylist())
    out["scalar"] = filter_table(t, field("ltz") == t.column("ltz")[0]).column("id").to_pylist()
    out["format_rows"] = format_rows(t.slice(0, 3))
    out["display_rows"] = json.loads(json.dumps(display_rows(t.slice(0, 2)), default=str))
    w = gi.writer("TIME(9)")
    w.write_batch(t.column("tm"), np.arange(6, dtype=np.int64))
    r = gi.reader("TIME(9)", w.finish()[0], None, 6)
    out["global time"] = sorted(r.evaluate(field("tm") != t.column("tm")[2]))
    print(json.dumps(out))
"""


def test_nanosecond_answers_do_not_depend_on_pandas():
    """pandas is optional (the spark extra pulls it, the core does not), and pyarrow reaches for it
    to turn nanoseconds into Python objects.  Top-N, scans with nanosecond literals, the exact
    filter, the global index and the CLI's row printing give the same answers and text with pandas
    blocked as with it (top-N and the row printing raised ValueError without it)."""
    without = json_of(_NO_PANDAS_ANSWERS, ("pandas",))
    assert without.pop("pandas loaded") is False
    got = without
    assert got["top ts True"] == [0, 3, 1] and got["top ts False"] == [5, 2, 1]
    assert got["top ltz True"] == [0, 3, 1] and got["top tm True"] == [5, 1, 2] and got["top tm False"] == [0, 3, 2]
    assert got["ts > TIMESTAMP '1970-01-01 00:00:00.000000004'"] == [0, 1, 3]
    assert got["ltz = TIMESTAMP '2088-07-01 22:07:59.750704648Z'"] == [0]
    assert got["tm < '00:00:00.000000004'"] == [0, 2, 3]
    assert got["ts < '1970-01-01T00:00:00.000000004'"] == [2, 5]
    assert got["scalar"] == [0]
    assert got["global time"] == [0, 1, 2, 3, 5]  # TIME keys are millis: row 2's millisecond is kept
    assert "2088-07-01 22:07:59.750704648" in got["format_rows"] and "00:00:00.000000005" in got["format_rows"]
    assert got["display_rows"][0]["ts"] == "2088-07-01 22:07:59.750704648"
    installed = json_of(_NO_PANDAS_ANSWERS)  # pandas as installed (the full job has it)
    installed.pop("pandas loaded")
    assert installed == without


# ---------------------------------------------------------------- other optional packages


def test_paimon_command_without_pypaimon(hide, capsys):
    """``paimon-fast paimon ...`` without pypaimon: one line naming the tables extra, exit 2."""
    hide("pypaimon")
    assert cli.main(["paimon", "query", "warehouse", "db.t", "--where", "a = 1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("paimon-fast paimon query: ") and 'pip install "paimon-fast[tables]"' in err


def test_local_spark_of_the_paimon_commands_without_pyspark(hide, monkeypatch):
    """``--spark`` of ``paimon rewrite-index`` / ``create-global-index`` checks for pyspark first
    (was a bare ImportError from ``from pyspark.sql import SparkSession``)."""
    from paimon_fast.paimon import cli as pcli
    from paimon_fast.spark import env

    monkeypatch.setattr(env, "_CHECKED", [])
    hide("pyspark")
    with pytest.raises(MissingDependencyError, match=r'`pyspark`.*pip install "paimon-fast\[spark\]"'):
        pcli._local_spark("x")


def test_zstd_manifest_without_zstandard_is_not_called_corrupt(hide, monkeypatch):
    """A zstd-compressed Avro manifest read without the zstandard package raised IndexFormatError
    ("does not decompress"), as if the file were corrupt: now the missing package, by its extra."""
    fastavro = pytest.importorskip("fastavro", reason="fastavro (the tables extra, via pypaimon) writes the manifest")
    pytest.importorskip("zstandard", reason="zstandard (the codecs extra) compresses the manifest")
    import io

    from paimon_fast.paimon import avro

    buf = io.BytesIO()
    schema = {"type": "record", "name": "r", "fields": [{"name": "a", "type": "long"}]}
    fastavro.writer(buf, schema, [{"a": i} for i in range(10)], codec="zstandard")
    data = buf.getvalue()
    assert [r["a"] for r in avro.read_avro(data)] == list(range(10))
    monkeypatch.setattr(avro, "_ZSTD", type(avro._ZSTD)())  # no decompressor kept for this thread
    avro._HEADER_CACHE.clear()
    hide("zstandard")
    with pytest.raises(MissingDependencyError, match=r"`zstandard`.*paimon-fast\[codecs\]"):
        avro.read_avro(data)
