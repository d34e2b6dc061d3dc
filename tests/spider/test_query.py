"""The issue as dense queries: the head, then windows of the body; best cosine wins."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from spider.models import Issue
from spider.retrieve.cache import EmbeddingCache
from spider.retrieve.dense import Encoder
from spider.retrieve.query import best_cosine, issue_queries, issue_windows
from spider.settings import EngineSettings

FILLER = "The page renders slowly when the sidebar is open and nobody knows why. " * 8
LATE = "Traceback: stack.push fails when the stack is full; push should grow the array."


def test_windows_are_the_head_then_the_title_with_each_slice() -> None:
    issue = Issue("Slow page", "a" * 400 + "b" * 400 + "c" * 100)
    texts = issue_windows(issue, window_chars=400, max_windows=10)
    assert texts[0] == issue.text  # the head: what a single query always embedded
    assert texts[1:] == ["Slow page\n" + "b" * 400, "Slow page\n" + "c" * 100]
    assert issue_windows(issue, 400, max_windows=2) == texts[:2]
    assert issue_windows(Issue("Short", "only a line"), 400, 32) == ["Short\n\nonly a line"]


def test_a_late_traceback_reaches_the_function_it_names(tmp_path: Path) -> None:
    enc = Encoder("", 128, EmbeddingCache(tmp_path))
    docs = enc.encode(
        [
            "def push(self, item):\n    # add an item to the stack, grow the array when full",
            "def render_sidebar(page):\n    # draw the sidebar of a page",
        ]
    )
    issue = Issue("Something is wrong", FILLER + LATE)
    head = best_cosine(docs, issue_queries(enc, issue, EngineSettings(query_windows=1)))
    windows = best_cosine(docs, issue_queries(enc, issue, EngineSettings(query_windows=32)))
    assert len(issue_windows(issue, 400, 32)) > 1
    assert head[0] < head[1]  # the head reads only the filler: the sidebar wins
    assert windows[0] > windows[1]  # a window holds the traceback: push wins
    assert np.all(windows >= head - 1e-6)  # the head is one of the windows
