"""The worker of spider-bot: Celery tasks that localize an issue and post one comment.

``worker.celery_app`` is the Celery application; ``worker.tasks`` holds the thin task;
the logic lives in ``pipeline`` (one job), ``github`` (API client), ``mirror`` (git),
``repo_config`` (``.github/spider.yml``) and ``render`` (the comment). What it shares with
the bot (the job, settings, logs, metrics, the ``/spider`` command) lives in ``contract``;
the worker never imports ``bot``.
"""
