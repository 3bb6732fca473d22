"""Build the Cython kernels.

Every ``paimon_fast/_kernels/*.pyx`` becomes an extension module; plain C shared
by the kernels lives in ``csrc/`` (header-only, included by the .pyx files).
"""
import glob
import os

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))


def _extensions():
    exts = []
    for pyx in sorted(glob.glob(os.path.join("paimon_fast", "_kernels", "*.pyx"))):
        mod = pyx[:-4].replace(os.sep, ".")
        exts.append(
            Extension(
                mod,
                [pyx],
                include_dirs=[np.get_include(), os.path.join(HERE, "csrc")],
                define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
                extra_compile_args=["-O3"],
            )
        )
    return cythonize(
        exts,
        language_level=3,
        compiler_directives={
            "boundscheck": False,
            "wraparound": False,
            "cdivision": True,
            "initializedcheck": False,
        },
    )


setup(ext_modules=_extensions())
