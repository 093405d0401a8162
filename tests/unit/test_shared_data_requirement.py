"""A fresh clone has no ../shared: outside CI the tests that read the XQ-MEval data skip and the run ends
with one line saying how many and how to provide the data; in CI (CI=true) they are mandatory. Services
keep REQUIRE_SERVICES. Each case runs pytest in a subprocess on a real test that uses the data."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DATA_TEST = "tests/injection/test_checks_on_release.py::test_checks_over_the_release"


def run_pytest(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in ("CI", "REQUIRE_SHARED_DATA", "PYTEST_ADDOPTS")}
    base.update(
        XQMEVAL_SHARED_DATA=str(tmp_path / "no-shared-data"),
        XQMEVAL_DATA_DIR=str(tmp_path / "data"),
        REQUIRE_SERVICES="1",
        **env,
    )
    return subprocess.run(
        [sys.executable, "-m", "pytest", DATA_TEST, "-q", "-p", "no:cacheprovider"],
        cwd=REPO,
        env=base,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.slow
def test_outside_ci_missing_data_skips_and_the_run_ends_saying_how_to_provide_it(tmp_path):
    done = run_pytest(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.strip().splitlines()
    assert "1 skipped" in lines[-2]
    missing = tmp_path / "no-shared-data"
    assert lines[-1].startswith(f"1 test(s) skipped: no shared XQ-MEval data at {missing}.")
    assert "XQMEVAL_SHARED_DATA" in lines[-1]


@pytest.mark.slow
def test_in_ci_missing_data_fails_the_run(tmp_path):
    done = run_pytest(tmp_path, CI="true")
    assert done.returncode != 0
    assert "required but missing: shared XQ-MEval data" in done.stdout
    assert "skipped: no shared XQ-MEval data" not in done.stdout


@pytest.mark.slow
def test_require_shared_data_makes_it_mandatory_outside_ci_too(tmp_path):
    done = run_pytest(tmp_path, REQUIRE_SHARED_DATA="1")
    assert done.returncode != 0 and "required but missing: shared XQ-MEval data" in done.stdout
