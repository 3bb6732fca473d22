"""The cold point-lookup path of the bitmap global index reader (``cold_find`` /
``index_walk``: a fresh reader's first equality walks the raw block index and the
dictionary block in the bytes read at open) against the parsing path and the
plain-Python twins, on random and on corrupted files; and the CRC-32 kernel
against zlib."""

import os
import pathlib
import random
import struct
import zlib

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyroaring import BitMap64

import paimon_fast as pf
from paimon_fast import globalindex as gi
from paimon_fast._kernels import load
from paimon_fast.errors import IndexFormatError
from paimon_fast.globalindex import format as gformat
from paimon_fast.globalindex import sst as codec
from paimon_fast.reference import globalindex as twin
from paimon_fast.io.serde import encode_varint

K = load("globalindex")


# ---------------------------------------------------------------- CRC-32


def test_crc32_matches_zlib():
    rng = random.Random(7)
    data = bytes(rng.randrange(256) for _ in range(70_000))
    lengths = list(range(0, 300)) + [rng.randrange(300, 70_000 - 64) for _ in range(300)] + [70_000 - 64]
    for n in lengths:
        at = rng.randrange(0, 64)
        b = data[at : at + n]
        seed = rng.choice([0, 1, 0xFFFFFFFF, rng.randrange(2**32)])
        want = zlib.crc32(b, seed)
        assert K.crc32(b, seed) == want
        assert K.crc32(b, seed, True) == want  # the portable table loop
        assert K.crc32(memoryview(b), seed) == want
    assert K.crc32(b"") == 0


def test_block_trailer_checks_size_and_crc():
    raw = bytes(range(200))
    blob = raw + codec.trailer(raw, codec.NONE)
    assert K.block_trailer(blob, len(raw), 1000) == codec.NONE
    with pytest.raises(IndexFormatError) as e:
        K.block_trailer(blob[:-1], len(raw), 1000)
    assert (e.value.what, e.value.offset) == ("block truncated", 1000)
    bad = bytearray(blob)
    bad[17] ^= 1
    with pytest.raises(IndexFormatError) as e:
        K.block_trailer(bytes(bad), len(raw), 1000)
    assert e.value.what.startswith("block CRC mismatch") and e.value.offset == 1000 + len(raw) + 1
    with pytest.raises(IndexFormatError):
        K.block_trailer(blob, -1, 0)


# ---------------------------------------------------------------- answers


def _readers(tname, data):
    """(cold kernel reader, parsing-path kernel reader, twin reader) over the same file."""
    cold = gi.reader(tname, data)
    parsed = gi.reader(tname, data)
    parsed.file._walked = True  # never takes the walk: parses the index as before
    saved = gformat._k
    gformat._k = twin
    try:
        tw = gi.reader(tname, data)
    finally:
        gformat._k = saved
    return cold, parsed, tw


def _equal_twin(reader, v):
    saved = gformat._k
    gformat._k = twin
    try:
        return reader.evaluate(pf.field("x") == v)
    finally:
        gformat._k = saved


VALUES = {
    "STRING": st.text(alphabet="abz\u00e9\U0001f600", max_size=5),
    "INT": st.integers(-(2**31), 2**31 - 1),
    "BIGINT": st.integers(-(2**63), 2**63 - 1),
    "DOUBLE": st.floats(allow_nan=True),
    "DECIMAL(30, 2)": st.decimals(
        min_value=-(10**27), max_value=10**27, places=2, allow_nan=False, allow_infinity=False
    ),
}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(sorted(VALUES)),
    st.data(),
    st.sampled_from(["none", "zstd"]),
    st.sampled_from(["32b", "64b", "1kb", "16kb"]),
)
def test_cold_lookup_matches_parsing_path_and_twin(tname, data, comp, bs):
    vals = data.draw(st.lists(st.one_of(st.none(), VALUES[tname]), min_size=1, max_size=80))
    w = gi.writer(tname, {"bitmap-index.compression": comp, "bitmap-index.dictionary-block-size": bs})
    w.write_batch(vals)
    blob, _ = w.finish()
    kc = gi.KeyCodec(tname)
    probes = [v for v in vals if v is not None][:4] + data.draw(st.lists(VALUES[tname], max_size=3))
    for p in probes:
        k = kc.literal_bytes(p)
        want = BitMap64([i for i, v in enumerate(vals) if v is not None and kc.literal_bytes(v) == k])
        cold, parsed, tw = _readers(tname, blob)
        got = cold.evaluate(pf.field("x") == p)
        assert cold.file._walked and cold.file._index is None  # answered by the walk
        assert got == want
        assert parsed.evaluate(pf.field("x") == p) == want
        assert _equal_twin(tw, p) == want


