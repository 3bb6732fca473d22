"""The directories the tests read, computed once here so that no test file counts its own
depth under ``tests/``: the checkout (``ROOT``), ``tests/`` (``TESTS``) and the Java golden
files and tables (``DATA``, ``tests/data/``)."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
ROOT = TESTS.parent
DATA = TESTS / "data"
SUPPORT = TESTS / "support"
JAVA = TESTS / "java"
