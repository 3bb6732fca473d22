"""Build the Cython kernels.

Every ``paimon_fast/_kernels/*.pyx`` becomes an extension module; plain C shared
by the kernels lives in ``csrc/`` (header-only, included by the .pyx files).

The package is useless without its kernels, so the build stops with one clear
message (what is missing, the command that installs it) when the kernel
sources, a C compiler or the Python headers are missing, instead of
installing a package whose first use fails.

``PAIMON_FAST_OPT`` sets the optimisation flag the kernels are compiled with (``-O3`` unless
set).  tools/sanitize.sh builds with ``-O0``: its ASan + UBSan build takes a quarter of ``-O1``'s
time and its tests run as fast (its comment gives the figures).

A kernel built once is kept in ``build/kernel-cache/`` under a key of everything its build reads
(its C source, csrc/ and the .pxd files, every header directory's files, the compiler's command
line and version, the flags): a second ``pip install -e .`` in another virtualenv of the same
checkout (CI's two Quickstart jobs) copies it instead of compiling it again, and any change of
what it reads compiles it again.  ``build_ext --force`` always compiles.
"""

import glob
import hashlib
import os
import shutil
import subprocess
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
KERNELS = os.path.join("paimon_fast", "_kernels")
KERNEL_CACHE = os.path.join(HERE, "build", "kernel-cache")
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

    def build_extension(self, ext):
        if self.force:
            return super().build_extension(ext)
        target = self.get_ext_fullpath(ext.name)
        cached = os.path.join(KERNEL_CACHE, f"{ext.name}-{self._build_key(ext)}{os.path.splitext(target)[1]}")
        if os.path.isfile(cached):
            os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
            shutil.copyfile(cached, target)
            print(f"reusing {ext.name} from {os.path.relpath(cached, HERE)} (built before from the same inputs)")
            return None
        super().build_extension(ext)
        try:  # the cache is only a shortcut: a failure to fill it never fails the build
            os.makedirs(KERNEL_CACHE, exist_ok=True)
            for old in glob.glob(os.path.join(KERNEL_CACHE, f"{ext.name}-*")):
                os.remove(old)  # one entry a kernel: the newest build
            tmp = f"{cached}.{os.getpid()}.tmp"
            shutil.copyfile(target, tmp)
            os.replace(tmp, cached)
        except OSError:
            pass
        return None

    def _build_key(self, ext):
        """A digest of everything compiling ``ext`` reads: its sources, the project's headers and
        .pxd files, the files of every include directory (by content: build isolation puts numpy's
        headers in a new temporary directory each time), the compiler's and linker's command lines
        and version, and the extension's flags."""
        h = hashlib.sha256()

        def add(*parts):
            for part in parts:
                h.update(repr(part).encode())
                h.update(b"\0")

        def add_file(path):
            with open(path, "rb") as f:
                h.update(f.read())

        for src in ext.sources:
            add(os.path.basename(src))
            with open(src, "rb") as f:
                text = f.read()
            # Cython's metadata comment names the include directories, numpy's in build isolation's
            # temporary directory: a comment, and no input of the compiler
            start, end = text.find(b"/* BEGIN: Cython Metadata"), text.find(b"END: Cython Metadata */")
            h.update(text[:start] + text[end:] if 0 <= start < end else text)
        for pattern in (os.path.join(HERE, "csrc", "*.h"), os.path.join(HERE, KERNELS, "*.pxd")):
            for path in sorted(glob.glob(pattern)):
                add(os.path.basename(path))
                add_file(path)
        for d in [*ext.include_dirs, *(self.include_dirs or [])]:
            h.update(self._dir_digest(d))
        cc = list(getattr(self.compiler, "compiler_so", None) or [])
        add(cc, list(getattr(self.compiler, "linker_so", None) or []), self._version(cc[:1]), sys.version)
        add(sysconfig.get_platform())
        add(ext.define_macros, ext.undef_macros, ext.extra_compile_args, ext.extra_link_args, ext.libraries)
        add(os.environ.get("CFLAGS"), os.environ.get("CPPFLAGS"), os.environ.get("LDFLAGS"))
        return h.hexdigest()[:32]

    def _dir_digest(self, d) -> bytes:
        """A digest of the files under include directory ``d`` (names and contents), computed once
        a build: every kernel names the same Python and numpy headers, about 300 files."""
        memo = self.__dict__.setdefault("_dir_digests", {})
        if d not in memo:
            h = hashlib.sha256()
            for root, dirs, files in os.walk(d):
                dirs.sort()
                for name in sorted(files):
                    h.update(os.path.relpath(os.path.join(root, name), d).encode() + b"\0")
                    with open(os.path.join(root, name), "rb") as f:
                        h.update(f.read())
                    h.update(b"\0")
            memo[d] = h.digest()
        return memo[d]

    def _version(self, cc) -> "str | None":
        """What the compiler ``cc`` (a one-item list; empty: none known) says of its version, asked
        once a build."""
        memo = self.__dict__.setdefault("_versions", {})
        key = tuple(cc)
        if key not in memo:
            try:
                memo[key] = subprocess.run([cc[0], "--version"], capture_output=True, text=True, timeout=60).stdout
            except (OSError, IndexError, subprocess.SubprocessError):
                memo[key] = None
        return memo[key]


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


if __name__ == "__main__":  # (pip's build backend runs this file as __main__; tests import it)
    setup(ext_modules=_extensions(), cmdclass={"build_ext": CheckedBuildExt})
