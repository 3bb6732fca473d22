"""Build the Cython kernels.

Every ``paimon_fast/_kernels/*.pyx`` becomes an extension module; plain C shared
by the kernels lives in ``csrc/`` (header-only, included by the .pyx files).

The package is useless without its kernels, so the build stops with one clear
message (what is missing, the command that installs it) when the kernel
sources, a C compiler or the Python headers are missing, instead of
installing a package whose first use fails.

``PAIMON_FAST_OPT`` sets the optimisation flag the kernels are compiled with (``-O3`` unless
set).  tools/sanitize.sh builds with ``-O1``: its ASan + UBSan build takes a third of the time and
its tests run as fast, as the sanitizers' documentation recommends for them.
"""

import glob
import os
import shutil
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
KERNELS = os.path.join("paimon_fast", "_kernels")
# every kernel needs these; a source tree (or sdist) without them cannot build a working package
REQUIRED_KERNELS = (
    "bitmap",
    "bitslice",
    "bloom",
    "dirscan",
    "dv",
    "globalindex",
    "hashindex",
    "order",
    "roaring",
    "sst",
)

INSTALL_CC = (
    "install one: `apt-get install gcc` (Debian/Ubuntu), `dnf install gcc` (Fedora/RHEL), "
    "`apk add build-base` (Alpine), `xcode-select --install` (macOS)"
)


def _fail(msg):
    sys.stderr.write(f"\nerror: paimon-fast cannot be built: {msg}\n\n")
    raise SystemExit(1)


def _python_headers_hint():
    v = f"{sys.version_info.major}.{sys.version_info.minor}"
    return (
        f"install them: `apt-get install python{v}-dev` (or python3-dev; Debian/Ubuntu), "
        f"`dnf install python{v.replace('.', '')}-devel` or python3-devel (Fedora/RHEL), "
        "`apk add python3-dev` (Alpine)"
    )


def _check_sources():
    pyx = sorted(glob.glob(os.path.join(HERE, KERNELS, "*.pyx")))
    found = {os.path.basename(p)[:-4] for p in pyx}
    missing = [k for k in REQUIRED_KERNELS if k not in found]
    if missing:
        _fail(
            f"the kernel sources {', '.join(k + '.pyx' for k in missing)} are missing from "
            f"{os.path.join(HERE, KERNELS)} (an incomplete checkout or sdist: the .pyx files and csrc/ must be "
            "shipped with the sources)"
        )
    if not glob.glob(os.path.join(HERE, "csrc", "*.h")):
        _fail(f"the C headers in {os.path.join(HERE, 'csrc')} are missing (an incomplete checkout or sdist)")
    return [os.path.relpath(p, HERE) for p in pyx]


class CheckedBuildExt(build_ext):
    """build_ext that first checks for a C compiler and Python.h and names the fix when one is missing,
    and compiles the extensions in parallel on every core (unless ``--parallel`` / ``-j`` says otherwise)."""

    def finalize_options(self):
        super().finalize_options()
        if not self.parallel:
            self.parallel = os.cpu_count() or 1

    def build_extensions(self):
        cmd = getattr(self.compiler, "compiler_so", None) or getattr(self.compiler, "compiler", None)
        exe = cmd[0] if cmd else None
        if exe and not (shutil.which(exe) or os.path.isfile(exe)):
            _fail(f"no C compiler: `{exe}` is not on the PATH; {INSTALL_CC}")
        include = sysconfig.get_paths().get("include") or ""
        dirs = [include] + list(self.include_dirs or [])
        if not any(os.path.isfile(os.path.join(d, "Python.h")) for d in dirs if d):
            _fail(f"the Python headers are missing (no Python.h in {include}); {_python_headers_hint()}")
        super().build_extensions()


def _extensions():
    pyx_files = _check_sources()
    try:
        import numpy as np
        from Cython.Build import cythonize
    except ImportError as e:  # only without build isolation (pip --no-build-isolation, setup.py)
        _fail(
            f"the build needs {e.name}: `pip install cython numpy` (pip install does this on its own "
            "unless --no-build-isolation is given)"
        )
    opt = os.environ.get("PAIMON_FAST_OPT", "-O3").strip()
    if opt not in ("-O0", "-O1", "-O2", "-O3", "-Os", "-Og"):
        _fail(f"PAIMON_FAST_OPT must be one of -O0, -O1, -O2, -O3, -Os, -Og, not {opt!r}")
    # no debug info (1/5 the size) unless CFLAGS asks for it (tools/sanitize.sh: its reports name lines)
    debug = [] if "-g" in os.environ.get("CFLAGS", "").split() else ["-g0"]
    exts = []
    for pyx in pyx_files:
        mod = pyx[:-4].replace(os.sep, ".")
        # the Parquet reader runs its own threads and loads codec libraries with dlopen
        libs = ["pthread", "dl"] if mod.endswith(".pqread") and sys.platform.startswith("linux") else []
        exts.append(
            Extension(
                mod,
                [pyx],
                include_dirs=[np.get_include(), os.path.join(HERE, "csrc")],
                define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
                extra_compile_args=[opt] + debug,
                libraries=libs,
            )
        )
    return cythonize(
        exts,
        nthreads=os.cpu_count() or 1,
        language_level=3,
        compiler_directives={
            "boundscheck": False,
            "wraparound": False,
            "cdivision": True,
            "initializedcheck": False,
        },
    )


setup(ext_modules=_extensions(), cmdclass={"build_ext": CheckedBuildExt})
