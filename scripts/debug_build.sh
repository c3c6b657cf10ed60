#!/usr/bin/env bash
# Run the whole test suite on the debug build: Cython's bounds, wraparound and
# initialisation checks back on, C assertions enabled, -O0 -g (setup.py's
# PYSCHED_DEBUG_BUILD). An index the release build trusts to be in range then
# raises IndexError instead of reading past an array.
#
#   scripts/debug_build.sh                 # the default suite
#   scripts/debug_build.sh -m slow         # extra arguments go to pytest
#   PYSCHED_SANITIZE=1 scripts/debug_build.sh   is what scripts/sanitize.sh runs
#                                               with PYSCHED_DEBUG_BUILD=1 set
# PYTHON picks the interpreter (default python3).
set -euo pipefail
export PYSCHED_DEBUG_BUILD=1
unset PYSCHED_NO_EXTENSIONS
# shellcheck source=scripts/_throwaway_build.sh
. "$(dirname "$0")/_throwaway_build.sh"
check_import
cd "$WORK"
PYSCHED_EXPECT_IMPLEMENTATION=cython "$PYTHON" -m pytest -p no:cacheprovider "$@"
