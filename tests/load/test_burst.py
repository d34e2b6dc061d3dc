"""A burst of 1,000 signed deliveries (mixed events, redeliveries included) against the bot
on 127.0.0.1 with two worker processes: every accepted job ends in exactly one comment or
an explicit skip, and the metrics say the same. The figures (deliveries/s, p50/p99) are
printed, never asserted: ``python -m tests.load.burst`` reports them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.load.burst import DONE, run_burst

pytestmark = pytest.mark.slow


def test_a_burst_of_1000_deliveries_ends_in_one_comment_or_a_skip_per_job(tmp_path: Path) -> None:
    result = run_burst(tmp_path, deliveries=1000, workers=2, senders=16, drain_timeout_s=600)
    print(json.dumps(result.summary(), indent=1))  # shown with -s; figures, not assertions
    assert result.problems == []
    assert result.accepted == 1000 and not any(a.startswith("5") for a in result.answers)
    assert result.answers["202 queued"] == sum(result.outcomes.values()) > 200
    assert set(result.outcomes) <= set(DONE) and result.outcomes["skipped"] > 0
    # /metrics agrees with the jobs' own results, outcome by outcome: the delivered jobs and
    # those an index job ran again once the repository's full index was recorded
    ran = result.outcomes + result.reruns
    for status, n in ran.items():
        assert result.metrics[f'spider_jobs_total{{outcome="{status}"}}'] == n
    assert sum(v for k, v in result.metrics.items() if k.startswith("spider_jobs_total")) == ran.total()
    # every delivered job that was not skipped ran the engine (a rerun may stop before it)
    ran_engine = sum(n for s, n in result.outcomes.items() if s != "skipped")
    assert result.metrics["spider_query_seconds_count"] >= ran_engine
    assert result.metrics['spider_github_calls_total{status="201"}'] >= result.outcomes["created"]
    assert result.metrics['spider_webhook_deliveries_total{outcome="duplicate"}'] > 0
