"""Paimon table index files: deletion vectors (32- and 64-bit, Iceberg
compatible) and the dynamic bucket hash index.

    from paimon_fast import tableindex as ti
    dv = ti.DeletionVector.from_positions(np.array([3, 7, 2**33]), bitmap64=True)
    dv.cardinality; dv.is_deleted_batch(np.array([3, 4]))
    b = dv.serialize(); ti.DeletionVector.deserialize(b)
    blob = dv.to_blob(); ti.DeletionVector.from_blob(blob)
    files = ti.write_deletion_files(out_dir, [("data-1.parquet", dv)])
    ti.read_deletion_vector(path, offset, length); ti.read_deletion_file(path)
    ti.apply_deletion_vector(dv, record_batch, start_row)
    ti.write_hash_index(hashes); ti.read_hash_index(data)
    ti.binary_row_hash(table, ["INT", "STRING"])
"""

from .deletion import (
    DEFAULT_TARGET_SIZE,
    MAGIC32,
    MAGIC64,
    MAX_POSITION_32,
    MAX_POSITION_64,
    Bitmap64DeletionVector,
    BitmapDeletionVector,
    DeletionFileEntry,
    DeletionVector,
    apply_deletion_vector,
    filter_batches,
    read_deletion_file,
    read_deletion_vector,
    serialize_deletion_files,
    write_deletion_files,
)

__all__ = [
    "DeletionVector",
    "BitmapDeletionVector",
    "Bitmap64DeletionVector",
    "DeletionFileEntry",
    "apply_deletion_vector",
    "filter_batches",
    "read_deletion_file",
    "read_deletion_vector",
    "serialize_deletion_files",
    "write_deletion_files",
    "MAGIC32",
    "MAGIC64",
    "MAX_POSITION_32",
    "MAX_POSITION_64",
    "DEFAULT_TARGET_SIZE",
]
from .hashindex import (  # noqa: E402
    DEFAULT_TARGET_ROW_NUM,
    DynamicBucketIndex,
    binary_row_hash,
    int_hash_set_order,
    read_hash_index,
    update_hash_index,
    write_hash_index,
    write_int_file,
)
from .puffin import read_puffin, write_puffin  # noqa: E402

__all__ += [
    "DynamicBucketIndex",
    "binary_row_hash",
    "int_hash_set_order",
    "read_hash_index",
    "update_hash_index",
    "write_hash_index",
    "write_int_file",
    "DEFAULT_TARGET_ROW_NUM",
    "read_puffin",
    "write_puffin",
]
