"""Index readers held between plans (``paimon_fast.tables.parquet.HELD_READERS``): a second plan of
the same files reads none of their index bytes again, a held reader reads what it has not read yet
through a new source after its container closed, and nothing it holds outlives the bytes it
describes.  The oracle is pyarrow's read of the data files and a Python function of the row."""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimon_fast.fileindex.format import HeldReaders
from paimon_fast.io.source import BytesSource, ReopeningSource
from paimon_fast.tables import ParquetDataset
from paimon_fast.tables import parquet as P

FILES, ROWS = 3, 3000
OPTIONS = {
    # a bitmap of 3,000 values per file: its header holds more than the first read of it
    "file-index.bitmap.columns": "k",
    "file-index.range-bitmap.columns": "amount",
    "file-index.bsi.columns": "q",
    "file-index.in-manifest-threshold": "64",  # index files, not inline
}
QUERIES = {
    "k = 7": lambda r: r["k"] == 7,
    "k IN (2, 8995, 4501)": lambda r: r["k"] in (2, 8995, 4501),
    "amount < 40": lambda r: r["amount"] < 40,
    "q BETWEEN 3 AND 4": lambda r: 3 <= r["q"] <= 4,
    "k = 5 OR amount > 990": lambda r: r["k"] == 5 or r["amount"] > 990,
}


def _table(f: int, base: int = 0) -> pa.Table:
    i = np.arange(ROWS, dtype=np.int64)
    k = i * FILES + f + base  # every file holds keys all over the range: no statistic prunes by k
    return pa.table({"k": k, "amount": (k * 37) % 1000, "q": (k * 13) % 50})


def _make(tmp_path, base: int = 0) -> str:
    root = tmp_path / "ds"
    root.mkdir(exist_ok=True)
    for f in range(FILES):
        pq.write_table(_table(f, base), root / f"part-{f}.parquet")
    ParquetDataset(str(root)).build(OPTIONS)
    return str(root)


def _oracle(root: str, fn) -> list:
    rows = []
    for name in sorted(os.listdir(root)):
        if name.endswith(".parquet"):
            rows += pq.read_table(os.path.join(root, name)).to_pylist()
    return sorted(r["k"] for r in rows if fn(r))


def _answer(root: str, where: str) -> list:
    return sorted(ParquetDataset(root).read(where).to_arrow().column("k").to_pylist())


@pytest.fixture(autouse=True)
def _nothing_held():
    P.HELD_READERS.clear()
    yield
    P.HELD_READERS.clear()


def test_a_second_plan_reads_no_index_bytes_and_answers_the_same(tmp_path):
    root = _make(tmp_path)
    for where, fn in QUERIES.items():
        P.HELD_READERS.clear()
        first = ParquetDataset(root).plan(where)
        assert first.report.bytes_read > 0
        assert len(P.HELD_READERS) > 0
        again = ParquetDataset(root).plan(where)
        # the catalog and footers are cached already: what the first plan read was index bytes
        assert again.report.bytes_read == 0, where
        assert [p.bitmap for p in again.kept] == [p.bitmap for p in first.kept]
        assert _answer(root, where) == _oracle(root, fn)
        assert ParquetDataset(root).read(where).count() == len(_oracle(root, fn))


def test_a_held_reader_reads_what_it_lacks_through_a_new_source(tmp_path, monkeypatch):
    root = _make(tmp_path)
    reopened = []
    init = ReopeningSource.__init__

    def counting(self, inner, opener, **kw):
        def counted():
            reopened.append(1)
            return opener()

        init(self, inner, counted, **kw)

    monkeypatch.setattr(ReopeningSource, "__init__", counting)
    assert _answer(root, "k = 7") == [7]
    held = len(P.HELD_READERS)
    assert held > 0 and not reopened
    # keys whose bitmaps (and header chunks) no plan located yet: read after the containers closed
    later = {"k = 8995": lambda r: r["k"] == 8995, "k IN (4501, 6002, 1)": lambda r: r["k"] in (4501, 6002, 1)}
    for where, fn in later.items():
        reopened.clear()
        assert _answer(root, where) == _oracle(root, fn)
        assert reopened, "the held readers read nothing through a new source"
    assert len(P.HELD_READERS) == held  # the same readers: none built again


