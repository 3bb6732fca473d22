"""Table index benchmarks: kernels vs their plain-Python twins (and pypaimon where
it has the operation), in one run.

    PYTHONPATH=. python -m pytest benchmarks/bench_tableindex.py --benchmark-only \
        --benchmark-columns=min,median,max,rounds --benchmark-sort=name -p no:cacheprovider

Sizes follow issue 9: 1e6 random positions of 1e7 (build / serialize /
deserialize), is_deleted_batch of 1e6 positions, filtering a 1e6-row Arrow
batch with 10% deleted, hashing 1e6 composite (INT, STRING) keys.  Slow twins
run once (``pedantic``) and, for per-row Python twins, on a smaller slice
(the ratio is then per row).
"""

import numpy as np
import pyarrow as pa
import pytest

from paimon_fast import tableindex as ti
from paimon_fast.reference import tableindex as ref

N = 1_000_000
RANGE = 10_000_000


@pytest.fixture(scope="module")
def positions():
    return np.random.default_rng(42).integers(0, RANGE, N)


@pytest.fixture(scope="module")
def dv(positions):
    return ti.DeletionVector.from_positions(positions)


@pytest.fixture(scope="module")
def dv_bin(dv):
    return dv.serialize()


# ---------------------------------------------------------------- build / serialize / deserialize


@pytest.mark.benchmark(group="dv-build-1e6-of-1e7")
def test_build_kernel(benchmark, positions):
    out = benchmark(ti.DeletionVector.from_positions, positions)
    assert out.cardinality == len(np.unique(positions))


@pytest.mark.benchmark(group="dv-build-1e6-of-1e7")
def test_build_twin(benchmark, positions):
    benchmark.pedantic(ref.dv_build, args=(positions,), rounds=3, iterations=1)


@pytest.mark.benchmark(group="dv-serialize-1e6-of-1e7")
def test_serialize_kernel(benchmark, dv, dv_bin):
    assert benchmark(dv.serialize) == dv_bin


@pytest.mark.benchmark(group="dv-serialize-1e6-of-1e7")
def test_serialize_twin(benchmark, dv, dv_bin):
    s = dv.positions()
    assert benchmark.pedantic(ref.dv_serialize, args=(s, False), rounds=1, iterations=1) == dv_bin


@pytest.mark.benchmark(group="dv64-serialize-1e6-of-1e7")
def test_serialize64_kernel(benchmark, positions):
    d = ti.DeletionVector.from_positions(positions, bitmap64=True)
    benchmark(d.serialize)


@pytest.mark.benchmark(group="dv-deserialize-1e6-of-1e7")
def test_deserialize_kernel(benchmark, dv, dv_bin):
    assert benchmark(ti.DeletionVector.deserialize, dv_bin).cardinality == dv.cardinality


@pytest.mark.benchmark(group="dv-deserialize-1e6-of-1e7")
def test_deserialize_twin(benchmark, dv, dv_bin):
    _, vals = benchmark.pedantic(ref.dv_deserialize, args=(dv_bin,), rounds=1, iterations=1)
    assert len(vals) == dv.cardinality


# pypaimon 2.1 (pure Python DV over pyroaring) on the same data, for the comparison
def _pypaimon():
    try:
        from pypaimon.deletionvectors.bitmap_deletion_vector import BitmapDeletionVector

        return BitmapDeletionVector
    except Exception:  # pragma: no cover
        pytest.skip("pypaimon not installed")


@pytest.mark.benchmark(group="dv-build-1e6-of-1e7")
def test_build_pypaimon(benchmark, positions):
    cls = _pypaimon()
    plist = positions.tolist()

    def build():
        d = cls()
        for p in plist:
            d.delete(p)
        return d

    benchmark.pedantic(build, rounds=1, iterations=1)


@pytest.mark.benchmark(group="dv-serialize-1e6-of-1e7")
def test_serialize_pypaimon(benchmark, dv_bin):
    cls = _pypaimon()
    d = cls.deserialize_from_bytes(dv_bin[4:])
    benchmark(d.serialize)


@pytest.mark.benchmark(group="dv-deserialize-1e6-of-1e7")
def test_deserialize_pypaimon(benchmark, dv_bin):
    cls = _pypaimon()
    body = dv_bin[4:]
    benchmark(cls.deserialize_from_bytes, body)


# ---------------------------------------------------------------- probing and filtering


@pytest.fixture(scope="module")
def probes():
    return np.random.default_rng(7).integers(0, RANGE, N)


