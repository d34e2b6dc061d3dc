"""The worker of spider-bot: Celery tasks that localize an issue and post one comment.

``worker.celery_app`` is the Celery application; ``worker.tasks`` holds the thin tasks and
``worker.task_runner`` the retry/defer/metrics skeleton they share. An issue job is
``pipeline`` (the shell: read, fetch, index, locate, publish) around ``plan`` (the pure
decision: skip, too large, or run with which settings and notes); ``comments`` keeps the
one-comment protocol, ``deps`` what a job uses, ``outcome`` what it did. ``indexing`` and
``scoring`` are the index and fix jobs; ``github`` (API client package), ``mirror`` (git)
and ``repo_config`` (``.github/spider.yml``) are their edges. What it shares with the bot
(the job, settings, logs, metrics, the ``/spider`` command) lives in ``contract``; the
worker never imports ``bot``.
"""
