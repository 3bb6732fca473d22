"""benchmarks/report.py and ``paimon-fast bench``: how benchmark results become the report
(operation / case / implementation keys, ratios, skipped figures, plots), on synthetic results."""

import importlib.util
import os

import pytest

from paimon_fast import cli
from tests.support import paths

ROOT = str(paths.ROOT)


def _load(name, rel):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, rel))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


report = _load("_bench_report_under_test", "benchmarks/report.py")


def _bench(name, group, params, param, median, extra=None):
    return {
        "name": name,
        "group": group,
        "params": params,
        "param": param,
        "extra_info": extra or {},
        "stats": {"median": median, "min": median * 0.9},
    }


def test_keys_from_suffix_param_and_extra_info():
    key = report.bench_key
    assert key("test_add_bigint_kernel", "bloom add", None, None, {}) == ("bloom add", "", "kernel")
    assert key(
        "test_cold_equal[twin-STRING-10]", "g", {"impl": "twin", "case": ("STRING", 10)}, "twin-STRING-10", {}
    ) == ("g", "STRING-10", "twin")
    assert key("test_query[kernel-bloom-100]", "q", {"impl": "kernel"}, "kernel-bloom-100", {"impl": "numpy_isin"}) == (
        "q",
        "bloom-100",
        "numpy_isin",
    )
    assert key("test_build_pypaimon[INT-10]", None, {"case": 1}, "INT-10", {}) == ("build", "INT-10", "pypaimon")


def _part():
    return {
        "name": "bloom",
        "wall_s": 12.0,
        "load": (1.0, 2.0),
        "returncode": 0,
        "benchmarks": [
            _bench("test_add_kernel", "bloom add", None, None, 0.010),
            _bench("test_add_twin", "bloom add", None, None, 2.5),
            _bench(
                "test_java_anchor",
                "bloom Java 0.9 anchor",
                None,
                None,
                9.0,
                {"java": {"bloom add": {"median": 0.030, "min": 0.020, "sha256": "x"}}},
            ),
        ],
        "skipped": [("test_probe_pypaimon", "pypaimon is not installed")],
        "failed": [],
    }


def test_report_gives_medians_ratios_and_why_not(tmp_path):
    part = _part()
    rows = report.rows_of(part)
    assert rows[("bloom add", "")]["java"]["median"] == 0.030
    out = tmp_path / "b.md"
    report.write_report([part], str(out), True, 20.0, "not drawn: test", [])
    text = out.read_text()
    assert "## Machine" in text and "cores" in text
    line = next(x for x in text.splitlines() if x.startswith("| bloom add |"))
    # ours 10 ms; twin 2.5 s = 250x; Java 30 ms = 3x
    assert "10.00 ms" in line and "2.50 s (250.0x)" in line and "30.00 ms (3.0x)" in line
    assert "pypaimon is not installed" in text  # an unmeasured figure says why
    assert "bloom Java 0.9 anchor" not in text  # the JVM wall time is not a figure
    assert "not drawn: test" in text


