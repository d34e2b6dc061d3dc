"""The FastAPI application: ``POST /webhook``, ``GET /healthz``, ``GET /metrics`` (the
bot's deliveries by outcome, and the workers' jobs, durations and GitHub calls, which
workers add up in Redis: see ``contract.metrics``).

A delivery is answered in milliseconds: size cap, signature, headers, content type, JSON,
routing, dedupe, enqueue. Anything slow happens in the worker. Serve with ``uvicorn bot.app:app``;
the settings are checked at start-up and the process refuses to start without a secret.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any

import redis
from fastapi import Depends, FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, generate_latest
from starlette.concurrency import run_in_threadpool

from bot import signature
from bot.dedupe import DeliveryLedger, check_delivery_id
from bot.errors import (
    BadSignature,
    BotError,
    MalformedPayload,
    MissingHeader,
    PayloadTooLarge,
    QueueUnavailable,
    UnsupportedMediaType,
)
from bot.events import Acknowledge, Enqueue, EnqueueIndex, Ignore, route
from bot.queue import CeleryEnqueuer, Enqueuer, make_publisher
from contract import index_state, installs, logs, pending
from contract.jobs import task_id_of
from contract.metrics import RedisCollector
from contract.redis_client import redis_client as make_redis
from contract.settings import AppSettings, get_settings

log = logging.getLogger("bot")
REDIS_TIMEOUT_S = 2.0  # a webhook answer must not wait on a slow Redis


@dataclass
class BotState:
    """What a running bot holds: its settings, Redis, the delivery ledger, the enqueuer."""

    settings: AppSettings
    redis: redis.Redis
    ledger: DeliveryLedger
    enqueue: Enqueuer
    registry: CollectorRegistry
    deliveries: Counter


def build_state(
    settings: AppSettings,
    *,
    redis_client: redis.Redis | None = None,
    enqueue: Enqueuer | None = None,
) -> BotState:
    """Connect the bot's parts; tests pass their own Redis client or enqueuer."""
    client = redis_client or make_redis(settings, timeout_s=REDIS_TIMEOUT_S)  # or Sentinel
    if enqueue is None:
        enqueue = CeleryEnqueuer(make_publisher(settings))
    registry = CollectorRegistry()
    deliveries = Counter(
        "spider_webhook_deliveries", "Webhook deliveries by outcome", ["outcome"],
        registry=registry,
    )
    registry.register(RedisCollector(client))  # the workers' metrics, added up in Redis
    return BotState(
        settings=settings,
        redis=client,
        ledger=DeliveryLedger(client, settings.delivery_ttl_s),
        enqueue=enqueue,
        registry=registry,
        deliveries=deliveries,
    )


