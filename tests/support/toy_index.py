"""A test-only file index type, ``test-positions``, registered by name like any
plug-in: it stores every row position per value and answers ``=``, ``IN`` and
``IS NULL`` with exact row bitmaps (BitmapResult), the shape bitmap / BSI
indexes answer with.  It lets the pipeline's row-dropping path be tested before
those index types are merged."""

import json

from pyroaring import BitMap

from paimon_fast.fileindex import FileIndexReader, FileIndexWriter, IndexFactory, register
from paimon_fast.core.result import BitmapResult
from paimon_fast.core.types import to_arrow_array

NAME = "test-positions"


def _key(v):
    return json.dumps(v, default=str)


class PositionsWriter(FileIndexWriter):
    index_type = NAME

    def __init__(self, dtype, options):
        super().__init__(dtype, options)
        self.pos = {}

    def write_batch(self, values):
        for v in to_arrow_array(values, self.dtype).to_pylist():
            self.pos.setdefault(_key(v), []).append(self.row_count)
            self.row_count += 1

    def finish(self):
        return json.dumps({"rows": self.row_count, "values": self.pos}).encode()


class PositionsReader(FileIndexReader):
    index_type = NAME

    def __init__(self, dtype, source, options):
        super().__init__(dtype, source, options)
        self.values = json.loads(bytes(source.read_all()))["values"]

    def _rows(self, literals):
        b = BitMap()
        for v in literals:
            b |= BitMap(self.values.get(_key(v), []))
        return BitmapResult(b)

    def visit_equal(self, leaf):
        return self._rows([leaf.literal])

    def visit_in(self, leaf):
        return self._rows(leaf.literals)

    def visit_is_null(self, leaf):
        return self._rows([None])


@register
class PositionsFactory(IndexFactory):
    name = NAME
    writer_class = PositionsWriter
    reader_class = PositionsReader
