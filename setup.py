"""Build the Cython core of pysched, or a pure-Python install.

Set PYSCHED_NO_EXTENSIONS=1 to skip the extension (the package then runs on its
pure-Python twin). Set PYSCHED_DEBUG_BUILD=1 to compile with Cython's bounds and
wraparound checks back on and with C assertions enabled.
"""

import os
import sys

from setuptools import Extension, setup

NO_EXTENSIONS = bool(os.environ.get("PYSCHED_NO_EXTENSIONS")) or sys.implementation.name != "cpython"
DEBUG_BUILD = bool(os.environ.get("PYSCHED_DEBUG_BUILD"))


def core_extension() -> list:
    from Cython.Build import cythonize

    directives = {"language_level": "3", "embedsignature": True}
    compile_args = []
    if DEBUG_BUILD:
        # Checks the release build leaves out, where the code states why it may.
        directives.update(boundscheck=True, wraparound=True, initializedcheck=True)
        if os.name != "nt":
            compile_args = ["-O0", "-g", "-UNDEBUG"]
    ext = Extension("pysched._core", ["src/_core.pyx"], extra_compile_args=compile_args)
    return cythonize([ext], compiler_directives=directives, include_path=["src"])


if NO_EXTENSIONS:
    print("*" * 60 + "\npysched: building the pure-Python package (no extension)\n" + "*" * 60)
    ext_modules = []
else:
    print("*" * 60 + "\npysched: building the Cython core (pysched._core)\n" + "*" * 60)
    ext_modules = core_extension()

setup(ext_modules=ext_modules)
