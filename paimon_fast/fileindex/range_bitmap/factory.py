"""The range bitmap index registered under Paimon's name ``range-bitmap``."""

from __future__ import annotations

from ..registry import IndexFactory, register
from .keys import INDEX_TYPE, check_type
from .reader import RangeBitmapReader
from .writer import RangeBitmapWriter


@register
class RangeBitmapFactory(IndexFactory):
    name = INDEX_TYPE
    writer_class = RangeBitmapWriter
    reader_class = RangeBitmapReader

    def check_type(self, dtype):
        check_type(dtype)
