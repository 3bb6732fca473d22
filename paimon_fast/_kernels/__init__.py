"""Compiled kernels (Cython over contiguous numpy / Arrow buffers).

Import :func:`load` rather than the modules directly: it turns a missing or
broken build into one clear error instead of silently running slow code.
"""

import importlib


class KernelImportError(ImportError):
    pass


def load(name: str, twin: bool = False):
    """Import ``paimon_fast._kernels.<name>`` or explain how to build it.  ``twin``: its
    pure-Python twin, ``paimon_fast.reference.<name>`` (the same functions, for tests and
    benchmarks that run it in the kernel's place): the one place an implementation is picked
    by name, so no product module imports a twin."""
    if twin:
        return importlib.import_module(f"paimon_fast.reference.{name}")
    try:
        return importlib.import_module(f"paimon_fast._kernels.{name}")
    except ImportError as e:
        raise KernelImportError(
            f"paimon_fast's compiled kernel '{name}' cannot be imported ({e}). "
            "Install the package with `pip install .` (or `pip install -e .`) so the Cython "
            "extensions are built; a C compiler and the Python headers are needed."
        ) from e
