from __future__ import annotations

import io
import json
import logging

from contract.logs import JsonFormatter, bind, redact


def test_redacts_tokens_keys_and_credentials() -> None:
    for secret in ["ghs_16C7e42F292c6912E7710c838347Ae178B4a", "github_pat_11ABCDEFG0123456789_abc",
                   "Bearer eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiIxMiJ9.c2lnbmF0dXJl",
                   "Authorization: Basic eC1hY2Nlc3MtdG9rZW46Z2hzX3Rva2Vu",
                   "https://x-access-token:ghs_abcdefgh1234@github.com/a/b.git",
                   "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----"]:
        out = redact(f"failed with {secret} here")
        assert "[redacted]" in out and secret not in out


def test_json_lines_with_bound_fields() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    log = logging.getLogger("spider-test-logs")
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    try:
        with bind(delivery_id="d-1", repo="a/b"):
            log.info("job %s", "done", extra={"issue": 3, "token": "ghs_abcdefghijklmnop"})
        log.info("after")
    finally:
        log.removeHandler(handler)
    first, second = (json.loads(line) for line in stream.getvalue().splitlines())
    assert first["msg"] == "job done" and first["delivery_id"] == "d-1" and first["issue"] == 3
    assert first["token"] == "[redacted]"
    assert "delivery_id" not in second
