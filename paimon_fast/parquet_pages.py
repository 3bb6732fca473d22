"""Old import path of :mod:`paimon_fast.parquet.pages`: this name is that module itself (setting an
attribute here sets it there)."""

import sys

from .parquet import pages as _module

sys.modules[__name__] = _module
