"""What the bot and the worker agree on, and nothing else: both import it, it imports neither.

- ``contract.jobs``: the job (:class:`~contract.jobs.IssueJob`), the task name and queue.
- ``contract.broker``: the Celery settings publisher and consumer must share.
- ``contract.commands``: the ``/spider`` command in an issue comment.
- ``contract.policy``: who counts as a bot, who may re-run.
- ``contract.settings``: the one settings class of the app (``SPIDER_*``).
- ``contract.redis_client``: the one place Redis clients are built (plain or Sentinel).
- ``contract.logs``: structured, redacted logs.
- ``contract.metrics``: worker metrics added up in Redis, served by the bot.

Import-light: standard library, pydantic, redis and prometheus_client, plus the engine's
light ``spider.settings``; never torch, tree-sitter, Celery or FastAPI.
"""