def test_scaling_table_and_peak_rss(tmp_path):
    b = []
    for n, t in ((100_000, 0.001), (1_000_000, 0.01)):
        b.append(
            _bench(f"test_build_kernel[bloom-{n}]", "scaling build bloom", {"index": "bloom", "n": n}, f"bloom-{n}", t)
        )
        b.append(
            _bench(
                f"test_query[kernel-bitmap-{n}]",
                "scaling query bitmap",
                {"impl": "kernel"},
                f"kernel-bitmap-{n}",
                t / 10,
            )
        )
        b.append(
            _bench(
                f"test_query[pyarrow_compute-bitmap-{n}]",
                "scaling query bitmap",
                {"impl": "pyarrow_compute"},
                f"pyarrow_compute-bitmap-{n}",
                t,
                {"impl": "pyarrow_compute"},
            )
        )
    b.append(
        _bench(
            "test_peak_rss[bloom]",
            "peak RSS of one build",
            {"index": "bloom"},
            "bloom",
            1.0,
            {
                "rss_peak_growth": 64 * 2**20,
                "input_bytes": 80 * 2**20,
                "index_bytes": 12 * 2**20,
                "rows": 10_000_000,
                "impl": "kernel",
            },
        )
    )
    part = {
        "name": "scaling",
        "wall_s": 1.0,
        "load": (1.0, 1.0),
        "returncode": 0,
        "benchmarks": b,
        "skipped": [],
        "failed": [],
    }
    out = tmp_path / "s.md"
    report.write_report([part], str(out), True, 2.0, None, [])
    text = out.read_text()
    assert "| build bloom | 1.00 ms | 10.00 ms |" in text
    assert "| query bitmap — pyarrow.compute scan | 1.00 ms (10.0x) | 10.00 ms (10.0x) |" in text
    assert "| bloom | 10,000,000 | 64 MiB | 80 MiB | 12.0 MiB |" in text
    pytest.importorskip("matplotlib")
    files, note = report.plot([part, _part()], str(tmp_path / "img"), "img")
    assert note is None
    names = sorted(os.path.basename(f) for _, f in files)
    assert names == ["ratios.png", "scaling_build.png", "scaling_query.png"]
    assert all((tmp_path / "img" / n).read_bytes()[:4] == b"\x89PNG" for n in names)


def test_unknown_part_is_refused(capsys):
    with pytest.raises(SystemExit):
        report.main(["nope"])
    assert "unknown part" in capsys.readouterr().err