@pytest.mark.parametrize("comp", ["none", "zstd"])
def test_cold_lookup_from_files_in_and_beyond_the_tail(tmp_path, comp):
    """Files larger than the bytes read at open: keys whose dictionary block lies in the tail
    (one call) and keys whose block must be read: without a descriptor the walk hands it on;
    with the file's descriptor the kernel reads it itself, and hands back the bytes it read
    when the block is compressed."""
    rng = np.random.default_rng(5)
    n = 60_000
    codes = rng.integers(0, 20_000, n)
    vals = [f"k{c:05d}" for c in codes]
    w = gi.writer("STRING", {"bitmap-index.compression": comp})
    w.write_batch(vals)
    path = str(tmp_path / "big.index")
    w.finish_to(path)
    assert os.path.getsize(path) > 4 * gformat.TAIL_READ
    kc = gi.KeyCodec("STRING")
    f = gformat.BitmapIndexFile(kc, path)
    ft = f.footer
    outcomes, fd_outcomes = set(), set()
    rows = {}
    for i, v in enumerate(vals):
        rows.setdefault(v, []).append(i)
    for probe in ["k00000", "k00001", "k10000", "k19999", "k19998", "k0", "k20000", "a", "z", ""]:
        args = (kc.kind, f._tail, f._tail_at, ft.index_offset, ft.index_length, probe.encode())
        r = K.cold_find(*args)
        outcomes.add("absent" if r is False else "bitmap" if len(r) == 2 else "block")
        rf = K.cold_find(*args, 0, 0x7FFFFFFF, f.source._fd)
        fd_outcomes.add(
            "absent" if rf is False else "bitmap" if len(rf) == 2 else "tail block" if len(rf) == 3 else "bytes"
        )
        if r is False or len(r) == 2:  # in the tail: the same answer
            assert rf == r
        elif rf is not False and len(rf) == 4:  # the bytes it read are the block's
            assert rf[:3] == r and rf[3] == bytes(f.source.read_at(r[1], r[2] + codec.TRAILER))
        elif rf is not False and len(rf) == 3:  # compressed in the tail: decoded from it
            assert rf == r and r[1] >= f._tail_at and comp != "none"
        else:  # read and scanned: the reader's own answer
            assert rf is False or rf == f.find(probe.encode())
        cold = gi.reader("STRING", path)
        assert cold.evaluate(pf.field("x") == probe) == BitMap64(rows.get(probe, []))
        cold.close()
    if comp == "none":  # compressed blocks are never scanned in the tail: always handed on
        assert outcomes == {"absent", "bitmap", "block"} and fd_outcomes == {"absent", "bitmap"}
    else:
        assert outcomes == {"absent", "block"} and fd_outcomes == {"absent", "tail block", "bytes"}
    f.close()


def test_cold_lookup_reads_a_corrupt_block_before_the_tail_as_the_parsing_path(tmp_path):
    """A dictionary block before the bytes read at open, damaged (bad CRC, or garbage under a
    good CRC): the kernel's own read reports exactly as the parsing path, what and where."""
    vals = [f"k{i % 20_000:05d}" for i in range(60_000)]
    w = gi.writer("STRING")
    w.write_batch(vals)
    blob, _ = w.finish()
    kc = gi.KeyCodec("STRING")
    f = gformat.BitmapIndexFile(kc, blob)
    _, _, _, of, ln = f.index()
    off, length = int(of[0]), int(ln[0])
    assert off + length < f._tail_at
    probe = "k00003"
    for restamp in (False, True):
        for trial in range(12):
            bad = bytearray(blob)
            at = off + 1 + (trial * 37) % (length - 1)
            bad[at] ^= 0xFF if trial % 2 else 0x80
            if restamp:
                _restamp(bad, off, length)
            path = tmp_path / f"bad-{restamp}-{trial}.index"
            path.write_bytes(bytes(bad))
            cold = gi.reader("STRING", str(path))
            parsed = gi.reader("STRING", str(path))
            parsed.file._walked = True
            want = _outcome(lambda: parsed.evaluate(pf.field("x") == probe))
            assert _outcome(lambda: cold.evaluate(pf.field("x") == probe)) == want
            assert cold.file._walked
            if not restamp:
                assert want[0] == "error" and want[1].startswith("block CRC mismatch")
            cold.close()
            parsed.close()


