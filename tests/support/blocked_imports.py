"""Run Python code in a fresh interpreter where some packages cannot be imported.

A test that must hold without an optional package (pandas above all: pyarrow reaches for it on
its own) runs its code here with the package blocked, in every CI job, including the ones that
have the package installed.  The block is an import hook (``ModuleNotFoundError``, as for a
package that is not installed); ``sys.modules`` is left alone, since pyarrow looks there first.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

_HOOK = """
import sys

class _Blocked:
    def __init__(self, names):
        self.names = names

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in self.names:
            raise ModuleNotFoundError(f"No module named {name!r} (blocked by the test)", name=name)

sys.meta_path.insert(0, _Blocked(set(%r)))
"""


def run_python(code: str, block=(), timeout: float = 300) -> subprocess.CompletedProcess:
    """Run ``code`` (dedented) in a new interpreter with the packages ``block`` unimportable."""
    src = (_HOOK % (list(block),) if block else "") + textwrap.dedent(code)
    return subprocess.run([sys.executable, "-c", src], capture_output=True, text=True, timeout=timeout)


def json_of(code: str, block=()):
    """The JSON the code prints last (it must exit 0)."""
    p = run_python(code, block)
    assert p.returncode == 0, p.stderr[-4000:]
    return json.loads(p.stdout.strip().splitlines()[-1])
