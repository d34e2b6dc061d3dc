"""Redis failover with real processes: a primary, a replica and three Sentinels
(spider_devkit.sentinel), the bot and two Celery workers configured through Sentinel
(``sentinel://...`` + the master's name), the fake GitHub. Six jobs are queued, signed
deliveries keep arriving, the primary is SIGKILLed; after the failover every delivery
ends in exactly one comment (the ones answered 503 meanwhile are redelivered by the
app's redelivery job), and the recovery time is printed."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from spider_devkit.devstack import DevStack
from spider_devkit.sentinel import MASTER, RedisFailoverSet
from tests.worker.helpers import make_repo

from .helpers import issue_payload

pytestmark = pytest.mark.slow

REPO = "acme/httpkit"
TITLE = "Header values containing a colon are cut off"
BODY = ("parse_header splits the header line at every colon, so `Host: example.com:8080` loses "
        "the port, and Session.read_headers returns the wrong value.")
QUEUED = 6
ENV = {
    "SPIDER_REDIS_SENTINEL_MASTER": MASTER,
    "SPIDER_K": "3",
    "SPIDER_SELECTOR": "none",
    "SPIDER_FIRST_STAGE": "bm25",
    "SPIDER_LOG_JSON": "true",
    "SPIDER_TASK_SOFT_TIME_LIMIT_S": "12",
    "SPIDER_TASK_TIME_LIMIT_S": "15",
    "SPIDER_BROKER_VISIBILITY_TIMEOUT_S": "18",
    "SPIDER_BROKER_RESTORE_INTERVAL_S": "1",
    "SPIDER_LEASE_TTL_S": "3",
    "SPIDER_RETRY_BACKOFF_S": "0.5",
    "SPIDER_RETRY_BACKOFF_MAX_S": "2",
    "SPIDER_DEFER_DELAY_S": "0.5",
    "SPIDER_DEFER_DELAY_MAX_S": "2",
    "SPIDER_GITHUB_BACKOFF_S": "0.1",
    "SPIDER_REDELIVER_INTERVAL_S": "4",
}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[DevStack, RedisFailoverSet]]:
    workdir = tmp_path_factory.mktemp("failover")
    make_repo(workdir / "repos" / REPO)
    with RedisFailoverSet(workdir / "redis") as rs, \
            DevStack(workdir, redis_url=rs.url, env=ENV, workers=2) as s:
        s.add_repo(REPO, workdir / "repos" / REPO)
        yield s, rs


def deliver(stack: DevStack, number: int) -> tuple[str, int]:
    """File issue ``number`` and deliver it; (guid, the bot's status code; 0: no answer)."""
    stack.fake.add_issue(REPO, number, TITLE, BODY)
    guid = f"f0000000-0000-0000-0000-{number:012d}"
    try:
        return guid, stack.deliver("issues", issue_payload(REPO, number, TITLE, BODY),
                                   delivery_id=guid).status_code
    except httpx.HTTPError:
        return guid, 0


def test_a_sentinel_failover_with_jobs_queued_loses_none_and_duplicates_none(
        stack: tuple[DevStack, RedisFailoverSet]) -> None:
    s, rs = stack
    answers: dict[int, int] = {}
    for n in range(1, QUEUED + 1):
        answers[n] = deliver(s, n)[1]
    assert set(answers.values()) == {202}

    stop = threading.Event()

    def keep_delivering() -> None:
        n = 100
        while not stop.is_set() and n < 160:  # bounded: one every 0.25 s, at most 60
            answers[n] = deliver(s, n)[1]
            n += 1
            time.sleep(0.25)

    sender = threading.Thread(target=keep_delivering, daemon=True)
    sender.start()
    time.sleep(1.0)
    killed = time.time()
    rs.kill_primary()
    rs.wait_for_failover(timeout_s=60)
    failed_over = time.time()
    time.sleep(3.0)  # deliveries keep arriving after the failover too
    stop.set()
    sender.join(timeout=30)
    numbers = sorted(answers)

    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        if all(s.fake.bot_comments(REPO, n) for n in numbers):
            break
        time.sleep(0.5)
    missing = [n for n in numbers if not s.fake.bot_comments(REPO, n)]
    assert missing == [], (missing, {n: answers[n] for n in missing})

    creations = [c for c in s.fake.requests("POST") if c.path.endswith("/comments")
                 and c.status == 201]
    first_after = min(c.at for c in creations if c.at > failed_over)
    refused = sorted(n for n, status in answers.items() if status != 202)
    print(f"\nSentinel failover: {len(numbers)} deliveries ({QUEUED} queued before the kill), "
          f"{len(refused)} refused while it lasted (redelivered), failover detected "
          f"{failed_over - killed:.1f} s after the kill, first comment after it "
          f"{first_after - failed_over:.1f} s later, all {len(numbers)} comments "
          f"{max(c.at for c in creations) - killed:.1f} s after the kill")
    time.sleep(20)  # a job whose acknowledgement was lost with the primary runs again by now
    creations = [c for c in s.fake.requests("POST") if c.path.endswith("/comments")
                 and c.status == 201]  # read again: a duplicate is created during the sleep
    for n in numbers:
        assert len(s.fake.bot_comments(REPO, n)) == 1, n
        made = [c for c in creations if c.path == f"/repos/{REPO}/issues/{n}/comments"]
        assert len(made) == 1, (n, len(made))
    assert len(creations) == len(numbers)
