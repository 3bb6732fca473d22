"""Local Parquet files kept memory-mapped between reads (paimon_fast.io.parquet.filemap): the
second read of a file's version maps it, the rows are the same as pyarrow's either way, a new
version or a delete drops the mapping, and a file that shrinks while it is mapped and read fails
that read with IndexFormatError instead of killing the process (csrc/pq_read.h, "mapped files
that shrink").  The shrinking runs in a child process: a guard that failed would kill it."""

import os
import textwrap

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimon_fast.io.parquet import filemap, read_files
from paimon_fast.io.stores import Store
from tests.support.blocked_imports import run_python


def _table(n=30000, seed=0):
    rng = np.random.default_rng(seed)
    cat = pa.array(rng.choice(["red", "green", "blue", None], n))
    return pa.table(
        {
            "id": pa.array(np.arange(n, dtype=np.int64) + seed),
            "x": pa.array(rng.random(n)),
            "cat": cat,  # dictionary-encoded, with nulls
            "s": pa.array([f"value-{i:07d}-{seed}" for i in range(n)]),  # plain when dictionaries are off
        }
    )


def _write(path, table, **kw):
    kw.setdefault("data_page_size", 4096)
    pq.write_table(table, path, row_group_size=10000, **kw)


@pytest.fixture
def fresh(monkeypatch):
    """Every file mapped from its second read on (the tests' files are small), none mapped now."""
    monkeypatch.setattr(filemap, "MIN_BYTES", 0)
    monkeypatch.setattr(filemap, "ENABLED", True)
    filemap.forget()
    yield
    filemap.forget()


def _rows(path, positions=None):
    t, _ = read_files([(path, positions)], threads=2)
    return t


def test_the_second_read_maps_the_file_and_every_read_gives_pyarrows_rows(tmp_path, fresh):
    path = str(tmp_path / "a.parquet")
    table = _table()
    _write(path, table)
    picks = np.array([0, 5, 9999, 10000, 17777, 29999], dtype=np.int64)
    assert _rows(path).equals(pq.read_table(path))
    assert filemap.mapped() == {}  # read once: not mapped
    for _ in range(2):
        assert _rows(path).equals(pq.read_table(path))
        assert filemap.mapped() == {path: os.path.getsize(path)}
        assert _rows(path, picks).equals(table.take(picks))


def test_mapping_off_reads_with_pread(tmp_path, fresh, monkeypatch):
    path = str(tmp_path / "a.parquet")
    _write(path, _table())
    monkeypatch.setattr(filemap, "ENABLED", False)
    for _ in range(3):
        assert _rows(path).equals(pq.read_table(path))
    assert filemap.mapped() == {}


def test_a_new_version_of_the_path_drops_the_old_mapping(tmp_path, fresh):
    path = str(tmp_path / "a.parquet")
    _write(path, _table(seed=0))
    _rows(path), _rows(path)
    assert path in filemap.mapped()
    other = str(tmp_path / "b.parquet")
    _write(other, _table(n=20000, seed=5))
    os.replace(other, path)  # another inode, size and mtime at the same path
    got = _rows(path)
    assert got.equals(_table(n=20000, seed=5))  # the new file's rows, not the old mapping's
    assert path not in filemap.mapped()  # the old version's mapping is gone
    assert _rows(path).equals(got) and filemap.mapped() == {path: os.path.getsize(path)}


def test_a_store_delete_drops_the_mapping(tmp_path, fresh):
    path = str(tmp_path / "a.parquet")
    _write(path, _table())
    _rows(path), _rows(path)
    assert path in filemap.mapped()
    assert Store().delete(path)
    assert path not in filemap.mapped()


def test_at_most_max_files_are_mapped_least_recently_used_out(tmp_path, fresh, monkeypatch):
    monkeypatch.setattr(filemap, "MAX_FILES", 2)
    paths = []
    for i in range(3):
        p = str(tmp_path / f"{i}.parquet")
        _write(p, _table(n=5000, seed=i))
        paths.append(p)
    for p in paths:
        _rows(p), _rows(p)
    assert sorted(filemap.mapped()) == paths[1:]
    # a budget of one file: mapping the first again (read twice: it was forgotten) drops the others
    monkeypatch.setattr(filemap, "MAX_BYTES", max(os.path.getsize(p) for p in paths))
    _rows(paths[0]), _rows(paths[0])
    assert sorted(filemap.mapped()) == paths[:1]


