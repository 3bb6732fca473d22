"""Old import path of :mod:`paimon_fast.parquet.footer`: this name is that module itself (setting an
attribute here sets it there)."""

import sys

from .parquet import footer as _module

sys.modules[__name__] = _module
