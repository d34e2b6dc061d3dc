"""Every fit's ``cross_validate`` returns the one typed :class:`CVReport`: its choice
typed per fit, the instances, the folds, and the figures its JSON report holds."""

from __future__ import annotations

import json

from spider.learn import adapter, calibration, fusion, head, ranker, selector
from spider.learn.cv import CVReport
from spider.rank.calibration import Calibration
from tests.spider.learn import (
    test_adapter,
    test_calibration,
    test_fusion,
    test_head,
    test_ranker,
    test_selector,
)


def _check(report: object, instances: int) -> CVReport[object]:
    assert isinstance(report, CVReport)
    assert report.instances == instances and report.folds
    assert json.loads(json.dumps(report.to_json())) == report.to_json()  # the JSON report
    assert dict(report) == report.to_json()  # and it reads as that report
    return report


def test_the_pool_ranker_reports_its_parameters_and_calibration() -> None:
    report = _check(ranker.cross_validate(test_ranker.ROWS, test_ranker.SMALL), 24)
    assert isinstance(report.chosen, ranker.RankerChoice)
    assert report.chosen.params == test_ranker.SMALL[0]
    assert isinstance(report.chosen.calibration, Calibration)


def test_the_adapter_reports_the_point_it_chose() -> None:
    grid = [adapter.AdapterParams(l2=1.0, epochs=1), test_adapter.TEACH]
    report = _check(adapter.cross_validate(test_adapter._rows(48), grid=grid, folds=2), 48)
    assert report.chosen == test_adapter.TEACH and report.folds == "2 folds of whole repositories"


def test_the_head_reports_its_pool_and_c() -> None:
    report = _check(head.cross_validate(test_head.ROWS, 20, grid=[(30, 1.0)]), 15)
    assert report.chosen == (30, 1.0) == (report["pool"], report["C"])


def test_the_selector_reports_its_margin() -> None:
    report = _check(selector.cross_validate(test_selector.RECORDS, 20), 12)
    assert report.chosen == report["margin"]


def test_the_calibration_reports_the_calibration_fitted_on_every_row() -> None:
    report = _check(calibration.cross_validate(test_calibration._rows(), test_calibration.K), 60)
    assert isinstance(report.chosen, Calibration)
    assert round(report.chosen.slope, 5) == report["slope"]


def test_the_fusion_reports_the_best_weights_on_every_row() -> None:
    rows = [test_fusion._row(f"o/r{i}", 0) for i in range(3)]
    report = _check(fusion.cross_validate(rows), 3)
    assert report.chosen == report["best_on_all"]