def test_cli_registers_bench(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["bench", "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "--quick" in out and "--output" in out


def test_bench_names_what_it_lacks_in_one_line(monkeypatch, capsys):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == "pytest_benchmark" else real(n, *a))
    assert cli.main(["bench", "--quick"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1
    assert "pytest-benchmark" in err and 'pip install "paimon-fast[bench]"' in err


def test_bench_finds_the_suite_and_writes_outside_the_checkout(tmp_path, monkeypatch):
    """The suite of the checkout (here: the package's own), and the report by default in a new
    temporary directory; with an installed package and no checkout, one line saying so."""
    bench = pytest.importorskip("paimon_fast.bench")
    assert bench.find_suite() == ROOT
    out = bench.default_output()
    assert out.endswith("benchmarks.md") and not out.startswith(ROOT) and os.path.isdir(os.path.dirname(out))
    os.rmdir(os.path.dirname(out))
    # an installed package: no suite beside it; found from a checkout's directory or below it only
    # (tmp_path itself may lie inside a checkout: CI puts TMPDIR in the clone; so the "no checkout"
    # case is the filesystem root, and "below only" is a checkout made here, looked for from beside it)
    monkeypatch.setattr(bench, "__file__", str(tmp_path / "site-packages" / "paimon_fast" / "bench.py"))
    assert bench.find_suite(os.sep) is None
    assert bench.find_suite(os.path.join(ROOT, "docs")) == ROOT
    made = tmp_path / "made"
    (made / "benchmarks").mkdir(parents=True)
    (made / "docs").mkdir()
    (made / "benchmarks" / "report.py").write_text("")
    (made / "pyproject.toml").write_text('[project]\nname = "paimon-fast"\n')
    assert bench.find_suite(str(made / "docs")) == str(made)
    (tmp_path / "beside").mkdir()
    assert bench.find_suite(str(tmp_path / "beside")) != str(made)
    (made / "pyproject.toml").write_text('[project]\nname = "other"\n')
    assert bench.find_suite(str(made / "docs")) != str(made)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(bench, "find_suite", lambda cwd=None: None)
    with pytest.raises(FileNotFoundError, match="No benchmark suite here"):
        bench.bench_main(type("A", (), {"parts": [], "quick": True, "output": None, "json": None})())


def test_a_part_runs_in_its_own_directory_against_this_package(tmp_path, monkeypatch):
    """run_part: the child runs in the work directory (not the checkout), with this process's
    paimon_fast first on its path and no bytecode written; a failure's cause is printed."""
    import paimon_fast

    calls = []

    class Done:
        returncode, stdout, stderr = 1, "", "E   ModuleNotFoundError: No module named 'pytest_benchmark'\n"

    monkeypatch.setattr(report.subprocess, "run", lambda cmd, cwd, env, **kw: calls.append((cmd, cwd, env)) or Done)
    logged = []
    res = report.run_part("bloom", True, str(tmp_path), logged.append)
    ((cmd, cwd, env),) = calls
    assert cwd == str(tmp_path) and env["PYTHONDONTWRITEBYTECODE"] == "1"
    assert env["PYTHONPATH"].split(os.pathsep)[0] == os.path.dirname(os.path.dirname(paimon_fast.__file__))
    assert res["failed"] and any("No module named 'pytest_benchmark'" in line for line in logged)


def test_speed_probe_and_its_line_in_the_report(tmp_path):
    bench_conftest = _load("_bench_conftest_under_test", "benchmarks/conftest.py")
    assert 1 < bench_conftest.speed_probe_us() < 1e6
    # 10 probes: 8 at 50 us, 2 at 100 us: median 50, p10-p90 50-100, 20% over 1.4x the fastest (50)
    assert (
        report.probe_summary([50.0] * 8 + [100.0] * 2, 50.0)
        == "speed probe 50 us (p10-p90 50-100 us), 20% of samples in a slow spell"
    )
    assert report.probe_summary([], 50.0) == "no probe samples"
    fast, slow = _part(), dict(_part(), name="bsi")
    fast["benchmarks"] = [
        dict(b, extra_info=dict(b.get("extra_info") or {}, speed_probe_us=[60.0, 60.0])) for b in fast["benchmarks"]
    ]
    fast["benchmarks"][0]["extra_info"]["speed_probe_us"] = [50.0, 60.0]
    slow["benchmarks"] = [
        dict(b, extra_info=dict(b.get("extra_info") or {}, speed_probe_us=[110.0, 110.0])) for b in slow["benchmarks"]
    ]
    assert report.probe_samples(fast) == [50.0, 60.0, 60.0, 60.0, 60.0, 60.0]
    out = tmp_path / "p.md"
    report.write_report([fast, slow], str(out), True, 2.0, None, [])
    text = out.read_text()
    assert "its fastest in this report is 50 us" in text
    assert "speed probe 60 us (p10-p90 50-60 us), 0% of samples in a slow spell" in text
    assert "speed probe 110 us (p10-p90 110-110 us), 100% of samples in a slow spell" in text
    assert report.rows_of(fast)[("bloom add", "")]["kernel"]["median"] == 0.010  # the probe is no figure


def test_plots_name_each_operation_once_and_hold_their_labels(tmp_path, monkeypatch):
    plt = pytest.importorskip("matplotlib.pyplot")
    part = _part()
    part["benchmarks"].append(_bench("test_probe_pypaimon", "bloom add", None, None, 0.5, {"impl": "pypaimon"}))
    long = "a very long operation name that a fixed left margin would clip " * 2
    part["benchmarks"].append(_bench("test_x_kernel", long, None, None, 0.001))
    part["benchmarks"].append(_bench("test_x_twin", long, None, None, 0.1))
    axes = []
    subplots = plt.subplots
    monkeypatch.setattr(plt, "subplots", lambda *a, **k: (lambda f_ax: axes.append(f_ax[1]) or f_ax)(subplots(*a, **k)))
    saved = []
    savefig = plt.Figure.savefig
    monkeypatch.setattr(plt.Figure, "savefig", lambda self, p, **k: saved.append(k) or savefig(self, p, **k))
    files, _ = report.plot([part], str(tmp_path / "img"), "img")
    assert [os.path.basename(f) for _, f in files] == ["ratios.png"]
    labels = [t.get_text() for t in axes[0].get_yticklabels()]
    assert sorted(labels) == sorted({"bloom add", long.strip()})  # each operation once, with all its anchors
    assert len(axes[0].patches) == 4  # bloom add: twin, Java, pypaimon; the long one: twin
    assert all(k.get("bbox_inches") == "tight" for k in saved)  # the image grows to hold every label
