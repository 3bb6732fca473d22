"""Rows of a Parquet file at known positions: the native reader against the row-group read.

    pytest benchmarks/bench_parquet_rows.py --benchmark-only --benchmark-columns=min,median,rounds

One file of ``PF_ROWS_N`` rows (default 1e6) in one row group, written by pyarrow
with a page index: ``id`` BIGINT (all distinct: its dictionary overflows to plain
pages), ``s`` a STRING of 100,000 distinct values, ``x`` DOUBLE.  Two page
layouts: pyarrow's default 1 MB pages (``pages1m``) and 64 KB pages (``pages64k``,
about what parquet-mr / parquet-rs write with their 20,000-row page limit), and the 64 KB pages
with ``id`` DELTA_BINARY_PACKED and ``s`` DELTA_LENGTH_BYTE_ARRAY (``delta64k``, as ``optimize``
writes columns without a dictionary).
Positions: 1, 10, 1,000, 100,000 rows drawn uniformly (sorted).

* ``kernel``: :func:`paimon_fast.io.parquet.rows.read_rows` (the native reader, every thread);
* ``kernel_1t``: the same on one thread;
* ``rowgroup``: pyarrow's ``read_row_group`` of the row group holding the rows, then ``take``.

``test_snappy_page`` (group ``snappy_page[...]``) times one 64 KiB Snappy page body of PLAIN strings or
int64s: the kernel, its twin and pyarrow's bundled Snappy.

``test_page_decoder`` (group ``page_decoder[...]``) compares who decodes: ``kernel`` (the
native reader, only the wanted values), ``twin`` (its pure-Python twin, up to 10 rows) and
``pyarrow`` (``page_decoder=None``: the row groups holding the rows, whole).

Footers are parsed once per file and cached (as they are for a table's files
between queries); ``cold`` variants clear the cache every round.
"""

import os
import tempfile

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimon_fast.io.parquet import rows as pr

N = int(float(os.environ.get("PF_ROWS_N", "1e6")))
LAYOUTS = {"pages1m": 1 << 20, "pages64k": 64 << 10, "delta64k": 64 << 10}
# delta64k: the 64 KiB pages with ``id`` DELTA_BINARY_PACKED and ``s`` DELTA_LENGTH_BYTE_ARRAY (no
# dictionaries), as ``optimize`` writes such columns
LAYOUT_OPTS = {
    "delta64k": {
        "use_dictionary": False,
        "column_encoding": {"id": "DELTA_BINARY_PACKED", "s": "DELTA_LENGTH_BYTE_ARRAY"},
    }
}


@pytest.fixture(scope="module")
def files():
    root = os.path.join(tempfile.gettempdir(), f"paimon-fast-bench-rows-{N}")
    os.makedirs(root, exist_ok=True)
    out = {}
    rng = np.random.default_rng(11)
    t = None
    for name, page in LAYOUTS.items():
        path = os.path.join(root, f"{name}.parquet")
        if not os.path.exists(path):
            if t is None:
                t = pa.table(
                    {
                        "id": np.arange(N, dtype=np.int64),
                        "s": pa.array(np.char.add("value-", rng.integers(0, 100_000, N).astype(str))),
                        "x": rng.random(N),
                    }
                )
            pq.write_table(
                t,
                path + ".tmp",
                row_group_size=N,
                data_page_size=page,
                write_page_index=True,
                **LAYOUT_OPTS.get(name, {}),
            )
            os.replace(path + ".tmp", path)
        out[name] = path
    return out


