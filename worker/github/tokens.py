"""Installation tokens: minted with the app's JWT, cached in Redis encrypted.

The cache key is derived from the app's private key (HKDF), so a token read from Redis is
useless without it; tokens are kept until ``SPIDER_TOKEN_REFRESH_MARGIN_S`` before they
expire and shared by every worker process.
"""

from __future__ import annotations

import base64
import hashlib
import logging
from datetime import UTC, datetime

import redis
from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from githubkit import AppAuthStrategy

from contract.settings import AppSettings
from worker.errors import GitHubRefused, TokenRejected
from worker.github.retry import RetryPolicy
from worker.github.transport import github_api

log = logging.getLogger(__name__)

TOKEN_KEY_PREFIX = "spider:ghtoken:"


class TokenCache:
    """Installation tokens in Redis, encrypted, kept until ``margin`` before they expire."""

    def __init__(self, client: redis.Redis, settings: AppSettings) -> None:
        self._redis = client
        self._settings = settings
        pem = settings.private_key_pem().encode()
        key = HKDF(hashes.SHA256(), 32, salt=None, info=b"spider-bot token cache").derive(pem)
        self._fernet = Fernet(base64.urlsafe_b64encode(key))
        scope = f"{settings.github_api_url}|{settings.github_app_id}"
        self._prefix = TOKEN_KEY_PREFIX + hashlib.sha256(scope.encode()).hexdigest()[:12] + ":"

    def get(self, installation_id: int) -> str | None:
        """A cached token still valid for at least the margin, or None."""
        raw = self._redis.get(self._prefix + str(installation_id))
        if raw is None:
            return None
        try:
            return self._fernet.decrypt(raw).decode()
        except InvalidToken:
            return None

    def put(self, installation_id: int, token: str, expires_at: datetime) -> None:
        """Cache a token until ``margin`` before ``expires_at``."""
        ttl = int((expires_at - datetime.now(UTC)).total_seconds()) - self._settings.token_refresh_margin_s
        if ttl > 0:
            self._redis.set(self._prefix + str(installation_id), self._fernet.encrypt(token.encode()), ex=ttl)

    def forget(self, installation_id: int) -> None:
        """Drop a token GitHub rejected."""
        self._redis.delete(self._prefix + str(installation_id))


class InstallationTokens:
    """Installation tokens for the app: from the cache, else minted with the app's JWT."""

    def __init__(self, settings: AppSettings, cache: TokenCache, policy: RetryPolicy) -> None:
        self._settings = settings
        self._cache = cache
        self._policy = policy

    def get(self, installation_id: int, *, fresh: bool = False) -> str:
        """A token for the installation (``fresh`` skips and replaces the cached one)."""
        if not fresh:
            cached = self._cache.get(installation_id)
            if cached:
                return cached
        token, expires_at = self._mint(installation_id)
        self._cache.put(installation_id, token, expires_at)
        log.info("installation token minted", extra={"installation_id": installation_id})
        return token

    def forget(self, installation_id: int) -> None:
        """Drop the cached token (GitHub rejected it)."""
        self._cache.forget(installation_id)

    def installation_created_at(self, installation_id: int) -> datetime:
        """When the installation was created (``GET /app/installations/{id}``, the app's
        JWT): issues opened before it are never answered unasked."""
        auth = AppAuthStrategy(str(self._settings.github_app_id), self._settings.private_key_pem())

        def get() -> datetime:
            with github_api(self._settings, auth) as gh:
                return gh.rest.apps.get_installation(installation_id).parsed_data.created_at

        return self._policy.call("get installation", get)

    def _mint(self, installation_id: int) -> tuple[str, datetime]:
        auth = AppAuthStrategy(str(self._settings.github_app_id), self._settings.private_key_pem())

        def create() -> tuple[str, datetime]:
            with github_api(self._settings, auth) as gh:
                data = gh.rest.apps.create_installation_access_token(installation_id).parsed_data
            expires = datetime.fromisoformat(data.expires_at.replace("Z", "+00:00"))
            return data.token, expires

        try:
            return self._policy.call("create installation token", create)
        except TokenRejected as exc:  # the app's own credentials: no token will fix that
            raise GitHubRefused(f"GitHub rejected the app's JWT ({exc})", 401) from exc
