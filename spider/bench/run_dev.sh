#!/usr/bin/env bash
# Benchmark the runnable SWE-bench Lite dev instances, small repositories first, in one
# process (one code version for every row). Resumable: rerun it and finished
# (instance, method) pairs are skipped.
#   METHODS=bm25,dense,hybrid OUT=/work/bench-out/dev spider/bench/run_dev.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
DATASET=${DATASET:-../shared/bench/swe-bench-lite-dev.jsonl}
REPOS=${REPOS:-/work/.mirror/{owner\}+{name\}/repo}   # what the fetch tool creates
OUT=${OUT:-/work/bench-out/dev}
METHODS=${METHODS:-bm25,dense,hybrid,first-stage:signals=false,first-stage,spider-contains,spider-invokes,spider-both,expand-contains,expand-both,rerank,oracle,default}
CACHE=${CACHE:-/work/bench-cache}
# django, matplotlib and scikit-learn are too large to bring onto these machines.
RUNNABLE=psf/requests,pallets/flask,mwaskom/seaborn,pydata/xarray,pylint-dev/pylint,\
pytest-dev/pytest,sphinx-doc/sphinx,astropy/astropy,sympy/sympy

exec "$PY" -m spider.bench.cli --dataset "$DATASET" --repos "$REPOS" --method "$METHODS" \
  --out "$OUT" --only-repo "$RUNNABLE" --cache-dir "$CACHE" --no-progress