def _positions(k):
    return np.sort(np.random.default_rng(k).choice(N, k, replace=False)).astype(np.int64)


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("k", [1, 10, 1000, 100_000])
@pytest.mark.parametrize("impl", ["kernel", "kernel_1t", "rowgroup", "kernel_cold"])
def test_read_rows(benchmark, files, layout, k, impl):
    path = files[layout]
    pos = _positions(k)
    benchmark.group = f"read_rows[{layout}-{k}]"
    benchmark.extra_info["impl"] = impl
    if impl == "rowgroup":

        def run():
            return pq.ParquetFile(path).read_row_group(0, use_threads=False).take(pa.array(pos))
    elif impl == "kernel_cold":

        def run():
            pr.clear_cache()
            return pr.read_rows(path, pos)
    else:
        threads = 1 if impl == "kernel_1t" else None

        def run():
            return pr.read_rows(path, pos, threads=threads)

    got = benchmark.pedantic(run, rounds=7, iterations=1, warmup_rounds=1)
    assert got.equals(pq.read_table(path).take(pa.array(pos)))
    st = pr.PageReadStats()
    pr.read_rows(path, pos, stats=st, page_decoder=None if impl == "rowgroup" else "kernel")
    benchmark.extra_info.update(
        rows_decoded=st.rows_decoded,
        pages_read=st.pages_read,
        pages_total=st.pages_total,
        bytes_read=st.bytes_read,
        bytes_total=st.bytes_total,
        whole=st.columns_whole,
        load=os.getloadavg()[0],
    )


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("k", [1, 10, 1000, 100_000])
@pytest.mark.parametrize("impl", ["kernel", "twin", "pyarrow"])
def test_page_decoder(benchmark, files, layout, k, impl):
    """Who decodes: the native reader (only the wanted values), its pure-Python twin, or
    pyarrow's row-group read."""
    if impl == "twin" and k > 10:
        pytest.skip("the twin walks every value in Python: minutes per round at this size")
    path = files[layout]
    pos = _positions(k)
    benchmark.group = f"page_decoder[{layout}-{k}]"
    benchmark.extra_info["impl"] = impl
    dec = None if impl == "pyarrow" else impl

    def run():
        return pr.read_rows(path, pos, page_decoder=dec)

    got = benchmark.pedantic(run, rounds=3 if impl == "twin" else 7, iterations=1, warmup_rounds=1)
    assert got.equals(pq.read_table(path).take(pa.array(pos)))


def _value_page(kind: str, size: int) -> bytes:
    """A PLAIN page body of ``size`` bytes as pyarrow writes a high-cardinality column: 11-byte
    keys with their 4-byte lengths (``strings``), increasing int64s (``ints``), or the doubles of a
    column clustered by them (``doubles``: sorted, in a narrow range, so neighbours share their high
    4 bytes and Snappy writes 4-byte copies from 8 bytes back between short literals)."""
    rng = np.random.default_rng(7)
    if kind == "doubles":
        n = size // 8 + 1  # about 1e-4 apart: 200,000 rows of a file spanning 20 (bench_optimize's x)
        return np.sort(rng.random(n) * n * 1e-4 + 780).astype("<f8").tobytes()[:size]
    if kind == "strings":
        keys = [f"k{(int(i) * 2654435761) % (1 << 32):010d}".encode() for i in rng.integers(0, 1 << 40, size // 15 + 1)]
        return b"".join(len(k).to_bytes(4, "little") + k for k in keys)[:size]
    return np.cumsum(rng.integers(0, 1000, size // 8 + 1)).astype("<i8").tobytes()[:size]


@pytest.mark.parametrize("kind", ["strings", "ints", "doubles"])
@pytest.mark.parametrize("impl", ["kernel", "twin", "pyarrow"])
def test_snappy_page(benchmark, kind, impl):
    """A Snappy page body decompressed whole (the reader's page-level cost on such columns):
    ``kernel`` (csrc/pq_codec.h), ``twin`` (its pure-Python twin), ``pyarrow`` (the Snappy library
    pyarrow bundles).  64 KiB of output, so the twin's rounds take seconds, not minutes."""
    from paimon_fast.io.parquet import native

    raw = _value_page(kind, 64 << 10)
    body = pa.Codec("snappy").compress(raw, asbytes=True)
    benchmark.group = f"snappy_page[{kind}]"
    benchmark.extra_info["impl"] = impl
    benchmark.extra_info["ratio"] = round(len(raw) / len(body), 2)
    if impl == "pyarrow":
        codec = pa.Codec("snappy")

        def run():
            return codec.decompress(body, decompressed_size=len(raw), asbytes=True)

    else:
        K = native.kernels(twin=impl == "twin")

        def run():
            return K.decompress(1, body, len(raw))

    got = benchmark.pedantic(run, rounds=3 if impl == "twin" else 200, iterations=1, warmup_rounds=1)
    assert bytes(got) == raw
