"""The worker's GitHub client: app JWT → installation token → the few REST calls a job needs.

Built on githubkit (typed, validated responses) with its own retry turned off, because the
policy is the project's. One module per part:

- ``client``: :class:`GitHubClient`, the REST and GraphQL calls of one job;
- ``retry``: :class:`RetryPolicy` (5xx and network errors back off with jitter; short rate
  limits are slept, long ones reschedule the task; other 4xx are permanent) and the mapping
  of githubkit's errors onto ``worker.errors``;
- ``transport``: :class:`MeteredTransport` (every call counted for ``/metrics``) and the
  githubkit client built on it;
- ``tokens``: installation tokens, cached in Redis (encrypted with a key derived from the
  app's private key) until shortly before they expire, shared by every worker process.
"""

from worker.errors import TokenRejected
from worker.github.client import GitHubClient
from worker.github.retry import RetryPolicy
from worker.github.tokens import InstallationTokens, TokenCache
from worker.github.transport import MeteredTransport, github_api, retry_after_seconds

__all__ = [
    "GitHubClient",
    "InstallationTokens",
    "MeteredTransport",
    "RetryPolicy",
    "TokenCache",
    "TokenRejected",
    "github_api",
    "retry_after_seconds",
]