# ---------------------------------------------------------------- corrupt blocks with good CRCs


def _outcome(fn):
    try:
        return ("ok", fn())
    except IndexFormatError as e:
        return ("error", e.what, e.offset)


def _restamp(data: bytearray, off: int, length: int):
    """Recompute the trailer of the uncompressed block at ``off`` after its bytes changed."""
    data[off + length : off + length + codec.TRAILER] = codec.trailer(bytes(data[off : off + length]), codec.NONE)


@pytest.mark.parametrize(
    "tname, values",
    [
        ("STRING", [f"v{i % 37:03d}" for i in range(400)]),
        ("INT", [(i % 41) * 1000 - 7 for i in range(400)]),
    ],
)
def test_corrupt_blocks_report_as_the_parsing_path(tname, values):
    """Index and dictionary blocks rewritten with garbage under a recomputed CRC: the cold reader
    answers or raises exactly as the parsing path (what and where), never crashes."""
    w = gi.writer(tname, {"bitmap-index.dictionary-block-size": "64b"})
    w.write_batch(values)
    blob, _ = w.finish()
    kc = gi.KeyCodec(tname)
    f = gformat.BitmapIndexFile(kc, blob)
    ft = f.footer
    blocks = [(ft.index_offset, ft.index_length)]
    _, _, _, of, ln = f.index()
    blocks += list(zip(of.tolist(), ln.tolist()))
    probes = [values[0], values[5], values[-1], "zzz" if tname == "STRING" else 123456789]
    rng = random.Random(11)
    compared = 0
    for off, length in blocks:
        for trial in range(25):
            bad = bytearray(blob)
            how = trial % 5
            if how == 0:  # one random byte
                bad[off + rng.randrange(length)] = rng.randrange(256)
            elif how == 1:  # a random run
                s = rng.randrange(length)
                for j in range(s, min(length, s + rng.randrange(1, 8))):
                    bad[off + j] = rng.randrange(256)
            elif how == 2:  # a huge entry count / length varint
                bad[off + rng.randrange(length)] = 0xFF
            elif how == 3:  # swap two bytes (may unorder keys)
                a, b = rng.randrange(length), rng.randrange(length)
                bad[off + a], bad[off + b] = bad[off + b], bad[off + a]
            else:  # zero a tail
                s = rng.randrange(length)
                bad[off + s : off + length] = bytes(length - s)
            _restamp(bad, off, length)
            data = bytes(bad)
            for p in probes:

                def cold():
                    return gi.reader(tname, data).evaluate(pf.field("x") == p)

                def parsed():
                    r = gi.reader(tname, data)
                    r.file._walked = True
                    return r.evaluate(pf.field("x") == p)

                assert _outcome(cold) == _outcome(parsed)
                compared += 1
    assert compared == len(blocks) * 25 * len(probes)


def test_corrupt_crc_and_truncated_footer_offsets():
    w = gi.writer("STRING")
    w.write_batch([f"s{i % 9}" for i in range(100)])
    blob, _ = w.finish()
    f = gformat.BitmapIndexFile(gi.KeyCodec("STRING"), blob)
    ft = f.footer
    bad = bytearray(blob)
    bad[ft.index_offset + ft.index_length + 1] ^= 0xFF  # the index block's stored CRC
    with pytest.raises(IndexFormatError) as e:
        gi.reader("STRING", bytes(bad)).evaluate(pf.field("x") == "s1")
    assert e.value.what.startswith("block CRC mismatch") and e.value.offset == ft.index_offset + ft.index_length + 1
    # an index offset pointing past the body: the footer check names it
    bad = bytearray(blob)
    end = len(blob) - gformat.FOOTER_LENGTH
    bad[end + 24 : end + 32] = (len(blob)).to_bytes(8, "big")
    with pytest.raises(IndexFormatError) as e:
        gi.reader("STRING", bytes(bad))
    assert "outside the file body" in e.value.what and e.value.offset == end + 24


