"""The command line's in-process commands and the kernel import guard."""

import importlib
import json

import pytest

import paimon_fast as pf
from paimon_fast import cli
from paimon_fast._kernels import KernelImportError, load


def test_inspect_container(tmp_path, capsys):
    w = pf.fileindex.writer("bloom-filter", "BIGINT", {"items": "100", "fpp": "0.01"})
    w.write_batch([1, 2, 3])
    p = tmp_path / "f.parquet.index"
    p.write_bytes(pf.FileIndexFormat.write({"id": {"bloom-filter": w.finish()}, "e": {"bloom-filter": None}}))
    assert cli.main(["inspect", str(p), "--row-type", "id=BIGINT,e=DECIMAL(10, 2)", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    bloom = out["columns"]["id"][0]
    assert bloom["num_bits"] == w.num_bits and bloom["num_hash_functions"] == w.num_hash_functions
    assert 0 < bloom["bits_set"] <= 3 * w.num_hash_functions
    assert out["columns"]["e"][0]["start"] == -1
    assert cli.main(["inspect", str(p), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["columns"]["id"][0]["index_type"] == "bloom-filter"


def test_missing_kernel_is_a_clear_error(monkeypatch):
    real = importlib.import_module

    def fake(name, *a, **k):
        if name == "paimon_fast._kernels.nosuch":
            raise ImportError("boom")
        return real(name, *a, **k)

    monkeypatch.setattr(importlib, "import_module", fake)
    with pytest.raises(KernelImportError, match="pip install"):
        load("nosuch")


def test_unknown_index_type():
    with pytest.raises(pf.UnknownIndexTypeError, match="no-such-index"):
        pf.fileindex.writer("no-such-index", "INT")
    assert "bloom-filter" in pf.fileindex.index_types()
