"""Tests of paimon_fast.core: predicates and their SQL text, literals, the one translator, results,
types, roaring serialization."""
