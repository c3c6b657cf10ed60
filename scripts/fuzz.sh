#!/usr/bin/env bash
# A coverage-guided differential fuzz campaign of the core (atheris): the debug
# build (bounds checks on) of the compiled core against the pure twin.
# tests/fuzz/fuzz_core.py (the Scheduler) and tests/fuzz/fuzz_queue.py (the
# bounded queue) say what each input does and checks.
#
#   scripts/fuzz.sh 600                    # ten minutes; extra arguments go to libFuzzer
#   FUZZ_TARGET=queue scripts/fuzz.sh 600  # the bounded queue instead
#
# Seeds from tests/fuzz/corpus/; new inputs go to a scratch corpus (printed at
# the end, kept), failing ones to crash-* files there. Copy a minimised
# crasher into tests/fuzz/corpus/ once fixed: the suite replays that folder.
# PYTHON picks the interpreter (default python3), which needs atheris.
set -euo pipefail
SECONDS_TO_RUN=${1:-600}
shift || true
export PYSCHED_DEBUG_BUILD=1
unset PYSCHED_NO_EXTENSIONS
# shellcheck source=scripts/_throwaway_build.sh
. "$(dirname "$0")/_throwaway_build.sh"
"$PYTHON" -c "import atheris" 2>/dev/null || { echo "$PYTHON needs atheris (pip install atheris)" >&2; exit 2; }
check_import
OUT=${FUZZ_CORPUS:-$(mktemp -d "${TMPDIR:-/tmp}/pysched-corpus.XXXXXX")}
mkdir -p "$OUT"
cd "$WORK/tests"
status=0
TARGET=fuzz.fuzz_core
SEEDS=fuzz/corpus
if [ "${FUZZ_TARGET:-scheduler}" = queue ]; then
  TARGET=fuzz.fuzz_queue
  SEEDS=  # the Scheduler's corpus decodes to other operations
fi
# shellcheck disable=SC2086  # SEEDS is empty or one folder
PYTHONPATH="$WORK" "$PYTHON" -m "$TARGET" "$OUT" $SEEDS \
  -max_total_time="$SECONDS_TO_RUN" -timeout=10 -rss_limit_mb=2048 \
  -artifact_prefix="$OUT/" -print_final_stats=1 "$@" || status=$?
echo "corpus and any crash-* files: $OUT"
exit "$status"
