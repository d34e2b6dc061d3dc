"""Session-wide set-up: one ONNX export of the bundled model shared by every test."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator

import pytest

# Exporting the ONNX graphs imports torch and takes seconds. The default encoder embeds
# queries through ONNX, so without this each test's fresh cache directory would export
# again; every test, and every process a test starts (they inherit the environment), shares
# this one folder instead.
_OWN_ONNX_DIR = "SPIDER_ONNX_DIR" not in os.environ
if _OWN_ONNX_DIR:
    os.environ["SPIDER_ONNX_DIR"] = tempfile.mkdtemp(prefix="spider-onnx-")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Remove the shared export folder this session made."""
    if _OWN_ONNX_DIR:
        shutil.rmtree(os.environ["SPIDER_ONNX_DIR"], ignore_errors=True)


@pytest.fixture(scope="session")
def llama_server() -> Iterator[str]:
    """A real llama.cpp server with SmolLM2-135M on 127.0.0.1; yields its OpenAI base URL."""
    from spider_devkit.llm_server import serve
    from tests.real_llm import require_smollm2

    with serve(require_smollm2(), threads=2, ctx=4096) as url:
        yield url