def test_bytes_changed_under_a_held_reader_are_refused_and_the_file_is_read(tmp_path):
    root = _make(tmp_path)
    assert _answer(root, "k = 7") == [7]
    index_dir = os.path.join(root, "_file_index")
    files = sorted(os.listdir(index_dir))
    assert files
    for name in files:  # bytes all over the second half of every index file changed
        path = os.path.join(index_dir, name)
        data = bytearray(open(path, "rb").read())
        for at in range(len(data) // 2, len(data), 97):
            data[at] ^= 0x5A
        with open(path, "wb") as f:
            f.write(data)
    # keys and a column no plan read before: the held readers (or new ones) read the changed bytes,
    # the checksums refuse them and the files are read instead; "k = 7" is answered as held
    later = {
        "k = 8995": lambda r: r["k"] == 8995,
        "amount < 40": QUERIES["amount < 40"],
        "k = 7": lambda r: r["k"] == 7,
    }
    for where, fn in later.items():
        assert _answer(root, where) == _oracle(root, fn)
    plan = ParquetDataset(root).plan("k = 8995")
    assert plan.report.index_errors > 0 or any("checksum" in str(p.why or "") for p in plan.files)


def test_a_rewritten_file_is_answered_from_its_new_index(tmp_path):
    root = _make(tmp_path)
    assert _answer(root, "k = 7") == [7]
    assert _answer(root, "amount < 40") == _oracle(root, QUERIES["amount < 40"])
    # new rows in every file (other keys), the indexes built again: new names, new checksums
    _make(tmp_path, base=100_000)
    for where, fn in QUERIES.items():
        assert _answer(root, where) == _oracle(root, fn)
    assert _answer(root, "k = 100007") == [100007]


def test_held_readers_are_bounded_oldest_first():
    h = HeldReaders(max_bytes=10_000, max_payload=4_000)
    h.put(("a",), "ra", 3_000)
    h.put(("b",), "rb", 3_000)
    assert h.get(("a",)) == "ra"  # a is now the newest
    h.put(("c",), "rc", 3_000)  # 3 x 4,024 > 10,000: the oldest (b) goes
    assert h.get(("b",)) is None and h.get(("a",)) == "ra" and h.get(("c",)) == "rc"
    assert len(h) == 2 and h.held_bytes == 2 * 4_024
    h.put(("d",), "rd", 20_000)  # alone over the bound: not held, nothing evicted for it
    assert h.get(("d",)) is None and len(h) == 2
    h.clear()
    assert len(h) == 0 and h.held_bytes == 0


def test_reopening_source_reads_through_a_new_source_once_closed():
    data = bytes(range(256)) * 4
    opened = []

    def opener():
        opened.append(1)
        return BytesSource(data)

    src = ReopeningSource(BytesSource(data), opener)
    assert bytes(src.read_at(10, 5)) == data[10:15] and not opened
    src.close()
    assert bytes(src.slice(100, 50).read_at(3, 4)) == data[103:107] and len(opened) == 1

    def shorter():
        return BytesSource(data[:-1])

    gone = ReopeningSource(BytesSource(data), shorter)
    gone.close()
    from paimon_fast.errors import IndexFormatError

    with pytest.raises(IndexFormatError, match="1023 bytes now, not 1024"):
        gone.read_at(0, 4)


def test_a_held_bitmap_reader_keeps_a_bounded_number_of_located_keys(tmp_path, monkeypatch):
    from paimon_fast.fileindex import bitmap

    monkeypatch.setattr(bitmap, "LOCATED_MAX", 10)
    root = _make(tmp_path)
    keys = list(range(0, ROWS * FILES, 97))  # 93 keys, all over every file
    for k in keys[:40]:
        assert _answer(root, f"k = {k}") == [k]
    assert _answer(root, f"k IN ({', '.join(map(str, keys))})") == keys
    readers = [rd for (rd, _) in P.HELD_READERS._held.values() if isinstance(rd, bitmap.BitmapReader)]
    assert len(readers) == FILES
    assert all(0 < len(rd._cache) <= 10 for rd in readers)


def test_max_bytes_zero_holds_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(P.HELD_READERS, "max_bytes", 0)
    root = _make(tmp_path)
    for where, fn in QUERIES.items():
        assert _answer(root, where) == _oracle(root, fn)
    assert len(P.HELD_READERS) == 0
    assert ParquetDataset(root).plan("amount < 40").report.bytes_read > 0


def test_reopening_source_without_an_inner_source_opens_at_its_first_read():
    data = bytes(range(256)) * 4
    firsts, opened = [], []

    def first():
        firsts.append(1)
        return BytesSource(data)

    def opener():
        opened.append(1)
        return BytesSource(data)

    src = ReopeningSource(None, opener, size=len(data), first=first)
    assert src.size == len(data) and not firsts  # nothing opened yet
    assert bytes(src.read_at(0, 3)) == data[:3] and bytes(src.read_at(500, 2)) == data[500:502]
    assert firsts == [1] and not opened  # opened once, kept while not closed
    src.close()
    assert bytes(src.read_at(7, 1)) == data[7:8] and opened == [1]
    never = ReopeningSource(None, opener, size=len(data), first=first)
    never.close()  # closed unread: nothing was opened
    assert firsts == [1]
    from paimon_fast.errors import IndexFormatError

    wrong = ReopeningSource(None, opener, size=len(data) + 5)
    with pytest.raises(IndexFormatError, match="1024 bytes now, not 1029"):
        wrong.read_at(0, 1)
    with pytest.raises(ValueError, match="needs its size"):
        ReopeningSource(None, opener)
