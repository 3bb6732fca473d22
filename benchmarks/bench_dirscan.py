"""The listing of a dataset's directory (every read takes one: its files' identities), kernel
(``readdir`` and ``fstatat`` in C) vs its pure-Python twin (``os.scandir``), in one run.

Data: a directory of PF_BENCH_FILES files (default 51, bench_peers' dataset) and 3 directories.

    PYTHONPATH=$PWD python -m pytest benchmarks/bench_dirscan.py --benchmark-only \
        --benchmark-columns=min,median,max,rounds
"""

import os

import pytest

from paimon_fast._kernels import load
from paimon_fast.reference import dirscan as twin
from paimon_fast.tables.layout import is_data_file_name

k = load("dirscan")
N = int(os.environ.get("PF_BENCH_FILES", "51"))


@pytest.fixture(scope="module")
def directory(tmp_path_factory):
    d = tmp_path_factory.mktemp("listing")
    for i in range(N):
        (d / f"part-{i:05d}.parquet").write_bytes(b"PAR1")
    for name in ("_commits", "_file_index", "_optimize"):
        (d / name).mkdir()
    (d / "_paimon_fast_catalog.json").write_bytes(b"{}")
    return str(d)


@pytest.mark.benchmark(group="scan")
def test_scan_kernel(benchmark, directory):
    dirs, files = benchmark(k.scan, directory, is_data_file_name)
    assert len(files) == N and len(dirs) == 3


@pytest.mark.benchmark(group="scan")
def test_scan_twin(benchmark, directory):
    dirs, files = benchmark(twin.scan, directory, is_data_file_name)
    assert len(files) == N and len(dirs) == 3
