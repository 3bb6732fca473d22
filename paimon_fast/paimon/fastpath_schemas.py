"""The fast path's schemas (:mod:`paimon_fast.paimon.fastpath`): per schema id, the mapping of the
current columns to the file's, and pypaimon's min/max/null-count file filter over it."""

from __future__ import annotations

from typing import Dict, Optional, Tuple

from .plan import _File, _Plan
from .predicates import for_planning, to_pypaimon


# ---------------------------------------------------------------- schemas
class _Schemas:
    """Per schema id: current field name -> (name in the file, same type?)."""

    def __init__(self, table, plan: _Plan):
        self.table = table
        self.plan = plan
        self.current = list(table.fields)
        self._maps: Dict[int, Dict[str, Tuple[Optional[str], bool]]] = {}
        self._views: Dict[int, tuple] = {}

    def schema(self, sid):
        s = self.plan.schemas.get(sid)
        if s is None:
            s = (
                self.table.table_schema
                if sid == self.table.table_schema.id
                else self.table.schema_manager.get_schema(sid)
            )
            self.plan.schemas[sid] = s
        return s

    def mapping(self, sid):
        m = self._maps.get(sid)
        if m is None:
            by_id = {f.id: f for f in self.schema(sid).fields}
            m = {}
            for cur in self.current:
                old = by_id.get(cur.id)
                if old is None:
                    m[cur.name] = (None, True)
                else:
                    same = str(old.type).replace(" NOT NULL", "") == str(cur.type).replace(" NOT NULL", "")
                    m[cur.name] = (old.name, same)
            self._maps[sid] = m
        return m

    def index_view(self, sid):
        """(current name -> file name, file name -> type) for columns an index may answer."""
        got = self._views.get(sid)
        if got is None:
            got = self._views[sid] = self._index_view(sid)
        return got

    def _index_view(self, sid):
        names, types = {}, {}
        olds = {f.name: f for f in self.schema(sid).fields}
        for cur, (old, same) in self.mapping(sid).items():
            if old is not None and same:
                names[cur] = old
                types[old] = str(olds[old].type)
        return names, types


# ---------------------------------------------------------------- value stats
class _StatsFilter:
    """pypaimon's min/max/null-count file filter (``FileScanner._filter_manifest_entry``
    for append tables), applied to our manifest records with pypaimon's own
    stats decoding, schema evolution and predicate test."""

    def __init__(self, table, predicate, schemas: "_Schemas"):
        from pypaimon.manifest.manifest_file_manager import ManifestFileManager
        from pypaimon.manifest.simple_stats_evolutions import SimpleStatsEvolutions
        from pypaimon.read.push_down_utils import exclude_predicate_with_fields
        from pypaimon.table.special_fields import SpecialFields

        predicate = for_planning(predicate, table)  # leaves pypaimon cannot test (ARRAY ops ...) are TRUE here
        pred = None if predicate is None else to_pypaimon(predicate, table)
        pred = exclude_predicate_with_fields(pred, SpecialFields.SYSTEM_FIELD_NAMES)
        self.pred = exclude_predicate_with_fields(pred, set(table.partition_keys))
        self.schemas = schemas
        self.evolutions = SimpleStatsEvolutions(lambda sid: schemas.schema(sid).fields, table.table_schema.id)
        self.fields_of = ManifestFileManager(table)._get_value_stats_fields

        self.partition_pred = None
        self.partition_fields = table.partition_keys_fields
        if table.partition_keys and predicate is not None:
            from pypaimon.read.push_down_utils import trim_and_transform_predicate

            self.partition_pred = trim_and_transform_predicate(
                to_pypaimon(predicate, table), table.field_names, table.partition_keys
            )
        self._partition_ok: Dict[bytes, bool] = {}

    def keep(self, f: "_File") -> bool:
        if self.partition_pred is not None:
            ok = self._partition_ok.get(f.partition)
            if ok is None:
                from pypaimon.table.row.generic_row import GenericRowDeserializer

                row = GenericRowDeserializer.from_bytes(f.partition, self.partition_fields)
                ok = self._partition_ok[f.partition] = bool(self.partition_pred.test(row))
            if not ok:
                return False
        if self.pred is None:
            return True
        from pypaimon.manifest.schema.simple_stats import SimpleStats
        from pypaimon.table.row.binary_row import BinaryRow

        d = dict(f.raw)
        d.setdefault("_VALUE_STATS_COLS", None)  # Paimon 0.9: absent == null == every column
        fields = self.fields_of(d, self.schemas.schema(f.schema_id))
        v = d["_VALUE_STATS"]
        stats = SimpleStats(
            min_values=BinaryRow(v["_MIN_VALUES"], fields),
            max_values=BinaryRow(v["_MAX_VALUES"], fields),
            null_counts=v["_NULL_COUNTS"],
        )
        cols = (
            d.get("_WRITE_COLS")
            if d["_VALUE_STATS_COLS"] is None and d.get("_WRITE_COLS") is not None
            else d["_VALUE_STATS_COLS"]
        )
        evolved = self.evolutions.get_or_create(f.schema_id).evolution(stats, f.rows, cols)
        return bool(self.pred.test_by_simple_stats(evolved, f.rows))