def create_app(state: BotState | None = None) -> FastAPI:
    """The application; without ``state`` it reads settings and connects at start-up."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if state is None:
            settings = get_settings()
            logs.configure(settings.log_level, json_lines=settings.log_json)
            settings.check_bot()  # fail fast: uvicorn exits when start-up raises
            app.state.bot = build_state(settings)
        else:
            app.state.bot = state
        log.info("bot ready")
        yield
        app.state.bot.redis.close()

    app = FastAPI(title="spider-bot", lifespan=lifespan, docs_url=None, redoc_url=None)

    @app.exception_handler(BotError)
    async def _bot_error(request: Request, exc: BotError) -> JSONResponse:
        outcome = type(exc).__name__
        request.app.state.bot.deliveries.labels(outcome=outcome).inc()
        delivery = request.headers.get("x-github-delivery", "")[:64]  # unverified: for logs only
        log.warning("delivery rejected",
                    extra={"outcome": outcome, "reason": str(exc), "delivery_id": delivery})
        return JSONResponse({"error": str(exc)}, status_code=exc.status_code)

    @app.post("/webhook")
    async def webhook(request: Request, bot: Annotated[BotState, Depends(_state)]) -> JSONResponse:
        started = time.perf_counter()
        body = await _read_capped(request, bot.settings.webhook_max_body_bytes)
        secret = bot.settings.webhook_secret
        if secret is None or not signature.verify(
            secret.get_secret_value(), body, request.headers.get("x-hub-signature-256")
        ):
            raise BadSignature("X-Hub-Signature-256 is missing or does not match")
        event = request.headers.get("x-github-event")
        delivery = request.headers.get("x-github-delivery")
        if not event or not delivery:
            raise MissingHeader("X-GitHub-Event and X-GitHub-Delivery are required")
        delivery = check_delivery_id(delivery)
        if not _is_json(request.headers.get("content-type")):
            raise UnsupportedMediaType("the app's webhooks are application/json")
        with logs.bind(delivery_id=delivery, event=event):
            payload = _parse_json(body)
            answer = await run_in_threadpool(_handle, bot, event, payload, delivery)
            log.info(
                "delivery handled",
                extra={"outcome": answer["status"], "ms": round(1000 * (time.perf_counter() - started), 1)},
            )
        bot.deliveries.labels(outcome=answer["status"]).inc()
        return JSONResponse(answer, status_code=200 if answer["status"] == "acknowledged" else 202)

    @app.get("/healthz")
    async def healthz(bot: Annotated[BotState, Depends(_state)]) -> JSONResponse:
        try:
            await run_in_threadpool(bot.redis.ping)
        except redis.RedisError as exc:
            return JSONResponse({"status": "unhealthy", "redis": type(exc).__name__},
                                status_code=503)
        return JSONResponse({"status": "ok", "redis": "ok"})

    @app.get("/metrics")
    async def metrics(bot: Annotated[BotState, Depends(_state)]) -> Response:
        return PlainTextResponse(generate_latest(bot.registry), media_type=CONTENT_TYPE_LATEST)

    return app


def _state(request: Request) -> BotState:
    return request.app.state.bot  # type: ignore[no-any-return]


async def _read_capped(request: Request, cap: int) -> bytes:
    """The raw body, refusing more than ``cap`` bytes without reading them all."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > cap:
        raise PayloadTooLarge(f"body over {cap} bytes")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > cap:
            raise PayloadTooLarge(f"body over {cap} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def _is_json(content_type: str | None) -> bool:
    """Whether a Content-Type header says JSON (``application/json; charset=utf-8`` too)."""
    return (content_type or "").split(";", 1)[0].strip().lower() == "application/json"


def _parse_json(body: bytes) -> dict[str, Any]:
    try:
        payload = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MalformedPayload("body is not JSON") from exc
    if not isinstance(payload, dict):
        raise MalformedPayload("body is not a JSON object")
    return payload


def _handle(bot: BotState, event: str, payload: dict[str, Any], delivery: str) -> dict[str, Any]:
    """Route, dedupe and enqueue one verified delivery (runs in a thread: Redis is blocking)."""
    decision = route(event, payload, delivery)
    if isinstance(decision, Acknowledge):
        return {"status": "acknowledged", "reason": decision.reason}
    if isinstance(decision, Ignore):
        return {"status": "ignored", "reason": decision.reason}
    if isinstance(decision, EnqueueIndex):
        return _enqueue_index(bot, decision, delivery)
    assert isinstance(decision, Enqueue)
    job = decision.job
    if not bot.ledger.claim(delivery):
        return {"status": "duplicate", "reason": "delivery already queued"}
    try:
        pending.record(bot.redis, job)  # a message the broker loses is published again
        task_id = bot.enqueue(job)
    except Exception as exc:
        _forget(bot, [task_id_of(job)])
        bot.ledger.release(delivery)
        if isinstance(exc, QueueUnavailable):
            raise
        raise QueueUnavailable(f"enqueue failed: {type(exc).__name__}") from exc
    if not bot.ledger.confirm(delivery):
        log.warning("delivery id not remembered for long: Redis failed after the enqueue")
    log.info("job queued", extra={"repo": job.repo, "issue": job.issue_number, "trigger": job.trigger})
    return {"status": "queued", "task_id": task_id}


def _forget(bot: BotState, task_ids: list[str]) -> None:
    """Jobs recorded as pending but never published (best effort: a record left behind
    only publishes the job later, and the delivery's redelivery then finds it queued)."""
    with suppress(redis.RedisError):
        pending.settle(bot.redis, task_ids)


def _enqueue_index(bot: BotState, decision: EnqueueIndex, delivery: str) -> dict[str, Any]:
    """Queue an index job per repository unless one already waits there (that one fetches
    the newest head when it runs). All or nothing: a failure forgets what it recorded."""
    if not bot.ledger.claim(delivery):
        return {"status": "duplicate", "reason": "delivery already queued"}
    if decision.added:  # when they came: their older issues are never answered unasked
        try:
            installs.record_repos_added(bot.redis, decision.added, datetime.now(UTC))
        except redis.RedisError as exc:
            bot.ledger.release(delivery)
            raise QueueUnavailable(f"Redis: {type(exc).__name__}") from exc
    queued: list[tuple[str, str]] = []  # (repo, task id)
    try:
        for job in decision.jobs:
            task_id = job.task_id
            if not index_state.request(bot.redis, job.repo, task_id, job.sha,
                                       bot.settings.index_pending_ttl_s):
                continue
            queued.append((job.repo, task_id))
            pending.record(bot.redis, job)
            bot.enqueue(job)
    except Exception as exc:
        for repo, task_id in queued:  # best effort: each also expires by itself
            with suppress(redis.RedisError):
                index_state.release(bot.redis, repo, task_id)
        _forget(bot, [t for _, t in queued])
        bot.ledger.release(delivery)
        if isinstance(exc, QueueUnavailable):
            raise
        raise QueueUnavailable(f"enqueue failed: {type(exc).__name__}") from exc
    if not bot.ledger.confirm(delivery):
        log.warning("delivery id not remembered for long: Redis failed after the enqueue")
    waiting = len(decision.jobs) - len(queued)
    log.info("index jobs queued", extra={"repos": [r for r, _ in queued], "waiting": waiting})
    if not queued:
        return {"status": "coalesced",
                "reason": "an index job already waits for this repository; it indexes the "
                          "newest head"}
    return {"status": "queued", "task_id": queued[0][1], "task_ids": [t for _, t in queued],
            "coalesced": waiting}


app = create_app()
