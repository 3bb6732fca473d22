"""Large working buffers from pyarrow's pool (paimon_fast.io.memory): what FileSource and the index
readers hold is the file's bytes, in a form every reader takes."""

import os
import struct

import numpy as np
import pytest

from paimon_fast.io import memory
from paimon_fast.io.checksum import ChecksummedSource, ChecksumMismatchError, block_checksums
from paimon_fast.errors import IndexFormatError
from paimon_fast.io.source import FileSource


@pytest.fixture
def blob(tmp_path):
    data = np.random.default_rng(7).integers(0, 256, 3 * memory.POOLED_BYTES + 123, dtype=np.uint8).tobytes()
    path = tmp_path / "blob"
    path.write_bytes(data)
    return str(path), data


def test_large_reads_come_from_the_pool_and_equal_the_file(blob):
    path, data = blob
    src = FileSource(path)
    for off, n in [(0, len(data)), (5, memory.POOLED_BYTES), (len(data) - memory.POOLED_BYTES, memory.POOLED_BYTES)]:
        got = src.read_at(off, n)
        assert isinstance(got, memoryview) and got.format == "B" and got.nbytes == n
        assert bytes(got) == data[off : off + n]
        assert struct.unpack_from("<I", got, 1)[0] == struct.unpack_from("<I", data, off + 1)[0]
        assert np.array_equal(np.frombuffer(got, np.uint8), np.frombuffer(data[off : off + n], np.uint8))
    small = src.read_at(3, 100)
    assert isinstance(small, bytes) and small == data[3:103]
    with pytest.raises(IndexFormatError):
        src.read_at(len(data) - 10, memory.POOLED_BYTES)  # past the end: refused before any read
    src.close()


def test_a_file_that_shrank_gives_a_short_read_error(blob):
    path, data = blob
    src = FileSource(path)
    os.truncate(path, memory.POOLED_BYTES)  # shrank after it was opened (its size was taken)
    with pytest.raises(IndexFormatError, match="short read"):
        src.read_at(0, 2 * memory.POOLED_BYTES)
    src.close()


def test_checked_reads_keep_the_pool_bytes_and_still_check_them(blob, tmp_path):
    path, data = blob
    spec = block_checksums(data)
    src = ChecksummedSource(FileSource(path), spec, len(data))
    assert bytes(src.read_at(10, 2 * memory.POOLED_BYTES)) == data[10 : 10 + 2 * memory.POOLED_BYTES]
    bad = bytearray(data)
    bad[memory.POOLED_BYTES + 9] ^= 1
    (tmp_path / "bad").write_bytes(bytes(bad))
    src = ChecksummedSource(FileSource(str(tmp_path / "bad")), spec, len(data))
    with pytest.raises(ChecksumMismatchError):
        src.read_at(0, 2 * memory.POOLED_BYTES)


@pytest.mark.parametrize(
    "shape", [7, (3, 5), (40, 1000), 200_000, np.int64(200_000), (np.int32(3), 70_000), (2, memory.NUMPY_BYTES // 16)]
)
def test_arrays(shape):
    z = memory.zeros(shape, np.uint64)
    assert z.shape == np.zeros(shape).shape and z.dtype == np.uint64 and z.flags.writeable and not z.any()
    z[...] = 5  # writable; the next array of the size is cleared again
    assert not memory.zeros(shape, np.uint64).any()
    ones = memory.array(shape, np.uint8, fill=1)
    assert ones.dtype == np.uint8 and (ones == 1).all()


def test_arrays_from_numpy_past_its_size():
    """Arrays from NUMPY_BYTES on are numpy's own (huge pages); smaller pooled ones view a pyarrow
    buffer."""
    big = memory.array(memory.NUMPY_BYTES, np.uint8)
    small = memory.array(memory.NUMPY_BYTES - 1, np.uint8)
    assert big.flags.owndata
    assert not small.flags.owndata
