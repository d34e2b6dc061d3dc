"""Structured logs for the bot and the worker: one JSON object per line, tokens redacted.

Fields given with ``extra={...}`` and the delivery id bound with :func:`bind` appear as
keys. Every line passes through :func:`redact` as a whole, so a token that slipped into a
message, a field or an exception text is still not written out.
"""

from __future__ import annotations

import contextvars
import json
import logging
import re
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_context: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "spider_log_context", default=None
)

# GitHub tokens (ghs_/ghp_/gho_/ghu_/ghr_/github_pat_), bearer/basic credentials, JWTs, PEM.
_SECRETS = re.compile(
    r"(gh[psour]_[A-Za-z0-9_]{8,}|github_pat_[A-Za-z0-9_]{8,}"
    r"|(?:Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{16,}"
    r"|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*"
    r"|x-access-token:[^@\s]+"
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(-----END [A-Z ]*PRIVATE KEY-----|$))"
)
_STANDARD = set(vars(logging.makeLogRecord({}))) | {"message", "asctime"}


def redact(text: str) -> str:
    """Replace anything that looks like a credential with ``[redacted]``."""
    return _SECRETS.sub("[redacted]", text)


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time, level, logger, message, bound and extra fields."""

    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        doc.update(_context.get() or {})
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                doc[key] = value
        if record.exc_info:
            doc["exc"] = self.formatException(record.exc_info)
        return redact(_sendable(json.dumps(doc, default=str, ensure_ascii=False)))


class TextFormatter(logging.Formatter):
    """Human-readable lines for local runs, with the same redaction and fields."""

    def format(self, record: logging.LogRecord) -> str:
        fields = dict(_context.get() or {})
        fields.update(
            {k: v for k, v in vars(record).items() if k not in _STANDARD and not k.startswith("_")}
        )
        extra = " ".join(f"{k}={v}" for k, v in fields.items())
        line = f"{record.levelname:<7} {record.name}: {record.getMessage()}"
        if extra:
            line += f" [{extra}]"
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return redact(_sendable(line))


def _sendable(text: str) -> str:
    """Lone surrogates (a file name that is not UTF-8) written as escapes, not an error."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def configure(level: str = "INFO", *, json_lines: bool = True) -> None:
    """Send the root logger to stderr with the chosen formatter (idempotent)."""
    root = logging.getLogger()
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if json_lines else TextFormatter())
    handler.set_name("spider")
    root.handlers = [h for h in root.handlers if h.get_name() != "spider"] + [handler]
    root.setLevel(level.upper())
    for noisy in ("httpx", "httpcore", "githubkit"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


@contextmanager
def bind(**fields: Any) -> Iterator[None]:
    """Add fields (e.g. ``delivery_id``) to every record logged inside the block."""
    token = _context.set({**(_context.get() or {}), **fields})
    try:
        yield
    finally:
        _context.reset(token)
