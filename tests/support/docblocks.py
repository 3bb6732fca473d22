"""The fenced code blocks of a Markdown page, each with the ``<!-- docs-test: ... -->`` directives
of the HTML comment right before it (test_docs.py runs the pages of docs/, test_readme.py the
README's examples; test_docs.py's docstring says what each directive does)."""

from __future__ import annotations

import re
from pathlib import Path

FENCE = re.compile(
    r"(?:<!--\s*docs-test:\s*(?P<directive>[^>]*?)\s*-->\s*\n)?^```(?P<lang>[\w-]*)[^\n]*\n(?P<code>.*?)^```",
    re.S | re.M,
)


def blocks(page: Path):
    """(language, code, directives) of every fenced block of a page, in order."""
    out = []
    for m in FENCE.finditer(page.read_text()):
        directives = dict(d.partition("=")[::2] for d in (m.group("directive") or "").split() if d)
        out.append((m.group("lang"), m.group("code"), directives))
    return out


def skip_unless_spark(where: str) -> None:
    """Skip the running test, saying why, where a block marked ``spark`` cannot start Spark:
    pyspark or Java missing (``pip install ".[test]"`` alone).  ``where`` names the block."""
    import pytest

    pytest.importorskip("pyspark", reason=f"{where} starts Spark, and pyspark is not installed")
    from paimon_fast.errors import MissingDependencyError
    from paimon_fast.spark.env import check_spark_environment

    try:
        check_spark_environment()
    except MissingDependencyError as e:
        pytest.skip(f"{where} starts Spark: {e}")
