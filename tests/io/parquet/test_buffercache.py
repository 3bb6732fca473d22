"""The native reader's cache of freed large buffers (paimon_fast.io.parquet.buffercache,
csrc/pq_read.h "large buffers, kept between uses"): a read's freed buffers and its outputs'
bytes, once dropped, are kept up to the budget and reused by the next reads, which still give
pyarrow's rows; a smaller cap, a cap of 0, the decay and release() each free what they should."""

import os
import time
import warnings

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimon_fast.io.parquet import buffercache, read_files
from paimon_fast.io.parquet.arrowmap import _kernel


def _file(path, seed, n=60000):
    rng = np.random.default_rng(seed)
    t = pa.table(
        {
            "id": pa.array(np.arange(n, dtype=np.int64) * (seed + 1)),
            # plain byte arrays (no dictionary): the pages' values and a ~2.5 MB output buffer
            "s": pa.array([f"{seed}-{v:020d}-{i}" for i, v in enumerate(rng.integers(0, 10**18, n))]),
        }
    )
    pq.write_table(t, path, use_dictionary=False, data_page_size=64 << 10, row_group_size=n)
    return t


@pytest.fixture
def cache(monkeypatch):
    """Nothing kept when the test starts; the default budget and decay afterwards."""
    monkeypatch.delenv("PAIMON_FAST_READER_CACHE_MB", raising=False)
    buffercache.release()
    yield
    buffercache.release()


def _read(path, positions=None):
    t, _ = read_files([(path, positions)])
    return t


def test_dropped_buffers_are_kept_and_reused_with_the_same_rows(tmp_path, cache):
    a, b = str(tmp_path / "a.parquet"), str(tmp_path / "b.parquet")
    ta, tb = _file(a, 1), _file(b, 2)
    got = _read(a)
    assert got.equals(ta)
    del got  # its string bytes go back to the reader
    kept, n = buffercache.held()
    assert n > 0 and 2 << 20 <= kept <= buffercache.budget()
    # the next reads take the kept (dirty) buffers: other files' rows, whole and at positions
    assert _read(b).equals(tb)
    pos = np.arange(3, 60000, 7, dtype=np.int64)
    assert _read(a, pos).equals(ta.take(pa.array(pos)))
    assert _read(b, pos).equals(tb.take(pa.array(pos)))


def test_page_bodies_taken_whole_go_back_to_the_cache(tmp_path, cache):
    """A PLAIN byte-array page read whole keeps its decompressed body until phase C copies the
    values out; that body is a buffer of the cache, so when the read is done it is kept for the
    next read, even while the answer is held (it once came from malloc and was freed: every such
    page of every read faulted its body in afresh)."""
    a = str(tmp_path / "a.parquet")
    ta = _file(a, 9)
    # pages end once past 64 KiB: about this many, each body a buffer of the cache's classes
    pages = pq.ParquetFile(a).metadata.row_group(0).column(1).total_uncompressed_size // (64 << 10)
    assert pages >= 20
    got = _read(a)
    assert got.equals(ta)
    assert buffercache.held()[1] >= pages // 2  # (not every one: the threads keep their scratch)
    del got


def test_cap_zero_keeps_nothing(tmp_path, cache, monkeypatch):
    a = str(tmp_path / "a.parquet")
    ta = _file(a, 3)
    monkeypatch.setenv("PAIMON_FAST_READER_CACHE_MB", "0")
    assert buffercache.budget() == 0
    got = _read(a)
    assert got.equals(ta)
    del got
    assert buffercache.held() == (0, 0)


def test_a_smaller_cap_frees_what_is_kept_beyond_it(tmp_path, cache, monkeypatch):
    a = str(tmp_path / "a.parquet")
    _file(a, 4)
    del_me = _read(a)
    del del_me
    assert buffercache.held()[0] > 1 << 20
    monkeypatch.setenv("PAIMON_FAST_READER_CACHE_MB", "1")
    buffercache.apply(_kernel())  # (what each read does first)
    assert buffercache.held()[0] <= 1 << 20
    _read(a).num_rows
    assert buffercache.held()[0] <= 1 << 20


def test_buffers_unused_past_the_decay_are_freed(tmp_path, cache, monkeypatch):
    a, small = str(tmp_path / "a.parquet"), str(tmp_path / "small.parquet")
    _file(a, 5)
    _file(small, 6, n=5000)
    got = _read(a)
    del got
    before = buffercache.held()[0]
    assert before >= 1 << 20
    monkeypatch.setattr(buffercache, "DECAY_SECONDS", 0.2)
    time.sleep(1.1)  # (the reader looks for old buffers at most once a second)
    assert _read(small).num_rows == 5000  # its first large buffer sweeps the old ones out
    assert buffercache.held()[0] < before // 2


def test_release_frees_everything(tmp_path, cache):
    a = str(tmp_path / "a.parquet")
    _file(a, 7)
    got = _read(a)
    del got
    assert buffercache.held()[1] > 0
    buffercache.release()
    assert buffercache.held() == (0, 0)


def test_budget_bounds(monkeypatch):
    import resource

    monkeypatch.delenv("PAIMON_FAST_READER_CACHE_MB", raising=False)
    assert 0 < buffercache.MAX_BYTES <= 512 << 20
    assert buffercache.budget() <= buffercache.MAX_BYTES
    monkeypatch.setenv("PAIMON_FAST_READER_CACHE_MB", "64")
    assert buffercache.budget() == 64 << 20
    monkeypatch.setattr(resource, "getrlimit", lambda which: (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    monkeypatch.setenv("PAIMON_FAST_READER_CACHE_MB", "not a number")
    assert buffercache.budget() == buffercache.MAX_BYTES  # (a malformed value: the default)
    monkeypatch.delenv("PAIMON_FAST_READER_CACHE_MB")
    assert buffercache.budget() == buffercache.MAX_BYTES
    # under an address-space limit (Spark's Python workers): at most an eighth of it
    monkeypatch.setattr(resource, "getrlimit", lambda which: (256 << 20, resource.RLIM_INFINITY))
    assert buffercache.budget() == 32 << 20


def test_twin_has_the_calls(cache):
    from paimon_fast._kernels import load

    twin = load("pqread", twin=True)
    twin.set_buffer_cache(1 << 20, 1.0)
    assert twin.buffer_cache() == (0, 0)
    for impl in (twin, _kernel()):
        for bad in (-1.0, float("nan")):
            with pytest.raises(ValueError):
                impl.set_buffer_cache(1, bad)
    _kernel().set_buffer_cache(1 << 20, 1e300)  # (clamped, not an overflow)
    buffercache._applied = None  # (the next read sets the bounds again)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork: POSIX only")
def test_a_forked_child_reads_with_the_cache_it_inherits(tmp_path, cache):
    a = str(tmp_path / "a.parquet")
    ta = _file(a, 8)
    got = _read(a)
    del got
    assert buffercache.held()[1] > 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # (fork of a process with threads)
        pid = os.fork()
    if pid == 0:  # pragma: no cover - the child's result is its exit status
        ok = False
        try:
            ok = _read(a).equals(ta) and buffercache.held()[1] > 0
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0
