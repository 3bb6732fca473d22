"""One error family: every refusal at the API surface is a paimon_fast error
(a subclass of PaimonFastError) that is also the built-in exception Python
users catch, and its message names what was wrong."""

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import paimon_fast as pf
from paimon_fast import globalindex as gi
from paimon_fast import tableindex as ti
from paimon_fast.errors import (
    ColumnNotFoundError,
    IndexFormatError,
    IndexTooLargeError,
    InvalidArgumentError,
    LiteralTypeError,
    PaimonFastError,
)
from paimon_fast.tables import ParquetDataset


def test_field_needs_a_name():
    for bad in (None, 3, ""):
        with pytest.raises(InvalidArgumentError, match="column name"):
            pf.field(bad)
    with pytest.raises(TypeError):  # also a TypeError / ValueError
        pf.field(None)


def test_fractional_deletion_positions_are_refused_not_truncated():
    for bits64 in (False, True):
        with pytest.raises(InvalidArgumentError, match="1.5"):
            ti.DeletionVector.from_positions([1.5], bitmap64=bits64)
        with pytest.raises(InvalidArgumentError):
            ti.DeletionVector.from_positions(np.array([2.0, float("nan")]), bitmap64=bits64)
        with pytest.raises(InvalidArgumentError):
            ti.DeletionVector.from_positions([1, 2.5], bitmap64=bits64)
        dv = ti.DeletionVector.from_positions([1.0, 3.0], bitmap64=bits64)  # integral floats are positions
        assert dv.positions().tolist() == [1, 3]


def test_duplicate_or_fractional_row_ids_to_the_global_index_writer():
    for kind in ("bitmap", "btree"):
        w = gi.writer("INT", index_type=kind)
        w.write_batch(pa.array([1, 2, 3], pa.int32()), np.array([7, 8, 7], np.int64))
        with pytest.raises(InvalidArgumentError, match="row id 7 is given 2 times"):
            w.finish()
        w = gi.writer("INT", index_type=kind)
        w.write_batch(pa.array([1], pa.int32()), np.array([5], np.int64))
        w.write_batch(pa.array([2], pa.int32()), np.array([5], np.int64))
        with pytest.raises(InvalidArgumentError, match="row id 5 is given 2 times"):
            w.finish()
    w = gi.writer("INT")
    w.write_batch(pa.array([1], pa.int32()), np.array([5], np.int64))
    w.write_batch(pa.array([2], pa.int32()), np.array([5], np.int64))  # across batches too
    with pytest.raises(InvalidArgumentError, match="row id 5"):
        w.finish()
    with pytest.raises(InvalidArgumentError, match="fractional"):
        gi.writer("INT").write_batch(pa.array([1], pa.int32()), np.array([1.5]))


def test_dataset_scan_and_delete_name_the_column(tmp_path):
    pq.write_table(pa.table({"x": pa.array([1, 2], pa.int32()), "country": ["de", "fr"]}), tmp_path / "f.parquet")
    ds = ParquetDataset(str(tmp_path))
    with pytest.raises(ColumnNotFoundError, match="no column 'nope'") as e:
        ds.scan(pf.field("nope") == 1)
    assert isinstance(e.value, KeyError) and isinstance(e.value, ValueError)
    with pytest.raises(ColumnNotFoundError, match="nope"):
        ds.delete(pf.field("nope") == 1)
    with pytest.raises(LiteralTypeError, match="'country'.*string.*5"):
        ds.scan(pf.field("country") == 5)
    with pytest.raises(LiteralTypeError, match="'x'.*int32.*'a'"):
        ds.scan("x = 'a'")
    assert ds.scan(pf.field("x") == 1)[0].num_rows == 1  # nothing was deleted by the refused calls


@pytest.mark.parametrize(
    "cls, base",
    [
        (ColumnNotFoundError, KeyError),
        (ColumnNotFoundError, ValueError),
        (LiteralTypeError, TypeError),
        (LiteralTypeError, ValueError),
        (IndexFormatError, ValueError),
        (IndexTooLargeError, ValueError),
        (InvalidArgumentError, ValueError),
        (InvalidArgumentError, TypeError),
    ],
)
def test_family(cls, base):
    assert issubclass(cls, PaimonFastError) and issubclass(cls, base)


@pytest.mark.parametrize("itype", ["bitmap", "range-bitmap"])
def test_index_read_as_another_column_type_names_the_type(itype):
    w = pf.fileindex.writer(itype, "INT")
    w.write_batch(pa.array(list(range(100)) * 3, pa.int32()))
    data = w.finish()
    with pytest.raises(IndexFormatError, match="BIGINT"):
        pf.fileindex.reader(itype, "BIGINT", data).evaluate(pf.field("x") == 5).bitmap
