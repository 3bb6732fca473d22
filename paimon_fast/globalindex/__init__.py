"""Bitmap global index (Paimon 2.0): one exact row-id bitmap per value for a whole
table, in footer-driven files, byte-compatible with Java's ``bitmap`` global indexer.

    from paimon_fast import globalindex as gi
    w = gi.writer("STRING", {"bitmap-index.compression": "zstd"})
    w.write_batch(pa.array(["a", None, "b"]), np.array([0, 1, 2]))  # any order, any number of batches
    data, meta = w.finish()                       # file bytes, SortedIndexFileMeta bytes
    r = gi.reader("STRING", data, {}, total_row_count=3)
    r.evaluate(pf.field("x").like("a%"))          # pyroaring BitMap64 of row ids, or pf.UNSUPPORTED
    idx = gi.GlobalIndex([(path, meta), ...], "STRING", {}, total_row_count=N)
    idx.evaluate(pf.field("x").isin(["a", "b"]))

Answers follow Java's ``SortedFileGlobalIndexReader`` + ``BitmapIndexReader``:
files are pruned by their metadata (first / last key, has nulls) before any is
opened; equality and IN read one dictionary block per key; null checks read one
bitmap; ranges, ``endsWith``, ``contains`` and LIKE patterns that are not a
plain prefix scan the dictionary only while the candidate files total at most
``bitmap-index.fallback-scan-max-size`` (256 mb; ``0 b`` disables them: the
answer is then :data:`paimon_fast.UNSUPPORTED`).  String predicates apply to
CHAR / VARCHAR / STRING only.

``index_type="btree"`` (``writer`` / ``reader``, :class:`BTreeGlobalIndex`) is Java's ``btree``
indexer: SST files of sorted keys and their row-id lists (ranges are scans of the blocks
between the bounds; ``btree-index.*`` options), answering as ``LazyFilteredBTreeReader``.

``index_type="multivalue"`` (``writer`` / ``reader``, :class:`MultiValueGlobalIndex`) is Java's
``multivalue`` indexer over an ``ARRAY<T>`` column: the same file layout with one bitmap per
distinct element, answering ``array_contains`` / ``arrays_overlap`` / ``array_contains_all``.

Every type is a record of :mod:`.registry` (``registry.get(name)``, ``registry.names()``): a
new one is its own module plus one ``registry.register(GlobalIndexType(...))``.

Complements (``!=``, ``NOT IN``, ``IS NOT NULL``) are ``[0, total_row_count)``
minus the null rows minus the matches, as Java computes them (row ids indexed
by no file count as non-null).  Without ``total_row_count`` the universe is the
rows the files index, i.e. each file's own non-null rows minus its matches;
either way a query over several files unions correctly.
"""

from .api import *  # noqa: F401,F403 (the package's names, see api.py)
from .api import __all__  # noqa: F401