def test_an_address_space_limit_caps_what_is_mapped(tmp_path, fresh, monkeypatch):
    """Under RLIMIT_AS (Spark's Python workers with a memory setting) at most a quarter of the
    limit is mapped: mappings would take the room of the read's own arrays."""
    import resource

    a, b = str(tmp_path / "a.parquet"), str(tmp_path / "b.parquet")
    _write(a, _table(seed=1))
    _write(b, _table(seed=2))
    size = max(os.path.getsize(a), os.path.getsize(b))
    real = resource.getrlimit
    monkeypatch.setattr(resource, "getrlimit", lambda r: (4 * size + 4, -1) if r == resource.RLIMIT_AS else real(r))
    assert filemap.budget() == size + 1
    for p in (a, b, a, b):
        assert _rows(p).equals(pq.read_table(p))
    assert len(filemap.mapped()) == 1  # room for one file: mapping the second dropped the first
    monkeypatch.setattr(resource, "getrlimit", lambda r: (size, -1) if r == resource.RLIMIT_AS else real(r))
    filemap.forget()
    _rows(a), _rows(a)
    assert filemap.mapped() == {}  # the file is larger than a quarter of the limit: pread
    fd = os.open(a, os.O_RDONLY)
    try:
        key = (a, os.path.getsize(a), 0, 0, 0)
        assert filemap.mapping(fd, key[1], key) is None  # seen
        assert filemap.mapping(fd, key[1], key) is None  # not mapped, not even for this read
    finally:
        os.close(fd)


_CHILD = textwrap.dedent(
    """
    import faulthandler, os
    faulthandler.enable()  # the handler that was there first: the guard hands on to it
    import numpy as np, pyarrow as pa, pyarrow.parquet as pq
    from paimon_fast.errors import IndexFormatError
    from paimon_fast.io.parquet import filemap, read_files
    from paimon_fast._kernels import pqread
    filemap.MIN_BYTES = 0
    path, phase, dictionary, codec = ARGS
    n = 40000
    rng = np.random.default_rng(1)
    t = pa.table({"cat": pa.array(rng.choice(["a" * 30, "b" * 30, "c" * 30], n)),
                  "s": pa.array([f"v{i:09d}" * 3 for i in range(n)]),
                  "x": pa.array(rng.random(n))})
    pq.write_table(t, path, row_group_size=n, data_page_size=8192, use_dictionary=dictionary, compression=codec)
    size = os.path.getsize(path)
    read_files([(path, None)], threads=2)  # seen once
    pqread._shrink_at(path, size // 3, phase)
    try:
        read_files([(path, None)], threads=2)  # mapped: the file shrinks under the read
        print("NO ERROR")
    except IndexFormatError as e:
        print("ERROR", e)
    pqread._shrink_at(None, 0, -1)
    assert path in filemap.mapped() or os.path.getsize(path) != size
    # the process goes on: a whole file reads as before, twice (the second time mapped)
    other = path + ".2"
    pq.write_table(t, other, row_group_size=10000, data_page_size=8192)
    for _ in range(2):
        got, _ = read_files([(other, None)], threads=2)
        assert got.equals(pq.read_table(other))
    print("ALIVE")
    """
)


def _child(tmp_path, phase, dictionary, codec):
    args = (str(tmp_path / "shrinks.parquet"), phase, dictionary, codec)
    return run_python(f"ARGS = {args!r}\n" + _CHILD, timeout=60)


@pytest.mark.parametrize(
    "phase,dictionary,codec",
    [
        (0, True, "snappy"),  # the page headers walked past the new end
        (1, True, "snappy"),  # pages decoded past it
        (2, False, "none"),  # plain byte arrays copied from the mapping in the last phase
    ],
)
def test_a_file_that_shrinks_while_mapped_and_read_fails_the_read_not_the_process(tmp_path, phase, dictionary, codec):
    r = _child(tmp_path, phase, dictionary, codec)
    assert r.returncode == 0, f"child died ({r.returncode}): {r.stderr[-2000:]}"
    lines = r.stdout.split("\n")
    assert lines[-2] == "ALIVE"
    assert lines[0].startswith("ERROR") and "a mapped page past its new end" in lines[0], r.stdout


def test_a_bus_error_outside_a_read_still_reaches_the_handler_before(tmp_path):
    """The guard catches faults of the reader's own items only: a mapped page touched past the end
    anywhere else goes to the handler that was there before (here faulthandler's, which reports it)."""
    code = textwrap.dedent(
        """
        import faulthandler, os
        faulthandler.enable()
        import pyarrow as pa, pyarrow.parquet as pq
        from paimon_fast.io.parquet import filemap, read_files
        from paimon_fast._kernels import pqread
        filemap.MIN_BYTES = 0
        path = PATH
        pq.write_table(pa.table({"x": list(range(100000))}), path)
        read_files([(path, None)]); read_files([(path, None)])  # mapped: the guard is installed
        m = pqread.FileMap(os.open(path, os.O_RDONLY), os.path.getsize(path))
        os.truncate(path, 0)
        print("touching", flush=True)
        print(bytes(memoryview(m)[-10:]))
        """
    )
    r = run_python(f"PATH = {str(tmp_path / 'f.parquet')!r}\n" + code, timeout=120)
    assert "touching" in r.stdout
    assert r.returncode != 0 and "Bus error" in r.stderr, (r.returncode, r.stderr[-2000:])
