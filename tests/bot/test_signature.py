from __future__ import annotations

import hashlib
import hmac

from hypothesis import given
from hypothesis import strategies as st

from bot.signature import sign, verify


def test_github_documented_example() -> None:
    # The example in GitHub's "Validating webhook deliveries" documentation.
    header = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    assert verify("It's a Secret to Everybody", b"Hello, World!", header)


def test_wrong_secret_and_tampered_body_fail() -> None:
    header = sign("s3cret", b"{}")
    assert verify("s3cret", b"{}", header)
    assert not verify("other", b"{}", header)
    assert not verify("s3cret", b"{ }", header)


def test_sha1_and_missing_headers_are_refused() -> None:
    sha1 = "sha1=" + hmac.new(b"s3cret", b"{}", hashlib.sha1).hexdigest()
    assert not verify("s3cret", b"{}", sha1)
    assert not verify("s3cret", b"{}", None)
    assert not verify("s3cret", b"{}", "")
    assert not verify("s3cret", b"{}", "sha256=")
    assert not verify("s3cret", b"{}", "sha256=\u00e9")


@given(st.binary(max_size=2048), st.text(min_size=1, max_size=64))
def test_sign_verify_roundtrip(body: bytes, secret: str) -> None:
    assert verify(secret, body, sign(secret, body))
    assert not verify(secret + "x", body, sign(secret, body))
