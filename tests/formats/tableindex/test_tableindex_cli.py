"""``paimon-fast inspect`` on deletion files, Puffin files, hash index files and index manifests."""

import json
import os
import shutil

import numpy as np
import pytest

from paimon_fast import cli
from paimon_fast import tableindex as ti
from tests.support.paths import DATA
from tests.support.vectorlib import load_bin


def _inspect(path, capsys):
    assert cli.main(["inspect", str(path), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_inspect_deletion_file(tmp_path, capsys):
    p = tmp_path / "index-abc-0"
    p.write_bytes(load_bin("deletion_vector_64", "dv_file_mixed_32_and_64_synthetic.index"))
    out = _inspect(p, capsys)
    assert [v["cardinality"] for v in out["vectors"]] == [6, 4, 1, 101]
    assert [v["offset"] for v in out["vectors"]] == [1, 49, 129, 159]
    assert [v["length"] for v in out["vectors"]] == [40, 80, 22, 64]
    assert out["vectors"][1]["kind"].startswith("64-bit") and out["vectors"][0]["kind"].startswith("32-bit")
    real = os.path.join(DATA, "paimon_append_dv", "index-d9a8c306-4466-4c01-b7f0-7aaefb2c1767-0")
    assert _inspect(real, capsys)["vectors"][0]["cardinality"] == 334


def test_inspect_puffin(tmp_path, capsys):
    p = tmp_path / "dv.puffin"
    ti.write_puffin([("a.parquet", ti.DeletionVector.from_positions([1, 2**33], bitmap64=True))], p)
    out = _inspect(p, capsys)
    assert out["vectors"][0]["referenced_data_file"] == "a.parquet"
    assert out["vectors"][0]["first_positions"] == [1, 2**33]


def test_inspect_hash_index(tmp_path, capsys):
    p = tmp_path / "index-0f-0"
    p.write_bytes(load_bin("hash_index", "hash_pk_int_1000.index"))
    out = _inspect(p, capsys)
    assert out["count"] == 1000 and out["distinct"] == 1000
    assert out["first_hashes"] == ti.read_hash_index(p.read_bytes())[:8].tolist()
    p2 = tmp_path / "index-0f-1"
    p2.write_bytes(ti.update_hash_index(p.read_bytes(), np.arange(5, 50)))
    assert _inspect(p2, capsys)["count"] == 1045


def test_inspect_index_manifest(tmp_path, capsys):
    pytest.importorskip("fastavro", reason="fastavro (the tables extra, via pypaimon) reads Avro index manifests")
    src = os.path.join(DATA, "paimon_append_dv", "index-manifest-5d4d56d3-4357-4240-89da-d517a02d59fe-0")
    p = tmp_path / os.path.basename(src)
    shutil.copy(src, p)
    out = _inspect(p, capsys)
    (e,) = out["entries"]
    assert e["index_type"] == "DELETION_VECTORS" and e["bucket"] == 0
    assert e["deletion_vectors"][0]["offset"] == 1 and e["deletion_vectors"][0]["length"] == 688
