import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def s3_server():
    """A moto S3 server on 127.0.0.1 (a free port) for the whole session (tests/s3_support.py)."""
    from s3_support import S3Server

    srv = S3Server()
    yield srv
    srv.stop()
