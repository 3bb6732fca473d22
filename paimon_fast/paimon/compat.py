"""Reading tables whose manifests pypaimon cannot parse as they are.

Paimon 0.9 wrote data-file manifests without the ``_VALUE_STATS_COLS``
field (added in Paimon 1.0).  Java reads them through Avro schema resolution
(the field defaults to null, meaning "stats for all columns"); pypaimon 2.1
indexes the decoded record directly and raises ``KeyError:
'_VALUE_STATS_COLS'``.

The fix here does not touch pypaimon: :func:`legacy_manifest_table` gives a
table whose :class:`FileIO` upgrades such manifests while they are read, the
way Java's Avro reader does: the manifest is decoded with its own (writer)
schema and re-encoded in memory with ``_VALUE_STATS_COLS = null`` added.
Manifests that already carry the field are handed through byte for byte, so
the wrapper is harmless on current tables.  Nothing is written back.

Upstream fix (pypaimon ``manifest/manifest_file_manager.py``,
``ManifestFileManager._get_value_stats_fields``): read the field with
``file_dict.get('_VALUE_STATS_COLS')`` (absent == null == all columns), as
``read()`` already does for ``_EXTERNAL_PATH`` and ``_WRITE_COLS``.
"""

from __future__ import annotations

import copy
import io
import posixpath

_FIELD = "_VALUE_STATS_COLS"
_FIELD_SCHEMA = {"default": None, "name": _FIELD, "type": ["null", {"type": "array", "items": "string"}]}


def _is_data_manifest(path: str) -> bool:
    base = posixpath.basename(str(path).rstrip("/"))
    return base.startswith("manifest-") and not base.startswith("manifest-list-")


def _file_record_schema(schema):
    if not isinstance(schema, dict):
        return None
    for f in schema.get("fields", ()):
        if f.get("name") == "_FILE" and isinstance(f.get("type"), dict):
            return f["type"]
    return None


def upgrade_manifest_bytes(data: bytes) -> bytes:
    """Return manifest Avro bytes with ``_VALUE_STATS_COLS`` present.

    ``data`` is returned unchanged when the field is already in its schema
    (or the bytes are not a data-file manifest)."""
    import fastavro

    try:
        reader = fastavro.reader(io.BytesIO(data))
    except Exception:
        return data
    writer_schema = reader.writer_schema
    file_schema = _file_record_schema(writer_schema)
    if file_schema is None or any(f.get("name") == _FIELD for f in file_schema.get("fields", ())):
        return data
    new_schema = copy.deepcopy(writer_schema)
    fs = _file_record_schema(new_schema)
    fs["fields"].append(dict(_FIELD_SCHEMA))
    records = []
    for rec in reader:
        rec["_FILE"][_FIELD] = None
        records.append(rec)
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(new_schema), records, codec=reader.codec or "null")
    return out.getvalue()


_CLASS_CACHE = {}
DV_PREFIX = "paimon-fast-dv32:/"


def register_deletion_blob(file_io, blob: bytes) -> str:
    """Serve ``blob`` (a 32-bit deletion vector: size, bin, CRC) to pypaimon from
    ``file_io`` (a :func:`legacy_file_io` wrapper) under a virtual path; returns the path.

    pypaimon's ``DeletionVector.read`` parses only 32-bit vectors; a merge-read
    split's 64-bit ones are converted and read from here instead."""
    blobs = file_io.__dict__.setdefault("_paimon_fast_dv_blobs", {})
    path = f"{DV_PREFIX}{len(blobs)}"
    blobs[path] = bytes(blob)
    return path


def _legacy_class(base):
    cls = _CLASS_CACHE.get(base)
    if cls is not None:
        return cls

    def _wrap(self, path, stream):
        if not _is_data_manifest(path):
            return stream
        with stream:
            data = stream.read()
        return io.BytesIO(upgrade_manifest_bytes(data))

    ns = {"_paimon_fast_legacy_manifests": True}

    def new_input_stream(self, path):
        if str(path).startswith(DV_PREFIX):
            blob = self.__dict__.get("_paimon_fast_dv_blobs", {}).get(str(path))
            if blob is None:
                raise FileNotFoundError(path)
            return io.BytesIO(blob)
        return _wrap(self, path, base.new_input_stream(self, path))

    ns["new_input_stream"] = new_input_stream
    if hasattr(base, "_new_input_stream_with_known_size"):

        def _new_input_stream_with_known_size(self, path, file_size):
            if _is_data_manifest(path):
                return _wrap(self, path, base._new_input_stream_with_known_size(self, path, None))
            return base._new_input_stream_with_known_size(self, path, file_size)

        ns["_new_input_stream_with_known_size"] = _new_input_stream_with_known_size
    cls = type("Legacy" + base.__name__, (base,), ns)
    _CLASS_CACHE[base] = cls
    return cls


def legacy_file_io(file_io):
    """A shallow copy of ``file_io`` (same class family, so pypaimon's
    ``isinstance`` checks still hold) whose manifest reads are upgraded."""
    if getattr(file_io, "_paimon_fast_legacy_manifests", False):
        return file_io
    wrapped = copy.copy(file_io)
    wrapped.__class__ = _legacy_class(type(file_io))
    return wrapped


def legacy_manifest_table(table):
    """The same pypaimon ``FileStoreTable`` reading through :func:`legacy_file_io`.

    Works on tables from any Paimon version; tables whose manifests already
    have ``_VALUE_STATS_COLS`` read exactly as before.
    """
    if getattr(table.file_io, "_paimon_fast_legacy_manifests", False):
        return table
    new = copy.copy(table)
    new.file_io = legacy_file_io(table.file_io)
    from pypaimon.schema.schema_manager import SchemaManager

    try:
        new.schema_manager = SchemaManager(new.file_io, table.table_path, branch=table.current_branch())
    except TypeError:  # older signature
        new.schema_manager = SchemaManager(new.file_io, table.table_path)
    return new
