"""Redis down for 10 s while 10 signed deliveries arrive (the short version of
``python -m tests.load.outage``): every delivery is accepted at last (the 503s redelivered
by the workers' redelivery job), every job ends in one comment or an explicit skip, no
comment twice. Figures are printed, not asserted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.load.outage import run_outage

pytestmark = pytest.mark.slow


def test_deliveries_refused_while_redis_is_down_are_redelivered_and_none_duplicated(
        tmp_path: Path) -> None:
    result = run_outage(tmp_path, deliveries=10, outage_s=10, interval_s=3, timeout_s=240)
    print(json.dumps(result.summary(), indent=1))
    assert result.problems == []
    assert result.refused > 0 and result.redeliveries >= result.refused
    assert result.accepted == result.guids and result.duplicates == 0
    assert result.metrics.get('spider_redeliveries_total{outcome="requested"}', 0) >= result.refused
