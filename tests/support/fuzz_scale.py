"""Seeded fuzzing of every reader at scale, with a time and memory limit per input.

    python tests/support/fuzz_scale.py            # 100,000 mutated inputs per reader (the slow run)
    python tests/support/fuzz_scale.py --n 300 --reader bloom --reader bsi

Each reader starts from real vectors (``tests/data``, written by Java), mutates
them (byte flips, random bytes, insertions, deletions, truncations, splices of
two seeds) and reads every input the way a user does.  An input passes when the
reader answers or raises ``IndexFormatError``; any other exception, more than
``--seconds`` (default 5) for one input, or more than ``--memory-mb`` (default
2048) of address space fails the run.  Each reader runs in its own process
(``RLIMIT_AS`` caps it), failing inputs are written to ``--out`` (hex, with the
traceback), and the run prints the count of answers / errors per reader and
exits non-zero on a failure.  ``tests/formats/test_fuzz_scale.py`` runs a short version
of this in the test suite.
"""

from __future__ import annotations

import argparse
import base64
import os
import signal
import sys
import tarfile
import traceback
import zlib

# run as a script: the checkout on the path (tests.support, and the package where it is not installed)
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from tests.support.paths import DATA  # noqa: E402


class InputTimeout(Exception):
    pass


# ---------------------------------------------------------------- readers


def _file_index(itype, fmt, names=None, limit=12):
    from tests.support.vectorlib import case_names, load_bin, load_case

    seeds = []
    for name in names or case_names(fmt):
        c = load_case(fmt, name)
        if not c.get("file"):
            continue
        data = load_bin(fmt, c["file"])
        if len(data) <= 64 * 1024:
            seeds.append(((c["type"], c.get("options") or {}, c.get("values") or []), data))
        if len(seeds) >= limit:
            break
    return seeds


def _exercise_file_index(itype):
    def run(meta, data):
        import paimon_fast as pf
        from paimon_fast.core.types import DataType
        from tests.support.vectorlib import decode_literal

        dtype, options, values = meta
        r = pf.fileindex.reader(itype, dtype, data, options)
        vals = [v for v in values if v is not None][:3]
        dt = DataType.parse(dtype)
        lits = [decode_literal(v, dt) for v in vals]
        f = pf.field("x")
        preds = [f.is_null(), f.is_not_null()]
        for v in lits[:2]:
            preds += [f.equal(v), f.not_equal(v), f < v, f >= v, f.between(v, v)]
        if lits:
            preds += [f.isin(lits), f.notin(lits)]
        for p in preds:
            res = r.evaluate(p)
            if hasattr(res, "bitmap"):
                res.bitmap
        if itype == "range-bitmap":
            r.top_k(3)
            r.bottom_k(2, nulls_first=True, strict=False)
        r.describe()

    return run


def _container():
    from tests.support.vectorlib import load_bin, load_case

    c = load_case("file_index_container", "container_basic")
    rt = {f["name"]: f["type"] for f in c["row_type"]}
    return [(rt, load_bin("file_index_container", c["file"]))]


def _exercise_container(rt, data):
    import paimon_fast as pf

    f = pf.FileIndexFormat.open(data, rt)
    for p in (
        pf.field("id") == 5,
        pf.field("name").isin(["sftk", "x"]),
        (pf.field("id") == 1) | (pf.field("name") == "bc"),
    ):
        res = f.evaluate(p)
        if hasattr(res, "bitmap"):
            res.bitmap
    f.describe()


def _global():
    from tests.support.vectorlib import case_names, load_bin, load_case

    out = []
    for name in case_names("global_bitmap"):
        c = load_case("global_bitmap", name)
        if not c.get("file") or "lzo" in name:
            continue
        data = load_bin("global_bitmap", c["file"])
        if len(data) <= 64 * 1024:
            out.append((c, data))
        if len(out) >= 12:
            break
    return out


