"""The bot publishes with the same broker settings the worker consumes with."""

from __future__ import annotations

import subprocess
import sys

from bot.queue import make_publisher
from contract.broker import celery_conf
from contract.settings import AppSettings
from worker.celery_app import make_celery


def test_publisher_and_worker_share_the_broker_settings() -> None:
    settings = AppSettings(redis_url="redis://127.0.0.1:1/3", _env_file=None)  # type: ignore[call-arg]
    publisher, worker = make_publisher(settings), make_celery(settings)
    try:
        for key, value in celery_conf(settings).items():
            assert publisher.conf[key] == value == worker.conf[key], key
        assert publisher.conf.broker_transport_options["visibility_timeout"] > settings.task_time_limit_s
    finally:
        publisher.close()
        worker.close()


def test_the_contract_imports_neither_side_nor_anything_heavy() -> None:
    code = (
        "import sys, contract.broker, contract.commands, contract.jobs, contract.logs,"
        " contract.metrics, contract.policy, contract.settings\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'bot', 'worker', 'celery', "
        "'fastapi', 'torch', 'tree_sitter', 'numpy', 'githubkit'}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