@pytest.mark.benchmark(group="dv-is-deleted-1e6")
def test_is_deleted_kernel(benchmark, dv, probes):
    benchmark(dv.is_deleted_batch, probes)


@pytest.mark.benchmark(group="dv-is-deleted-1e6")
def test_is_deleted_twin(benchmark, dv, probes):
    s = dv.positions()
    benchmark.pedantic(ref.is_deleted_batch, args=(s, probes), rounds=3, iterations=1)


@pytest.fixture(scope="module")
def batch_and_dv():
    rng = np.random.default_rng(3)
    batch = pa.record_batch(
        {"id": np.arange(N, dtype=np.int64), "v": rng.random(N), "k": rng.integers(0, 1000, N).astype(np.int32)}
    )
    d = ti.DeletionVector.from_positions(rng.choice(N, N // 10, replace=False))
    return batch, d


@pytest.mark.benchmark(group="dv-filter-batch-1e6-10pct")
def test_filter_kernel(benchmark, batch_and_dv):
    batch, d = batch_and_dv
    out = benchmark(ti.apply_deletion_vector, d, batch, 0)
    assert out.num_rows == N - N // 10


@pytest.mark.benchmark(group="dv-filter-batch-1e6-10pct")
def test_filter_twin(benchmark, batch_and_dv):
    batch, d = batch_and_dv
    s = d.positions()
    benchmark.pedantic(ref.filter_batch, args=(s, batch, 0), rounds=3, iterations=1)


@pytest.mark.benchmark(group="dv-keep-mask-1e6-10pct")
def test_keep_mask_kernel(benchmark, batch_and_dv):
    _, d = batch_and_dv
    benchmark(d.keep_mask, 0, N)


@pytest.mark.benchmark(group="dv-keep-mask-1e6-10pct")
def test_keep_mask_twin(benchmark, batch_and_dv):
    _, d = batch_and_dv
    benchmark.pedantic(ref.keep_mask, args=(d.positions(), 0, N), rounds=3, iterations=1)


# ---------------------------------------------------------------- hashing

TWIN_ROWS = 20_000


@pytest.fixture(scope="module")
def keys():
    rng = np.random.default_rng(11)
    ints = rng.integers(-(2**31), 2**31, N).astype(np.int32)
    strs = pa.array([f"user-{i:x}" if i % 3 else f"u{i % 97}" for i in range(N)])
    return pa.table({"id": ints, "name": strs})


@pytest.mark.benchmark(group="hash-int-string-1e6")
def test_hash_1e6_kernel(benchmark, keys):
    benchmark(ti.binary_row_hash, keys, ["INT", "STRING"])


@pytest.mark.benchmark(group="hash-int-string-20k")
def test_hash_20k_kernel(benchmark, keys):
    small = keys.slice(0, TWIN_ROWS)
    want = benchmark(ti.binary_row_hash, small, ["INT", "STRING"])
    rows = list(zip(small.column(0).to_pylist()[:100], small.column(1).to_pylist()[:100]))
    assert want[:100].tolist() == ref.binary_row_hash(rows, ["INT", "STRING"]).tolist()


@pytest.mark.benchmark(group="hash-int-string-20k")
def test_hash_20k_twin(benchmark, keys):
    small = keys.slice(0, TWIN_ROWS)
    rows = list(zip(small.column(0).to_pylist(), small.column(1).to_pylist()))
    benchmark.pedantic(ref.binary_row_hash, args=(rows, ["INT", "STRING"]), rounds=1, iterations=1)


@pytest.mark.benchmark(group="hash-set-order-1e6")
def test_int_set_order_1e6_kernel(benchmark, keys):
    h = ti.binary_row_hash(keys, ["INT", "STRING"])
    benchmark(ti.write_hash_index, h)


@pytest.mark.benchmark(group="hash-set-order-1e5")
def test_int_set_order_1e5_kernel(benchmark, keys):
    h = ti.binary_row_hash(keys.slice(0, 100_000), ["INT", "STRING"])
    benchmark(ti.int_hash_set_order, h)


@pytest.mark.benchmark(group="hash-set-order-1e5")
def test_int_set_order_1e5_twin(benchmark, keys):
    h = ti.binary_row_hash(keys.slice(0, 100_000), ["INT", "STRING"]).tolist()
    benchmark.pedantic(ref.int_set_order, args=(h,), rounds=1, iterations=1)