def _exercise_global(c, data):
    import paimon_fast as pf
    from paimon_fast import globalindex as gi
    from tests.support.vectorlib import decode_literal

    r = gi.reader(c["type"], data, {}, None)
    vals = [v for v in c["values"] if v is not None][:3]
    lits = [decode_literal(v, r.dtype) for v in vals]
    f = pf.field("x")
    preds = [f.is_null(), f.is_not_null()] + ([f.isin(lits), f.notin(lits)] if lits else [])
    for v in lits[:2]:
        preds += [f.equal(v), f.not_equal(v), f < v, f >= v]
    for p in preds:
        r.evaluate(p)


def _btree():
    from tests.support.vectorlib import case_names, load_bin, load_case

    out = []
    for name in case_names("global_btree"):
        c = load_case("global_btree", name)
        if not c.get("file") or "lzo" in name:
            continue
        data = load_bin("global_btree", c["file"])
        if len(data) <= 64 * 1024:
            out.append((c, data))
    return out[::4]


def recrc_btree(data: bytes) -> bytes:
    """``data`` with the CRC of every block and of the null bitmap made right again, as far as
    the footer and the index block can be parsed: a mutation inside a block then reaches the
    block parsers instead of stopping at the CRC check."""
    import struct

    from paimon_fast.globalindex import sst
    from paimon_fast.globalindex.sst import kernels

    b = bytearray(data)
    n = len(b)
    if n < 52:
        return data
    _, _, _, io, isz, no, ns, _, _ = struct.unpack_from("<qiqqiqiii", b, n - 52)

    def fix(o, ln):
        if 0 <= o and 0 <= ln and o + ln + 5 <= n - 52:
            t = b[o + ln] if b[o + ln] < 4 else 0
            b[o + ln : o + ln + 5] = sst.trailer(bytes(b[o : o + ln]), t)
            return True
        return False

    if 0 < ns and 0 <= no and no + ns + 4 <= n - 52:
        b[no + ns : no + ns + 4] = struct.pack("<I", sst._crc32(bytes(b[no : no + ns])))
    if fix(io, isz):
        try:
            raw, _ = sst.decode(bytes(b[io : io + isz + 5]), isz, io)
            import numpy as np

            offs, sizes = kernels.handles(np.frombuffer(raw, np.uint8))
            for o, ln in zip(offs.tolist(), sizes.tolist()):
                fix(o, ln)
        except Exception:  # noqa: BLE001 - an index block that does not parse: leave the rest
            pass
    return bytes(b)


def _exercise_btree(c, data):
    import paimon_fast as pf
    from paimon_fast import globalindex as gi
    from tests.support.vectorlib import decode_literal

    for d in (data, recrc_btree(data)):
        try:
            r = gi.reader(c["type"], d, {}, None, index_type="btree")
            vals = [v for v in c["values"] if v is not None][:3]
            lits = [decode_literal(v, r.dtype) for v in vals]
            f = pf.field("x")
            preds = [f.is_null(), f.is_not_null()] + ([f.isin(lits), f.notin(lits)] if lits else [])
            for v in lits[:2]:
                preds += [f.equal(v), f.not_equal(v), f < v, f >= v, f.between(v, v)]
            if r.codec.is_string:
                preds += [f.startswith("a"), f.like("c%")]
            for p in preds:
                r.evaluate(p)
            r.top_n(5, desc=True, nulls_first=True)
            r.describe()
        except pf.IndexFormatError:
            if d is not data:
                raise
            continue


def _dv():
    from tests.support.vectorlib import load_bin, manifest

    out = []
    m32 = manifest("deletion_vector_32")
    out += [("bin", load_bin("deletion_vector_32", b["file"])) for b in m32["serialized_bins"] if b["size"] < 20000]
    m64 = manifest("deletion_vector_64")
    out += [
        ("blob", load_bin("deletion_vector_64", b["file"]))
        for b in m64["blobs_64"] + m64["blobs_32_by_head"]
        if b["size"] < 20000
    ]
    return out


def _exercise_dv(kind, data):
    import numpy as np

    from paimon_fast import tableindex as ti

    dv = ti.DeletionVector.deserialize(data) if kind == "bin" else ti.DeletionVector.from_blob(data)
    out = dv.serialize()  # what reads can be written back
    assert ti.DeletionVector.deserialize(out) == dv
    dv.is_deleted_batch(np.arange(0, 100))
    dv.keep_mask(0, 100)


