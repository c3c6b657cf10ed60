#!/usr/bin/env bash
# Build the Cython core with AddressSanitizer + UndefinedBehaviorSanitizer
# (setup.py's PYSCHED_SANITIZE) in a throwaway copy of the tree and run the
# whole test suite on it. Fails on a failing test and on any sanitizer report.
#
#   scripts/sanitize.sh                    # the default suite (no slow tests)
#   scripts/sanitize.sh -m ""              # extra arguments go to pytest: all tests
#   PYSCHED_DEBUG_BUILD=1 scripts/sanitize.sh   # bounds checks on as well
# PYTHON picks the interpreter (default python3); needs gcc or clang.
#
# Choices:
# - The interpreter is not instrumented, so the ASan runtime must be loaded
#   first: LD_PRELOAD of the library that `cc -print-file-name=libasan.so` names.
# - PYTHONMALLOC=malloc: otherwise pymalloc serves every block up to 512 bytes
#   (the core's PyMem_* arrays included) from its own arenas, where ASan sees
#   no bounds.
# - detect_leaks=0: CPython frees little at exit by design, so LeakSanitizer
#   would report the interpreter, not us; tests/core/test_leaks.py checks our leaks.
# - Reports go to log files as well as stderr (pytest captures stderr), and any
#   log file left behind fails the run even if every test passed.
set -euo pipefail
export PYSCHED_SANITIZE=1
unset PYSCHED_NO_EXTENSIONS
CC=${CC:-gcc}
ASAN_LIB=$("$CC" -print-file-name=libasan.so)
[ -f "$ASAN_LIB" ] || { echo "no ASan runtime found by $CC -print-file-name=libasan.so" >&2; exit 2; }
# shellcheck source=scripts/_throwaway_build.sh
. "$(dirname "$0")/_throwaway_build.sh"
ldd "$WORK"/pysched/_core*.so | grep -q libasan || { echo "the build has no ASan" >&2; exit 2; }

LOGS="$WORK/sanitizer-logs"
mkdir -p "$LOGS"
# libstdc++ too, when there is one: ASan's __cxa_throw interceptor binds at
# start-up, and a C++ extension that some test imports later (matplotlib's, say)
# would otherwise abort on its first exception with "real___cxa_throw != 0".
CXX_LIB=$("$CC" -print-file-name=libstdc++.so)
[ -f "$CXX_LIB" ] && ASAN_LIB="$ASAN_LIB $CXX_LIB"
export LD_PRELOAD="$ASAN_LIB"
export PYTHONMALLOC=malloc
export ASAN_OPTIONS="detect_leaks=0:halt_on_error=1:abort_on_error=0:log_path=$LOGS/asan"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$LOGS/ubsan"
check_import

status=0
(cd "$WORK" && PYSCHED_EXPECT_IMPLEMENTATION=cython \
  "$PYTHON" -m pytest -p no:cacheprovider "$@") || status=$?

if compgen -G "$LOGS/*" >/dev/null; then
  echo "=== sanitizer reports ===" >&2
  cat "$LOGS"/* >&2
  exit 1
fi
echo "sanitizer reports: 0 (ASan + UBSan, pytest exit status $status)"
exit "$status"
