"""Development tools of spider-bot, kept out of the product: never installed in the image.

- ``spider_devkit.fake_github``: a fake GitHub REST API on 127.0.0.1 (FastAPI, PyJWT) that
  checks the app's JWT and tokens, records comments and injects failures.
- ``spider_devkit.devstack``: the whole app on loopback (Redis, the bot under uvicorn,
  Celery workers, the fake GitHub) with fault injection: kill workers, restart Redis.
- ``spider_devkit.replay``: the ``spider-bot-replay`` command (one payload through the stack).

It drives the product (``bot``, ``worker``, ``contract``) from outside, so it is installed
beside it from the same checkout: ``pip install -e '.[dev]' -e ./devkit``.
"""