def _dv_files():
    from tests.support.vectorlib import load_bin, manifest

    m32 = manifest("deletion_vector_32")
    out = [
        (None, load_bin("deletion_vector_32", f["file"]))
        for c in m32["index_files"]
        for f in c["files"]
        if f["size"] < 20000
    ]
    out.append((None, load_bin("deletion_vector_64", "dv_file_mixed_32_and_64_synthetic.index")))
    return out


def _exercise_dv_file(_, data):
    from paimon_fast import tableindex as ti

    for e in ti.read_deletion_file(data):
        e.vector.serialize()


def _puffin():
    from paimon_fast import tableindex as ti

    vecs = {
        "a.parquet": ti.DeletionVector.from_positions([1, 5, 70000], bitmap64=True),
        "b.parquet": ti.DeletionVector.from_positions(range(0, 3000, 3), bitmap64=True),
    }
    return [(None, ti.write_puffin(vecs))]


def _exercise_puffin(_, data):
    from paimon_fast import tableindex as ti

    for _name, dv in ti.read_puffin(data):
        dv.serialize()


def _hash():
    from tests.support.vectorlib import load_bin

    d = os.path.join(DATA, "hash_index")
    return [
        (None, load_bin("hash_index", n))
        for n in sorted(os.listdir(d))
        if n.endswith(".index") and os.path.getsize(os.path.join(d, n)) < 20000
    ]


def _exercise_hash(_, data):
    from paimon_fast import tableindex as ti

    ti.read_hash_index(data)


def _hudi():
    import numpy as np

    from paimon_fast.hudi import model

    out = []
    for pos in ([0, 1, 2], list(range(0, 5000, 7)), list(range(70000, 72000)) + [2**31 + 5]):
        out.append((None, base64.b64decode(model.encode_bitmap(np.array(pos, np.int64)))))
    return out


def _exercise_hudi(_, data):
    from paimon_fast.hudi import model

    model.decode_bitmap(base64.b64encode(data).decode())


def _avro():
    out = []
    tb = os.path.join(DATA, "paimon_tables", "java09-append-tables.tar.gz")
    with tarfile.open(tb) as tf:
        for m in tf.getmembers():
            if "/manifest/manifest-" in m.name and m.isfile() and len(out) < 6:
                out.append((None, tf.extractfile(m).read()))
    return out


def _exercise_avro(_, data):
    from paimon_fast.paimon.fastpath import Fallback, read_avro

    try:
        read_avro(data)
    except Fallback as e:  # a codec name the fast path does not decode: by design it hands the table to pypaimon
        if not str(e).startswith(("Avro codec", "snappy-compressed")):
            raise