@pytest.mark.parametrize(
    "tname,lo,hi",
    [
        ("TINYINT", -128, 127),
        ("SMALLINT", -(1 << 15), (1 << 15) - 1),
        ("INT", -(1 << 31), (1 << 31) - 1),
        ("BIGINT", -(1 << 63), (1 << 63) - 1),
    ],
)
def test_integer_point_lookup_equals_the_general_path(tname, lo, hi):
    """``x = <int>`` answered straight from the file gives the general path's answer: values at
    the type's bounds, literals just outside them (no rows), bools and floats (normalised)."""
    from paimon_fast.globalindex.index import GlobalIndex

    rng = np.random.default_rng(len(tname))
    vals = [lo, hi, 0, -1, 1] + [int(v) for v in rng.integers(max(lo, -(1 << 62)), min(hi, 1 << 62), 200)]
    n = 2_000
    col = [None if rng.random() < 0.05 else vals[int(i)] for i in rng.integers(0, len(vals), n)]
    t = {"TINYINT": pa.int8(), "SMALLINT": pa.int16(), "INT": pa.int32(), "BIGINT": pa.int64()}[tname]
    w = gi.writer(tname)
    w.write_batch(pa.array(col, t), np.arange(n, dtype=np.uint64))
    data, _ = w.finish()
    probes = vals[:40] + [lo - 1, hi + 1, True, False, 1.0, 2.5, float(hi), 7]

    def outcome(fn):
        try:
            return fn()
        except Exception as e:  # the same refusal (a bool is not a number) both ways
            return type(e), str(e)

    for p in probes:
        got = outcome(lambda: gi.reader(tname, data).evaluate(pf.field("x") == p))
        want = outcome(lambda: GlobalIndex.evaluate(gi.reader(tname, data), pf.field("x") == p))
        assert got == want, p
        if type(p) is int and lo <= p <= hi:
            assert got == BitMap64(i for i, v in enumerate(col) if v == p)  # and the rows themselves
        elif type(p) is int:
            assert got == BitMap64()  # outside the type: no rows


# ---------------------------------------------------------------- one dictionary block's scan


def _block(keys, rng):
    """A raw dictionary block of ``keys`` (bytes, in the given order), random bitmap places."""
    body = bytearray(encode_varint(len(keys)))
    for k in keys:
        body += encode_varint(len(k)) + k + encode_varint(rng.randrange(2**40)) + encode_varint(rng.randrange(2**31))
    return bytes(body)


def _scan_answer(fn, *args):
    try:
        return fn(*args)
    except IndexFormatError as e:
        return ("error", e.what, e.offset)


@pytest.mark.parametrize("seed", range(6))
def test_block_scan_matches_twin_for_every_key_length(seed):
    # byte keys of 0 to 12 bytes compare as 8-byte words while both sides are at most 8 bytes
    # and 8 bytes can be read at the entry; longer ones, and the block's last entries, byte-wise
    rng = random.Random(seed)
    alphabet = bytes([0, 1, 0x7F, 0x80, 0xFE, 0xFF, ord("a"), ord("b")])
    keys = sorted({bytes(rng.choice(alphabet) for _ in range(rng.randrange(13))) for _ in range(rng.randrange(1, 300))})
    raw = _block(keys, rng)
    u8 = np.frombuffer(raw, np.uint8)
    probes = set(keys)
    for k in keys[:60]:
        probes.update({k + b"\x00", k + b"\xff", k[:-1], k[:-1] + b"\xff", k[:8], k[:9] + b"\x01"})
    probes.update({b"", b"\x00" * 8, b"\xff" * 9})
    for probe in sorted(probes):
        lit = np.frombuffer(probe, np.uint8)
        for ordered in (False, True):
            got = K.lookup(10, u8, lit, 100, ordered)
            assert got == twin.lookup(10, u8, lit, 100, ordered), (probe, ordered)
            if probe in keys:
                assert got is not None


@pytest.mark.parametrize("kind,width,fmt", [(3, 4, "<i"), (4, 8, "<q")])
def test_block_scan_integer_keys_match_twin(kind, width, fmt):
    rng = random.Random(kind)
    lo, hi = -(2 ** (8 * width - 1)), 2 ** (8 * width - 1) - 1
    vals = sorted({rng.randrange(lo, hi + 1) for _ in range(500)} | {lo, hi, 0, -1})
    raw = _block([struct.pack(fmt, v) for v in vals], rng)
    u8 = np.frombuffer(raw, np.uint8)
    for v in vals[::7] + [lo, hi, vals[0] - 1 if vals[0] > lo else hi, 12345]:
        lit = np.frombuffer(struct.pack(fmt, v), np.uint8)
        for ordered in (False, True):
            assert K.lookup(kind, u8, lit, 0, ordered) == twin.lookup(kind, u8, lit, 0, ordered)
    # a key of the wrong width is malformed for the type, reported where it starts, like the twin
    bad = _block([struct.pack(fmt, vals[0]), b"\x01\x02\x03", struct.pack(fmt, vals[1])], rng)
    bu8 = np.frombuffer(bad, np.uint8)
    lit = np.frombuffer(struct.pack(fmt, vals[1]), np.uint8)
    got = _scan_answer(K.lookup, kind, bu8, lit, 10, True)
    assert got == ("error", "malformed key for its type", 10 + bad.index(b"\x03\x01\x02\x03") + 1)
    want = _scan_answer(twin.lookup, kind, bu8, lit, 10, True)
    assert want[0] == "error"


