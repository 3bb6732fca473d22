import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import pytest  # noqa: E402


def pytest_xdist_auto_num_workers(config):
    """``-n auto``: a worker per core, at most 4 (each may start a local Spark of its own)."""
    return max(1, min(os.cpu_count() or 1, 4))


@pytest.fixture(scope="session")
def s3_server():
    """A moto S3 server on 127.0.0.1 (a free port) for the whole session (tests/s3_support.py)."""
    from s3_support import S3Server

    srv = S3Server()
    yield srv
    srv.stop()
