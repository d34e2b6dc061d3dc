"""The webhook edge of spider-bot: verify, filter, dedupe and enqueue; nothing heavy.

``bot.app:app`` is the FastAPI application served by uvicorn. The other modules are
sans-I/O (signature, events) or thin wrappers over Redis and Celery. What the bot shares
with the worker (the job, the ``/spider`` command, settings, logs, metrics) is in
``contract``; the bot never imports ``worker``.
"""