def _parquet():
    """Small Parquet files: pyarrow's (page index or not, data page V1 / V2, dictionary, plain and
    delta encodings, several codecs, nulls, a nested column, several row groups) and Java Paimon's."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    n = 300
    t = pa.table(
        {
            "i": pa.array([i if i % 7 else None for i in range(n)], pa.int64()),
            "s": pa.array([f"v{i % 23}" for i in range(n)]),
            "d": pa.array([i / 3 for i in range(n)]),
            "l": pa.array([[i] * (i % 3) for i in range(n)], pa.list_(pa.int32())),
        }
    )
    out = []
    for kw in (
        dict(write_page_index=True, compression="snappy"),
        dict(write_page_index=False, data_page_version="2.0", use_dictionary=False, compression="zstd"),
        dict(write_page_index=True, data_page_version="2.0", compression="none", row_group_size=120),
        dict(write_page_index=False, compression="gzip", dictionary_pagesize_limit=64),
        dict(  # the delta encodings optimize writes
            write_page_index=True,
            use_dictionary=False,
            column_encoding={"i": "DELTA_BINARY_PACKED", "s": "DELTA_LENGTH_BYTE_ARRAY"},
            compression="snappy",
        ),
    ):
        buf = io.BytesIO()
        pq.write_table(t, buf, data_page_size=256, write_batch_size=32, **kw)
        out.append((None, buf.getvalue()))
    tb = os.path.join(DATA, "paimon_tables", "java09-append-tables.tar.gz")
    with tarfile.open(tb) as tf:
        for m in tf.getmembers():
            if m.name.endswith(".parquet") and len(out) < 7:
                out.append((None, tf.extractfile(m).read()))
    return out


def _same_rows(a, b) -> bool:
    """Equal tables, NaN equal to NaN (mutated files hold NaNs; strings may not be valid UTF-8)."""
    import numpy as np
    import pyarrow as pa

    if a.schema != b.schema:
        return False
    for x, y in zip(a.columns, b.columns):
        if x.equals(y):
            continue
        if not pa.types.is_floating(x.type) or not x.is_null().equals(y.is_null()):
            return False
        if not np.array_equal(x.to_numpy(zero_copy_only=False), y.to_numpy(zero_copy_only=False), equal_nan=True):
            return False
    return True


def _exercise_parquet(_, data):
    """Rows at a few positions, by page and by the cost rule; where pyarrow reads the whole
    (mutated) file, the rows must equal its rows at those positions."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from paimon_fast.io.parquet import rows as pr

    cols, rows = pr.file_shape(data)
    try:
        full = pq.read_table(pa.BufferReader(data))
    except Exception:  # noqa: BLE001 - pyarrow cannot read it: no oracle, only the error contract
        full = None
    for pos in ([0, rows // 2, rows // 2, rows - 1], list(range(0, min(rows, 1 << 16), 97)), []):
        pos = [p for p in pos if 0 <= p < rows]
        for frac in (None, 1.0):
            t = pr.read_rows(data, pos, page_fraction=frac)
            if t.num_rows != len(pos):
                raise AssertionError(f"{t.num_rows} rows for {len(pos)} positions")
            if full is not None and not _same_rows(t, full.take(pa.array(pos, pa.int64()))):
                raise AssertionError(f"rows at {pos[:8]} are not pyarrow's")
            if cols:
                pr.read_rows(data, pos, cols[-1:], page_fraction=frac)


READERS = {
    "container": (_container, _exercise_container),
    "bloom": (lambda: _file_index("bloom-filter", "bloom_filter"), _exercise_file_index("bloom-filter")),
    "bitmap-v1": (lambda: _file_index("bitmap", "bitmap_v1"), _exercise_file_index("bitmap")),
    "bitmap-v2": (lambda: _file_index("bitmap", "bitmap_v2"), _exercise_file_index("bitmap")),
    "range-bitmap": (lambda: _file_index("range-bitmap", "range_bitmap"), _exercise_file_index("range-bitmap")),
    "bsi": (lambda: _file_index("bsi", "bsi"), _exercise_file_index("bsi")),
    "global-index": (_global, _exercise_global),
    "global-btree": (_btree, _exercise_btree),
    "deletion-vector": (_dv, _exercise_dv),
    "deletion-file": (_dv_files, _exercise_dv_file),
    "puffin": (_puffin, _exercise_puffin),
    "hash-index": (_hash, _exercise_hash),
    "hudi-bitmap": (_hudi, _exercise_hudi),
    "avro-manifest": (_avro, _exercise_avro),
    "parquet-rows": (_parquet, _exercise_parquet),
}


# ---------------------------------------------------------------- mutation


def mutate(rng, data: bytes, other: bytes) -> bytes:
    b = bytearray(data)
    op = rng.random()
    if op < 0.2 and b:
        return bytes(b[: rng.randrange(len(b))])
    if op < 0.3 and b and other:
        return bytes(b[: rng.randrange(len(b))] + other[rng.randrange(len(other)) :])
    for _ in range(rng.randint(1, 4)):
        if not b:
            b.append(rng.randrange(256))
            continue
        i = rng.randrange(len(b))
        r = rng.random()
        if r < 0.4:
            b[i] = rng.randrange(256)
        elif r < 0.6:
            b[i] ^= 1 << rng.randrange(8)
        elif r < 0.7:  # an extreme integer where a length or count may sit
            b[i : i + 4] = rng.choice([b"\xff\xff\xff\xff", b"\x7f\xff\xff\xff", b"\x80\x00\x00\x00", b"\0\0\0\0"])
        elif r < 0.85:
            b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        else:
            del b[i : i + rng.randint(1, 8)]
    return bytes(b)


# ---------------------------------------------------------------- one reader, in a child process


def run_reader(name: str, n: int, seed: int, seconds: float, memory_mb: int, out_dir: str) -> dict:
    """Fuzz one reader in this process (limits: ``seconds`` per input, ``memory_mb`` of address space)."""
    import resource

    if memory_mb:
        lim = memory_mb * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (lim, lim))

    def on_alarm(signum, frame):
        raise InputTimeout(f"more than {seconds} s")

    old_handler = signal.signal(signal.SIGALRM, on_alarm)
    try:
        return _run(name, n, seed, seconds, out_dir)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old_handler)


