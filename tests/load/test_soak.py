"""The soak's two-minute version (``python -m tests.load.soak --minutes 2``): the whole app
under steady traffic while a worker is SIGKILLed, a pool process is SIGKILLed, Redis is
killed and restarted, PostgreSQL is restarted while a fix is scored and GitHub fails about
5% of its calls. Nothing is lost or doubled: every delivery accepted, every accepted issue
one comment or an explicit skip, every merged fix scored once. Figures are printed, never
asserted."""

from __future__ import annotations

import glob
import os
import shutil
from pathlib import Path

import pytest

from tests.load.soak import SoakConfig, run_soak, schedule, table

pytestmark = pytest.mark.slow


def test_the_fault_schedule_strikes_every_fault_at_least_once_even_in_two_minutes() -> None:
    two = schedule(120)
    assert two["worker"] == [20.0, 80.0] and two["pool"] == [50.0, 110.0]
    assert len(two["redis"]) == 1 and len(two["postgres"]) == 1
    thirty = schedule(1800)
    assert len(thirty["worker"]) == 30 and len(thirty["redis"]) == 4
    assert len(thirty["postgres"]) == 5


def test_two_minutes_of_everything_failing_lose_nothing_and_double_nothing(
        tmp_path: Path) -> None:
    if not (glob.glob("/usr/lib/postgresql/*/bin/initdb") or shutil.which("initdb")):
        if os.environ.get("CI"):
            pytest.fail("the soak needs PostgreSQL's server binaries (.ci/run installs them)")
        pytest.skip("PostgreSQL's server binaries (initdb, pg_ctl) are not installed")
    result = run_soak(tmp_path, SoakConfig(minutes=2))
    print("\n" + table(result))
    assert result.problems == []
    assert not result.lost_issues and not result.duplicate_comments
    assert not result.never_accepted and not result.jobs_unfinished
    assert result.fixes_merged > 0 and result.fixes_once == result.fixes_merged
    assert result.issues_accepted == result.issues_one_comment + result.issues_skipped
    # the faults all struck (what was survived was really there)
    assert result.faults["worker SIGKILLed"] >= 1 and result.faults["pool process SIGKILLed"] >= 1
    assert result.faults["Redis SIGKILLed and restarted"] == 1
    assert result.faults["PostgreSQL stopped and restarted"] == 1
    assert set(result.chaos) == {"5xx", "timeout", "429", "403-secondary"}
    assert result.bad_signatures and set(result.bad_signatures) == {"401"}
    assert result.redelivered > 0 and result.answers["202 duplicate"] > 0
