"""The predicate core, shared by every index and table kind and by no I/O.

* :mod:`.predicate`: predicate trees (:func:`field`, :class:`Leaf`, :class:`And`, :class:`Or`,
  :class:`TopN`);
* :mod:`.sqlpredicate`: SQL-like ``where`` text parsed into those trees;
* :mod:`.literals`: literals made exact values of their column's type, by :mod:`.bind`: a predicate
  bound to a schema, once per read, which every engine back end takes;
* :mod:`.types`: Paimon's data types and their Arrow mapping;
* :mod:`.result`: what an index answers (REMAIN / SKIP / row bitmaps) and how answers combine;
* :mod:`.translate`: the one walk of a tree that back ends (Arrow, Spark, pypaimon) plug into;
* :mod:`.roaring`: Java-exact portable roaring bitmaps (32- and 64-bit);
* :mod:`.order`: rows clustered by columns (a sort, Z-order, Hilbert: Paimon's sort compaction
  strategies), for every table kind's ``optimize``.

Modules here import only each other, :mod:`paimon_fast.errors` and the kernels.
"""
