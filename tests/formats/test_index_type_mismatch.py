"""An index read as another column type than it was built for is refused, not answered.

The formats do not record the column type.  Where the bytes can tell (key widths in
range-bitmap headers and global index keys, value ranges in a BSI) the readers refuse
with IndexFormatError naming the type asked for and what the bytes hold; where a table
layer knows the type an index was built for (the dataset catalog, global index file
metadata), it is checked when the index is opened.  A bloom filter cannot tell (Java
cannot either): that is documented, not tested here.
"""

import re

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import paimon_fast as pf
import paimon_fast.globalindex as gi
from paimon_fast.errors import IndexFormatError
from paimon_fast.fileindex import FileIndexFormat
from paimon_fast.tables import ParquetDataset


def _index(index_type, dtype, values, options=None):
    w = pf.fileindex.writer(index_type, dtype, options or {})
    w.write_batch(values)
    return w.finish()


INTS = pa.array(np.arange(-3, 97, dtype=np.int32))
LONGS = pa.array(np.arange(-3, 97, dtype=np.int64) * 10**10)
STRS = pa.array([f"s{i}" for i in range(100)])


@pytest.mark.parametrize(
    "built, values, asked",
    [
        ("INT", INTS, "SMALLINT"),
        ("INT", INTS, "TINYINT"),
        ("INT", INTS, "BIGINT"),
        ("INT", INTS, "DOUBLE"),
        ("BIGINT", LONGS, "INT"),
        ("BIGINT", LONGS, "STRING"),
        ("BIGINT", LONGS, "SMALLINT"),
        ("STRING", STRS, "INT"),
        ("STRING", STRS, "BIGINT"),
    ],
)
def test_range_bitmap_of_another_key_width_is_refused(built, values, asked):
    blob = _index("range-bitmap", built, values)
    with pytest.raises(IndexFormatError) as e:
        pf.fileindex.reader("range-bitmap", asked, blob).evaluate(pf.field("x") == ("s5" if asked == "STRING" else 5))
    msg = str(e.value)
    # string keys are length-prefixed: bytes of fixed keys fail to parse as strings first
    assert asked in msg and ("another column type" in msg or "the type the index was written for" in msg), msg


def test_range_bitmap_header_names_the_key_width():
    with pytest.raises(IndexFormatError, match=r"fill 8 bytes, which is not two SMALLINT keys \(2 bytes each\)"):
        pf.fileindex.reader("range-bitmap", "SMALLINT", _index("range-bitmap", "INT", INTS))


def test_range_bitmap_of_same_width_types_still_answers():
    # INT and DATE keys are the same 4 bytes: the bytes cannot tell them apart (neither can Java)
    r = pf.fileindex.reader("range-bitmap", "DATE", _index("range-bitmap", "INT", INTS))
    assert list(r.evaluate(pf.field("x") == 5).bitmap) == [8]


@pytest.mark.parametrize(
    "built, values, asked, held",
    [
        ("INT", pa.array(np.arange(0, 100_000, 1000, dtype=np.int32)), "SMALLINT", "up to 99000"),
        ("INT", pa.array(-np.arange(0, 100_000, 1000, dtype=np.int32)), "SMALLINT", "down to -99000"),
        ("BIGINT", LONGS, "INT", "up to 960000000000"),
        ("INT", INTS, "TINYINT", None),  # -3..96 fits a TINYINT: answered, and rightly
        ("BIGINT", pa.array(np.arange(0, 10**6, 10**4, dtype=np.int64)), "DECIMAL(4, 2)", "up to 990000"),
        ("INT", pa.array(np.arange(0, 10**8, 10**6, dtype=np.int32)), "TIME", "up to 99000000"),
    ],
)
def test_bsi_values_outside_the_asked_type_are_refused(built, values, asked, held):
    blob = _index("bsi", built, values)
    r = pf.fileindex.reader("bsi", asked, blob)
    if held is None:
        assert list(r.evaluate(pf.field("x") == 5).bitmap) == [8]
        return
    with pytest.raises(IndexFormatError) as e:
        r.evaluate(pf.field("x") == 5).bitmap  # answers are lazy: the bytes are read here
    msg = str(e.value)
    assert held in msg and asked in msg and "another column type" in msg, msg


def test_container_error_names_the_column():
    blob = FileIndexFormat.write({"qty": {"range-bitmap": _index("range-bitmap", "INT", INTS)}})
    f = FileIndexFormat.open(blob, {"qty": "SMALLINT"})
    with pytest.raises(IndexFormatError, match=r"column 'qty': .*SMALLINT"):
        f.evaluate(pf.field("qty") == 5)


def _global(dtype, values):
    w = gi.writer(dtype)
    w.write_batch(values, np.arange(len(values)))
    return w.finish()


@pytest.mark.parametrize(
    "built, values, asked, width",
    [
        ("INT", INTS, "BIGINT", 4),
        ("INT", INTS, "SMALLINT", 4),
        ("BIGINT", LONGS, "INT", 8),
        ("BIGINT", LONGS, "TIMESTAMP(6)", 8),
        ("SMALLINT", pa.array(np.arange(100, dtype=np.int16)), "INT", 2),
    ],
)
def test_global_index_keys_of_another_width_are_refused(built, values, asked, width):
    data, meta = _global(built, values)
    # the file's metadata tells before the file is opened
    with pytest.raises(IndexFormatError, match=re.escape(f"metadata holds {width}-byte keys, a {asked} key has")):
        gi.GlobalIndex([(data, meta)], asked)
    # the file's own block index tells without metadata
    with pytest.raises(IndexFormatError, match=re.escape(f"block index holds {width}-byte keys, a {asked} key has")):
        gi.reader(asked, data).evaluate(pf.field("x") == 5)


def test_dataset_index_built_for_another_column_type_is_not_trusted(tmp_path):
    """The catalog records the types each file's index was built for; after the dataset's
    type of an indexed column changes (here a new file, first in the listing, holds the
    column as FLOAT), the old INT bitmap index is refused and its file read: its row is found."""
    pq.write_table(pa.table({"v": pa.array([5, 6, 7], pa.int32()), "k": [1, 2, 3]}), tmp_path / "b.parquet")
    ds = ParquetDataset(str(tmp_path))
    ds.build({"file-index.bitmap.columns": "v"})
    assert ds.plan("v = 5").report.files_skipped == 0
    pq.write_table(pa.table({"v": pa.array([1.5], pa.float32()), "k": [9]}), tmp_path / "a.parquet")
    ds = ParquetDataset(str(tmp_path))
    assert ds.row_type()["v"] == "FLOAT"
    plan = ds.plan("v = 5")
    errors = [p.error for p in plan.files if p.error]
    assert plan.report.index_errors == 1 and "built for type INT, the column is FLOAT now" in errors[0], errors
    t, _ = ds.scan("v = 5")
    assert t.column("k").to_pylist() == [1]
