"""The webhook edge of spider-bot: verify, filter, dedupe and enqueue; nothing heavy.

``bot.app:app`` is the FastAPI application served by uvicorn. The other modules are
sans-I/O (signature, events, commands) or thin wrappers over Redis and Celery.
"""
