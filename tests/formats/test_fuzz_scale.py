"""The short version of the fuzz run at scale (``tests/support/fuzz_scale.py``): every reader
gets a few hundred seeded mutated inputs in its own process under the same
per-input time limit and address-space limit as the slow run (1e5 per reader)."""

import os
import subprocess
import sys

from tests.support.paths import SUPPORT


def test_every_reader_gives_only_index_format_errors(tmp_path):
    import importlib.util

    from tests.support.fuzz_scale import READERS

    # the Avro manifest reader needs fastavro (the tables extra); the tables job runs it
    names = [n for n in sorted(READERS) if n != "avro-manifest" or importlib.util.find_spec("fastavro")]
    out = tmp_path / "failures"
    args = [a for n in names for a in ("--reader", n)]
    proc = subprocess.run(
        [sys.executable, os.path.join(SUPPORT, "fuzz_scale.py"), "--n", "250", "--out", str(out), *args],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = [ln for ln in proc.stdout.splitlines() if "inputs" in ln]
    assert len(lines) == len(names)
    for ln in lines:
        f = ln.split()
        answered, errors, failures = int(f[4]), int(f[6]), int(f[8])
        assert failures == 0 and answered + errors == 250, ln
        assert errors > 0, ln  # the mutations reach the readers' checks
    assert not out.exists()


def test_a_failure_is_reported(tmp_path, monkeypatch):
    """The harness itself can fail: an exercise raising anything but IndexFormatError is counted."""
    from tests.support import fuzz_scale

    monkeypatch.setitem(
        fuzz_scale.READERS, "boom", (lambda: [(None, b"abc")], lambda meta, data: None if data == b"abc" else 1 / 0)
    )
    r = fuzz_scale.run_reader("boom", 20, 0, 5.0, 0, str(tmp_path))
    assert r["failures"] == 20 - r["answered"] and r["failures"] > 0 and "ZeroDivisionError" in r["first_failure"]
    assert any(p.name.startswith("boom-") for p in tmp_path.iterdir())


def _die(args):
    """Stands in for a reader that crashes its process (runs in the harness's child)."""
    import signal

    os.kill(os.getpid(), signal.SIGSEGV)


def test_a_crashed_reader_process_is_reported_not_waited_on(tmp_path, monkeypatch, capsys):
    """A reader whose process dies (pyarrow 14 segfaulted on mutated Parquet files) fails the
    run at once with the readers it may have been; the harness used to wait for it forever."""
    from tests.support import fuzz_scale

    monkeypatch.setattr(fuzz_scale, "_child", _die)
    assert fuzz_scale.main(["--n", "1", "--jobs", "1", "--reader", "bloom", "--out", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "a reader process died" in out and "bloom" in out
