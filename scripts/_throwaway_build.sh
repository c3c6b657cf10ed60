# Sourced by scripts/sanitize.sh and scripts/debug_build.sh: copy the working
# tree (tracked and untracked files, minus what .gitignore drops, so no stale
# .so comes along) into a throwaway folder and build the extension there with
# whatever PYSCHED_* toggles the caller exported. The checkout's own in-place
# build is never touched, so other work in the tree goes on with the release
# core. Sets WORK (removed on exit unless KEEP_WORK is set) and PYTHON.

PYTHON=${PYTHON:-python3}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/pysched-build.XXXXXX")
[ -n "${KEEP_WORK:-}" ] || trap 'rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM  # so that the EXIT trap cleans up on ^C or kill too

# The build runs setup.py directly, so the interpreter's own setuptools reads
# pyproject.toml: it must be as new as [build-system] asks (a license string).
"$PYTHON" -c "
import Cython, setuptools, pytest, hypothesis
assert int(setuptools.__version__.split('.')[0]) >= 77
assert tuple(map(int, Cython.__version__.split('.')[:2])) >= (3, 1)
" 2>/dev/null || {
  echo "$PYTHON needs Cython>=3.1, setuptools>=77, pytest and hypothesis" \
       "(pip install -e '.[test]' 'Cython>=3.1' 'setuptools>=77')" >&2
  exit 2
}

(cd "$ROOT" && git ls-files -z --cached --others --exclude-standard) \
  | (cd "$ROOT" && tar --null --ignore-failed-read -T - -cf - 2>/dev/null) \
  | tar -xf - -C "$WORK"
(cd "$WORK" && "$PYTHON" setup.py -q build_ext --inplace) >"$WORK/build.log" 2>&1 || {
  cat "$WORK/build.log" >&2
  echo "build failed" >&2
  exit 2
}
ls "$WORK"/pysched/_core*.so >/dev/null

# Run from $WORK so that `import pysched` finds this build, never an editable or
# installed copy elsewhere (checked, not hoped).
check_import() {
  (cd "$WORK" && "$PYTHON" -c "
import os, sys, pysched, pysched._core as core
where = os.path.realpath(core.__file__)
assert where.startswith(os.path.realpath('$WORK')), where
print('pysched', pysched.__version__, pysched.IMPLEMENTATION, where)
")
}