# ---------------------------------------------------------------- a local file's cold open and bitmap read


def test_open_tail_reads_the_end_of_a_file_in_one_call(tmp_path):
    data = bytes(range(256)) * 40
    p = tmp_path / "f.bin"
    p.write_bytes(data)
    for tail_len in (0, 1, 48, 4096, len(data), len(data) + 1000):
        fd, size, tail = K.open_tail(str(p), tail_len)
        try:
            assert size == len(data)
            assert tail == data[len(data) - min(tail_len, len(data)) :]
            assert os.get_inheritable(fd) is False  # close-on-exec, as os.open
        finally:
            os.close(fd)
    with pytest.raises(FileNotFoundError) as e:
        K.open_tail(str(tmp_path / "missing"), 16)
    assert e.value.filename == str(tmp_path / "missing")
    with pytest.raises(ValueError):
        K.open_tail(str(p) + "\0.x", 16)  # os.open's refusal, not a shorter path
    with pytest.raises(ValueError):
        gi.reader("STRING", str(p) + "\0.x")
    fd, size, tail = K.open_tail(str(tmp_path), 16)  # a directory opens, but cannot be read
    os.close(fd)
    assert tail is None


def test_reader_of_a_path_reports_as_the_other_sources(tmp_path):
    """Missing files, directories, files shorter than the footer and foreign files: the path
    (read by the one-call open) fails as the same bytes given in memory or as a file object."""
    with pytest.raises(FileNotFoundError):
        gi.reader("STRING", str(tmp_path / "missing"))
    with pytest.raises(OSError):
        gi.reader("STRING", str(tmp_path))
    w = gi.writer("STRING")
    w.write_batch([f"s{i % 9}" for i in range(100)])
    blob, _ = w.finish()
    for name, data in (
        ("short", blob[-40:]),
        ("empty", b""),
        ("foreign", b"x" * 100 + blob[-40:]),
        ("bad magic", blob[:-4] + b"XXXX"),
        ("index past the body", blob[:-24] + b"\x7f" + blob[-23:]),
    ):
        p = tmp_path / name
        p.write_bytes(data)
        want = _outcome(lambda: gi.reader("STRING", data))
        assert want[0] == "error"
        assert _outcome(lambda: gi.reader("STRING", str(p))) == want
        with open(p, "rb") as fobj:
            assert _outcome(lambda: gi.reader("STRING", fobj)) == want


def _bitmap_file(tmp_path, n=300_000, distinct=10):
    """A STRING file whose bitmaps are large (several before the bytes read at open) and
    small, with rows[key] = its row ids."""
    rng = np.random.default_rng(3)
    codes = rng.integers(0, distinct, n)
    codes[:distinct] = np.arange(distinct)
    vals = [f"k{c:03d}" for c in codes]
    vals += [f"rare{i}" for i in range(20)]
    w = gi.writer("STRING")
    w.write_batch(vals)
    path = str(tmp_path / "bm.index")
    w.finish_to(path)
    rows = {}
    for i, v in enumerate(vals):
        rows.setdefault(v, []).append(i)
    return path, rows


def test_cold_find_gives_the_bitmap_bytes(tmp_path):
    """``bitmap=True``: a key found gives its bitmap's bytes (copied from the tail or read from the
    descriptor); without a descriptor a bitmap before the tail is handed back as its place."""
    path, rows = _bitmap_file(tmp_path)
    kc = gi.KeyCodec("STRING")
    f = gformat.BitmapIndexFile(kc, path)
    ft = f.footer
    data = open(path, "rb").read()
    kinds = set()
    for key in rows:
        place = f.find(key.encode())
        args = (kc.kind, f._tail, f._tail_at, ft.index_offset, ft.index_length, key.encode(), 0, 0x7FFFFFFF)
        got = K.cold_find(*args, f.source._fd, True, gformat.SMALL_BITMAP)
        assert got == data[place[0] : place[0] + place[1]]
        assert BitMap64.deserialize(got) == BitMap64(rows[key])
        no_fd = K.cold_find(*args, -1, True, gformat.SMALL_BITMAP)
        if place[0] >= f._tail_at:
            assert no_fd == got
            kinds.add("tail")
        else:
            assert no_fd == place
            kinds.add("read")
        kinds.add("large" if place[1] > gformat.SMALL_BITMAP else "small")
        for where in (path, pathlib.Path(path)):
            r = gi.reader("STRING", where)
            assert r.evaluate(pf.field("x") == key) == BitMap64(rows[key])
            r.close()
    assert kinds == {"tail", "read", "large", "small"}
    assert (
        K.cold_find(
            kc.kind,
            f._tail,
            f._tail_at,
            ft.index_offset,
            ft.index_length,
            b"nope",
            0,
            0x7FFFFFFF,
            f.source._fd,
            True,
            gformat.SMALL_BITMAP,
        )
        is False
    )
    f.close()


