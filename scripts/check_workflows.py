"""Check that the GitHub workflows are valid YAML and build exactly the intended wheels.

The intended builds are what ``cibuildwheel --print-build-identifiers`` lists
for linux, macos and windows under pyproject.toml's [tool.cibuildwheel]. The
wheels workflow runs one job per (CPython, runner), narrowing that selection
with CIBW_BUILD and CIBW_ARCHS; this script asks cibuildwheel what each job
would build and requires the jobs to cover every intended identifier exactly
once. It also checks that tests.yml runs every CPython that gets a wheel, in
each of the cython, pure and debug builds.

Needs pyyaml and cibuildwheel (the version wheels.yml pins: see
``--cibuildwheel-version``). Exit status 0 when everything holds.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]  # scripts only; no stubs needed

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = ROOT / ".github" / "workflows"
PLATFORMS = ("linux", "macos", "windows")


def load(name: str) -> dict[str, Any]:
    with open(WORKFLOWS / name, encoding="utf-8") as f:
        data = yaml.safe_load(f)
    if not isinstance(data, dict) or "jobs" not in data:
        raise SystemExit(f"{name}: not a workflow (no jobs)")
    return data


def pinned_cibuildwheel(wheels: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The wheels job's cibuildwheel step and the version it pins."""
    for step in wheels["jobs"]["wheels"]["steps"]:
        match = re.fullmatch(r"pypa/cibuildwheel@v(\d+(?:\.\d+)*)", step.get("uses", ""))
        if match:
            return step, match.group(1)
    raise SystemExit("wheels.yml: no pypa/cibuildwheel@vX.Y.Z step in the wheels job")


def identifiers(platform: str, **env: str) -> list[str]:
    """What cibuildwheel would build for ``platform`` with these CIBW_* overrides."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("CIBW_")}
    out = subprocess.run(
        [sys.executable, "-m", "cibuildwheel", "--print-build-identifiers",
         "--platform", platform],
        cwd=ROOT, env={**clean, **env}, check=True, capture_output=True, text=True,
    ).stdout
    return out.split()


def check_wheels(wheels: dict[str, Any]) -> list[str]:
    errors = []
    step, version = pinned_cibuildwheel(wheels)
    import cibuildwheel

    if cibuildwheel.__version__ != version:
        errors.append(f"wheels.yml pins cibuildwheel {version}, "
                      f"this check runs {cibuildwheel.__version__}")
    step_env = step.get("env", {})
    expected_env = {"CIBW_BUILD": "${{ matrix.python }}-*",
                    "CIBW_ARCHS": "${{ matrix.runner.arch }}",
                    "CIBW_PLATFORM": "${{ matrix.runner.platform }}"}
    for key, value in expected_env.items():
        if step_env.get(key) != value:
            errors.append(f"wheels.yml: cibuildwheel step must set {key}: {value}")
    if not str(step.get("with", {}).get("package-dir", "")).startswith("${{ env.SDIST"):
        errors.append("wheels.yml: cibuildwheel must build from the sdist")

    matrix = wheels["jobs"]["wheels"]["strategy"]["matrix"]
    jobs = [(runner, python) for runner in matrix["runner"] for python in matrix["python"]]
    # Each query starts cibuildwheel (about 2 s), so they run side by side.
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        per_platform = list(pool.map(identifiers, PLATFORMS))
        per_job = list(pool.map(
            lambda job: identifiers(job[0]["platform"], CIBW_BUILD=f"{job[1]}-*",
                                    CIBW_ARCHS=job[0]["arch"]), jobs))
    built: Counter[str] = Counter()
    for (runner, python), ids in zip(jobs, per_job, strict=True):
        if not ids:
            errors.append(f"job {python} {runner['os']} {runner['arch']} builds nothing")
        built.update(ids)
    intended = [i for ids in per_platform for i in ids]
    print(f"cibuildwheel {cibuildwheel.__version__}: {len(intended)} intended builds")
    for platform, ids in zip(PLATFORMS, per_platform, strict=True):
        print(f"  {platform}: {' '.join(ids)}")
    print(f"wheels.yml: {len(jobs)} jobs build {sum(built.values())} wheels")
    for ident in sorted(set(intended) - set(built)):
        errors.append(f"wheels.yml never builds {ident}")
    for ident in sorted(set(built) - set(intended)):
        errors.append(f"wheels.yml builds {ident}, which pyproject does not select")
    for ident, count in sorted(built.items()):
        if count > 1:
            errors.append(f"wheels.yml builds {ident} in {count} jobs")
    return errors


def check_tests(tests: dict[str, Any], wheels: dict[str, Any]) -> list[str]:
    errors = []
    matrix = tests["jobs"]["test"]["strategy"]["matrix"]
    pythons = {"cp" + v.replace(".", "") for v in matrix["python"]}
    wheel_pythons = set(wheels["jobs"]["wheels"]["strategy"]["matrix"]["python"])
    if pythons != wheel_pythons:
        errors.append(f"tests.yml tests {sorted(pythons)}, wheels are built for "
                      f"{sorted(wheel_pythons)}")
    builds = set(matrix["build"]) | {inc.get("build") for inc in matrix.get("include", [])}
    for build in ("cython", "pure", "debug"):
        if build not in builds:
            errors.append(f"tests.yml has no {build} build")
    return errors


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cibuildwheel-version", action="store_true",
                        help="print the cibuildwheel version wheels.yml pins, and exit")
    args = parser.parse_args()
    wheels = load("wheels.yml")
    if args.cibuildwheel_version:
        print(pinned_cibuildwheel(wheels)[1])
        return 0
    for path in sorted(WORKFLOWS.glob("*.yml")):
        load(path.name)
        print(f"{path.relative_to(ROOT)}: valid YAML")
    errors = check_wheels(wheels) + check_tests(load("tests.yml"), wheels)
    for error in errors:
        print("ERROR:", error)
    print("workflows: OK" if not errors else f"workflows: {len(errors)} error(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
