import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import pytest  # noqa: E402


def pytest_xdist_auto_num_workers(config):
    """``-n auto``: a worker per core, at most 4 (each may start a local Spark of its own)."""
    return max(1, min(os.cpu_count() or 1, 4))


def pytest_collection_modifyitems(config, items):
    """``PAIMON_FAST_TEST_EXAMPLES=0.2``: every Hypothesis test runs that share of its examples (at
    least 5).  CI's oldest job sets it: the same tests, each code path still run, while the full
    counts run in quickstart-2 (the README's test command, which sets nothing)."""
    share = os.environ.get("PAIMON_FAST_TEST_EXAMPLES")
    if not share:
        return
    from hypothesis import settings

    f = float(share)
    if not 0 < f <= 1:
        raise pytest.UsageError(f"PAIMON_FAST_TEST_EXAMPLES must be in (0, 1], not {share!r}")
    done = set()
    for item in items:
        fn = getattr(getattr(item, "obj", None), "__func__", getattr(item, "obj", None))
        s = getattr(fn, "_hypothesis_internal_use_settings", None)
        if s is None or id(fn) in done:
            continue
        done.add(id(fn))
        fn._hypothesis_internal_use_settings = settings(s, max_examples=max(5, int(s.max_examples * f)))


@pytest.fixture(scope="session")
def s3_server():
    """A moto S3 server on 127.0.0.1 (a free port) for the whole session (tests/s3_support.py)."""
    from s3_support import S3Server

    srv = S3Server()
    yield srv
    srv.stop()
