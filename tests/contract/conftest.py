"""Fixtures of the contract tests: a private Redis (for the metrics added up in it)."""

from __future__ import annotations

from tests.worker import helpers

redis_url = helpers.redis_url  # a private redis-server for the session
redis_client = helpers.redis_client  # emptied before each test