def _run(name, n, seed, seconds, out_dir):
    import random

    from paimon_fast.errors import IndexFormatError

    seeds_fn, exercise = READERS[name]
    seeds = seeds_fn()
    assert seeds, f"no seed inputs for {name}"
    for meta, data in seeds:  # the originals read cleanly
        exercise(meta, data)
    rng = random.Random(zlib.crc32(name.encode()) + seed)
    ok = err = 0
    failures = []
    for i in range(n):
        meta, data = seeds[rng.randrange(len(seeds))]
        other = seeds[rng.randrange(len(seeds))][1]
        m = mutate(rng, data, other)
        signal.setitimer(signal.ITIMER_REAL, seconds)
        try:
            exercise(meta, m)
            ok += 1
        except IndexFormatError:
            err += 1
        except BaseException as e:  # noqa: BLE001 - everything else is a finding
            if isinstance(e, KeyboardInterrupt):
                raise
            failures.append((i, m, "".join(traceback.format_exception(e))))
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    if failures and out_dir:
        os.makedirs(out_dir, exist_ok=True)
        for i, m, tb in failures[:50]:
            with open(os.path.join(out_dir, f"{name}-{i}.txt"), "w") as fh:
                fh.write(m.hex() + "\n\n" + tb)
    return {
        "reader": name,
        "inputs": n,
        "answered": ok,
        "index_format_errors": err,
        "failures": len(failures),
        "first_failure": failures[0][2].strip().splitlines()[-1] if failures else "",
    }


def _child(args):
    return run_reader(*args)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=100_000, help="mutated inputs per reader")
    ap.add_argument("--reader", action="append", choices=sorted(READERS), help="only these readers")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--seconds", type=float, default=5.0, help="time limit per input")
    ap.add_argument("--memory-mb", type=int, default=2048, help="address-space limit per reader process")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", default=os.path.join(os.getcwd(), "fuzz-failures"))
    a = ap.parse_args(argv)
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    names = a.reader or sorted(READERS)
    ctx = mp.get_context("spawn")  # a fresh interpreter per reader: the limits apply to it alone
    fresh = {"max_tasks_per_child": 1} if sys.version_info >= (3, 11) else {}
    # a reader process that dies (a segfault, an abort) breaks the pool: reported, never waited on
    # forever (multiprocessing.Pool would wait for the lost task's result without end)
    results, crashed = [], []
    with ProcessPoolExecutor(a.jobs, mp_context=ctx, **fresh) as pool:
        futures = {nm: pool.submit(_child, (nm, a.n, a.seed, a.seconds, a.memory_mb, a.out)) for nm in names}
        for nm, fut in futures.items():
            try:
                results.append(fut.result())
            except BrokenProcessPool:
                crashed.append(nm)
    bad = 0
    if crashed:
        print(
            f"a reader process died (segfault or abort) while fuzzing one of: {', '.join(crashed)}; "
            f"rerun them one by one with --jobs 1 --reader NAME to find which"
        )
        bad += len(crashed)
    for r in results:
        print(
            f"{r['reader']:16s} inputs {r['inputs']:>7}  answered {r['answered']:>7}  "
            f"IndexFormatError {r['index_format_errors']:>7}  failures {r['failures']}"
            + (f"  ({r['first_failure']})" if r["failures"] else "")
        )
        bad += r["failures"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