def test_corrupt_bitmaps_read_by_the_cold_lookup_report_as_the_parsing_path(tmp_path):
    """Bitmaps damaged in the file, small (checked by the kernel) and large (left to pyroaring):
    the cold path through a path answers or raises exactly as the parsing path."""
    path, rows = _bitmap_file(tmp_path)
    f = gformat.BitmapIndexFile(gi.KeyCodec("STRING"), path)
    places = {k: f.find(k.encode()) for k in rows}
    f.close()
    data = open(path, "rb").read()
    rng = random.Random(19)
    compared = errors = 0
    for key in ["k000", "k004", "k009", "rare0", "rare7", "rare19"]:
        off, length = places[key]
        for trial in range(10):
            bad = bytearray(data)
            if trial == 9:  # no buckets: pyroaring reads an empty bitmap, our check sees the bytes left
                bad[off : off + 8] = bytes(8)
            elif trial % 3 == 0:
                bad[off + rng.randrange(min(length, 24))] = rng.randrange(256)  # headers
            elif trial % 3 == 1:
                bad[off : off + 8] = (rng.randrange(1, 2**40)).to_bytes(8, "little")  # a huge bucket count
            else:
                at = off + rng.randrange(length)
                bad[at] ^= 0xFF
            p = tmp_path / f"bad-{key}-{trial}.index"
            p.write_bytes(bytes(bad))

            def cold():
                r = gi.reader("STRING", str(p))
                try:
                    return r.evaluate(pf.field("x") == key)
                finally:
                    r.close()

            def parsed():
                r = gi.reader("STRING", str(p))
                r.file._walked = True
                try:
                    return r.evaluate(pf.field("x") == key)
                finally:
                    r.close()

            want = _outcome(parsed)
            assert _outcome(cold) == want
            compared += 1
            errors += want[0] == "error"
    assert compared == 60 and errors >= 20


def test_check64_reports_what_and_where():
    good = BitMap64([1, 5, 1 << 33, (1 << 33) + 70_000]).serialize()
    u8 = np.frombuffer
    assert K.check64(u8(good, np.uint8)) == 4
    cases = [
        (good[:5], "64-bit roaring bitmap truncated (bucket count)", 100),
        (
            (10**6).to_bytes(8, "little") + good[8:],
            "64-bit roaring bitmap claims 1000000 buckets, more than its bytes can hold",
            100,
        ),
        (good + b"\x00", f"64-bit roaring bitmap is {len(good)} bytes but its block is {len(good) + 1}", 100),
    ]
    for raw, what, where in cases:
        with pytest.raises(IndexFormatError) as e:
            K.check64(u8(raw, np.uint8), 100)
        assert (e.value.what, e.value.offset) == (what, where)
    # the two buckets swapped: their keys are out of order, at the second bucket's key
    b1 = BitMap64([1, 5]).serialize()[8:]
    b2 = BitMap64([1 << 33, (1 << 33) + 70_000]).serialize()[8:]
    swapped = (2).to_bytes(8, "little") + b2 + b1
    with pytest.raises(IndexFormatError) as e:
        K.check64(u8(swapped, np.uint8), 100)
    assert (e.value.what, e.value.offset) == ("64-bit roaring buckets not in increasing order", 100 + 8 + len(b2))
    cut = good[: 8 + len(b1) + 2]  # the second bucket's key cut short
    assert len(cut) >= 8 + 2 * 12  # (more than the bucket count check lets through)
    with pytest.raises(IndexFormatError) as e:
        K.check64(u8(cut, np.uint8), 100)
    assert (e.value.what, e.value.offset) == ("64-bit roaring bitmap truncated (bucket key)", 108 + len(b1))
