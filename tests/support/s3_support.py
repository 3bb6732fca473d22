"""A local S3-compatible server for the object-store tests: moto's server mode, in this
test process, bound to 127.0.0.1 on a free port.  Nothing leaves the machine.

``S3Server.uri(prefix)`` is an ``s3://`` URI carrying the endpoint and the (fake)
credentials as pyarrow URI options, so the same URI works in this process and on
Spark's executors (the options travel with the pickled filesystem); ``filesystem()``
is the equivalent ``pyarrow.fs.S3FileSystem`` for APIs that take one.
"""

from __future__ import annotations

import os
import uuid

import pytest

KEY, SECRET, REGION = "testing-key", "testing-secret", "us-east-1"


class S3Server:
    def __init__(self):
        moto_server = pytest.importorskip("moto.server", reason="moto[server] is not installed (test extra)")
        pytest.importorskip("boto3", reason="boto3 is not installed (test extra)")
        import logging

        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        self._server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        self._server.start()
        host, port = self._server.get_host_and_port()
        self.endpoint = f"{host}:{port}"
        self.endpoint_url = f"http://{self.endpoint}"
        import boto3

        self.client = boto3.client(
            "s3",
            endpoint_url=self.endpoint_url,
            aws_access_key_id=KEY,
            aws_secret_access_key=SECRET,
            region_name=REGION,
        )

    def stop(self):
        self._server.stop()

    def new_bucket(self) -> str:
        name = f"pf-{uuid.uuid4().hex[:12]}"
        self.client.create_bucket(Bucket=name)
        return name

    def uri(self, bucket: str, prefix: str = "") -> str:
        path = f"{bucket}/{prefix}".rstrip("/")
        return f"s3://{KEY}:{SECRET}@{path}?endpoint_override={self.endpoint}&scheme=http&region={REGION}"

    def filesystem(self):
        import pyarrow.fs as pafs

        return pafs.S3FileSystem(
            access_key=KEY, secret_key=SECRET, endpoint_override=self.endpoint, scheme="http", region=REGION
        )

    def storage_options(self) -> dict:
        """The same endpoint and credentials as the ``hudi`` package's storage options."""
        return {
            "aws_endpoint_url": self.endpoint_url,
            "aws_allow_http": "true",
            "aws_access_key_id": KEY,
            "aws_secret_access_key": SECRET,
            "aws_region": REGION,
        }

    def upload_dir(self, local_dir: str, bucket: str, prefix: str) -> int:
        """Copy a local directory tree to ``s3://bucket/prefix``; returns the number of files."""
        n = 0
        for d, _, files in os.walk(local_dir):
            for f in files:
                p = os.path.join(d, f)
                rel = os.path.relpath(p, local_dir).replace(os.sep, "/")
                with open(p, "rb") as fh:
                    self.client.put_object(Bucket=bucket, Key=f"{prefix}/{rel}".lstrip("/"), Body=fh.read())
                n += 1
        return n

    def keys(self, bucket: str, prefix: str = "") -> list:
        out = []
        for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            out += [o["Key"] for o in page.get("Contents", [])]
        return sorted(out)
