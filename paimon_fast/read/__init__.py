"""The read layer every table kind shares.

* :mod:`.lazy`: the lazy read object (:class:`~.lazy.LazyRead`: ``to_arrow``,
  ``to_arrow_batch_reader``, ``count``, ``explain``, ...), :class:`~.lazy.ReadSource` (what a
  table kind implements) and the explain records.
"""
