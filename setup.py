"""Build the Cython core of pysched, or a pure-Python install.

Set PYSCHED_NO_EXTENSIONS=1 to skip the extension (the package then runs on its
pure-Python twin). Set PYSCHED_DEBUG_BUILD=1 to compile with Cython's bounds and
wraparound checks back on and with C assertions enabled. Set PYSCHED_SANITIZE=1
to compile and link with AddressSanitizer and UndefinedBehaviorSanitizer (GCC or
Clang; scripts/sanitize.sh runs the suite on such a build). The two combine.
"""

import os
import sys

from setuptools import Extension, setup

NO_EXTENSIONS = bool(os.environ.get("PYSCHED_NO_EXTENSIONS")) or sys.implementation.name != "cpython"
DEBUG_BUILD = bool(os.environ.get("PYSCHED_DEBUG_BUILD"))
SANITIZE = bool(os.environ.get("PYSCHED_SANITIZE"))


def core_extension() -> list:
    from Cython.Build import cythonize

    # The release build leaves out the checks that src/_core.pyx says it may;
    # the debug build puts them back and enables C assertions.
    checks = DEBUG_BUILD
    directives = {
        "language_level": "3",
        "embedsignature": True,
        "boundscheck": checks,
        "wraparound": checks,
        "initializedcheck": checks,
    }
    compile_args = ["-O0", "-g", "-UNDEBUG"] if DEBUG_BUILD and os.name != "nt" else []
    link_args = []
    if SANITIZE:
        # The frame pointers give readable ASan stacks; the same flags at link
        # time pull in the sanitizer runtimes.
        sanitize = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-g"]
        compile_args += sanitize
        link_args += sanitize
    ext = Extension("pysched._core", ["src/_core.pyx"], extra_compile_args=compile_args,
                    extra_link_args=link_args)
    # force: the generated C depends on the directives, which a timestamp check misses.
    return cythonize([ext], compiler_directives=directives, include_path=["src"], force=True)


if NO_EXTENSIONS:
    print("*" * 60 + "\npysched: building the pure-Python package (no extension)\n" + "*" * 60)
    ext_modules = []
else:
    flavour = " +debug" * DEBUG_BUILD + " +sanitize" * SANITIZE
    print("*" * 60 + f"\npysched: building the Cython core (pysched._core){flavour}\n" + "*" * 60)
    ext_modules = core_extension()

setup(ext_modules=ext_modules)
