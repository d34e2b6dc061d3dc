"""A fake GitHub REST API on 127.0.0.1 for the end-to-end tests and the replay command.

It implements what the worker calls (installation token, repository, contents, issue,
comments list/get/create/update, pull requests and their files and commits, two GraphQL
queries) with GitHub-shaped bodies that githubkit's models validate, checks the app's JWT
against its public key and the installation token on every other call, records every
request (and every credential it was shown), and can inject failures for the next matching
requests: any status with any headers (a 500, a 403 secondary rate limit with
``retry-after``, a 429 without one), a delay longer than the client's timeout, or a real
answer that is lost on the way back; and, with :meth:`~GitHubState.set_chaos`, random
failures (5xx, timeouts, 429 and 403 secondary with ``retry-after``) on a share of every
request, for soak runs. File contents are read from the local git repository
registered for each repository.

It also plays GitHub's side of the app's webhook: :meth:`FakeGitHub.send_webhook` signs and
POSTs a delivery to the app's URL and records it as GitHub does (id, guid, status code,
duration), ``GET /app/hook/deliveries`` lists those records (newest first, cursor pages via
``Link``), and ``POST /app/hook/deliveries/{id}/attempts`` answers 202 and then sends the
recorded payload again, signed with the current secret, with the same ``X-GitHub-Delivery``
guid, as a new delivery marked ``redelivery``.

The modules, one concern each:

- ``records``: what it stores and records (repositories, issues, comments, pull requests,
  injections, deliveries, calls); ``diffs``: a git diff as a pull request's files;
  ``git``: the local repositories behind it.
- ``webhooks`` (deliveries sent, listed, redelivered) under ``state`` (everything else it
  knows, what tests add and read, the credential checks).
- ``bodies``: GitHub-shaped JSON of each object.
- ``routes``: ``installations`` (the app's JWT routes: tokens, hook deliveries), ``repos``
  (repository, contents), ``issues`` (issues, comments), ``pulls``, ``graphql``.
- ``recorder``: the middleware (recording, token check, injected failures);
  ``server``: serving on a loopback port; ``fake``: :class:`FakeGitHub`, the state with its app.
"""

from __future__ import annotations

from spider_devkit.fake_github.bodies import HTML_ROOT
from spider_devkit.fake_github.diffs import files_from_diff
from spider_devkit.fake_github.fake import FakeGitHub
from spider_devkit.fake_github.records import (
    Call,
    FakeComment,
    FakeDelivery,
    FakeIssue,
    FakePull,
    FakeRepo,
    Injection,
)
from spider_devkit.fake_github.state import CHAOS_KINDS, TOKEN_TTL, Chaos, GitHubState

__all__ = [
    "CHAOS_KINDS",
    "HTML_ROOT",
    "TOKEN_TTL",
    "Call",
    "Chaos",
    "FakeComment",
    "FakeDelivery",
    "FakeGitHub",
    "FakeIssue",
    "FakePull",
    "FakeRepo",
    "GitHubState",
    "Injection",
    "files_from_diff",
]
