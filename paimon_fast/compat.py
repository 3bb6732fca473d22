"""Old import paths, kept until 0.2.0.

Modules that sat at the package's top level moved into ``core/`` (predicates, SQL text, literals,
types, results, roaring), ``io/`` (filesystems, sources, framing, pools, checksums, the Parquet
reader) and ``read/`` (the lazy read).  Importing one by its old name still works: it gives the
very same module object (so setting an attribute through the old name sets it where the code
reads it) and warns with a :class:`DeprecationWarning` that names the new path.  The old names
are removed in :data:`REMOVED_IN`.

This is the only place old paths live; :func:`install` runs when ``paimon_fast`` is imported.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import types
import warnings

REMOVED_IN = "0.2.0"

#: old module name -> its new name (a package's old name also stands for its submodules), or the
#: names of the modules whose names it handed on
MOVED = {
    "paimon_fast.predicate": "paimon_fast.core.predicate",
    "paimon_fast.sqlpredicate": "paimon_fast.core.sqlpredicate",
    "paimon_fast.literals": "paimon_fast.core.literals",
    "paimon_fast.translate": "paimon_fast.core.translate",
    "paimon_fast.result": "paimon_fast.core.result",
    "paimon_fast.types": "paimon_fast.core.types",
    "paimon_fast.roaring": "paimon_fast.core.roaring",
    "paimon_fast.fs": "paimon_fast.io.fs",
    "paimon_fast.fsutil": "paimon_fast.io.fsutil",
    "paimon_fast.source": "paimon_fast.io.source",
    "paimon_fast.serde": "paimon_fast.io.serde",
    "paimon_fast.pool": "paimon_fast.io.pool",
    "paimon_fast.memory": "paimon_fast.io.memory",
    "paimon_fast.checksum": "paimon_fast.io.checksum",
    "paimon_fast.parquet": "paimon_fast.io.parquet",
    "paimon_fast.lazyread": "paimon_fast.read.lazy",
    "paimon_fast.parquet_footer": "paimon_fast.io.parquet.footer",
    "paimon_fast.parquet_rows": "paimon_fast.io.parquet.rows",
    "paimon_fast.thrift_compact": "paimon_fast.io.parquet.thrift",
    "paimon_fast.tables.topn": "paimon_fast.read.topn",
    "paimon_fast.tables.arrow_filter": "paimon_fast.read.arrow_filter",
    "paimon_fast.globalindex.codec": "paimon_fast.globalindex.sst",
    # an old path that handed on the names of two modules: a module of their public names
    "paimon_fast.globalindex.spark_build": ("paimon_fast.tables.globalindex", "paimon_fast.tables.globalindex_spark"),
}


def new_name(old: str):
    """The module an old name stands for now, or None when ``old`` is not an old name."""
    if old in MOVED:
        return MOVED[old]
    head, _, tail = old.rpartition(".")
    while head:
        if head in MOVED:
            return MOVED[head] + old[len(head) :] if isinstance(MOVED[head], str) else None
        head, _, _ = head.rpartition(".")
    return None


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old name and loads it as the module of its new name."""

    def find_spec(self, fullname, path=None, target=None):
        new = new_name(fullname)
        if new is None:
            return None
        return importlib.util.spec_from_loader(fullname, self, is_package=False)

    def create_module(self, spec):
        new = new_name(spec.name)
        warnings.warn(
            f"{spec.name} is now {' and '.join(new) if isinstance(new, tuple) else new}; "
            f"the old name is removed in paimon-fast {REMOVED_IN}",
            DeprecationWarning,
            stacklevel=2,
        )
        if isinstance(new, tuple):  # a new module of their public names (the first one's first)
            module = types.ModuleType(spec.name, f"The old path of {', '.join(new)}: their public names.")
            for m in reversed([importlib.import_module(n) for n in new]):
                module.__dict__.update({k: v for k, v in vars(m).items() if not k.startswith("_")})
            spec.moved_from = None
            return module
        module = importlib.import_module(new)
        spec.moved_from = module.__spec__  # the import system sets __spec__ to ours next
        return module

    def exec_module(self, module):
        # the module itself: its own name, spec and attributes stay as they were (a relative
        # import in it resolves against its own package)
        if module.__spec__.moved_from is not None:
            module.__spec__ = module.__spec__.moved_from


_FINDER = _Alias()


def install() -> None:
    """Put the old-name finder on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, _Alias) for f in sys.meta_path):
        # first: an old package's submodule must not be found again, as a second copy, under
        # the old name by the path finder
        sys.meta_path.insert(0, _FINDER)
