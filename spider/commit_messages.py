"""Commit messages as text to search: trailers, issue numbers, links and hashes removed.

What a fix commit says is a query (the history backtest, training pairs) and what earlier
commits said about a function is evidence (history at inference); both read the message
the same way.
"""

from __future__ import annotations

import re

ISSUE_REF = re.compile(r"(?<![\w/])(?:[\w.-]+/[\w.-]+)?#\d+\b|\bGH-\d+\b", re.IGNORECASE)
FIX_WORD = re.compile(r"\b(?:fix(?:e[sd]|ing)?|bug(?:s|fix(?:es)?)?|hotfix)\b", re.IGNORECASE)
ISSUE_URL = re.compile(r"https?://\S+/(?:issues|pull|pulls|merge_requests)/\d+\S*", re.IGNORECASE)
COMMIT_HASH = re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b")
TRAILER = re.compile(r"^\s*[A-Za-z][A-Za-z0-9-]*(?:-[Bb]y|-[Ii]d|-[Tt]o)\s*:", re.MULTILINE)
KNOWN_TRAILER_KEYS = (
    "signed-off-by", "co-authored-by", "reviewed-by", "acked-by", "tested-by", "reported-by",
    "suggested-by", "helped-by", "cc", "change-id", "reviewed-on", "pr-url", "bug", "closes",
    "fixes", "resolves", "see-also", "refs", "ref", "issue",
)  # fmt: skip
SQUASH_PR_SUFFIX = re.compile(r"\s*\(#\d+\)\s*$")  # "Subject (#123)" of a squash merge
EMPTY_BRACKETS = re.compile(
    r"(?<!\w)(?:\(\s*[,;]?\s*\)|\[\s*\])"
)  # left by removed refs, not calls


def _is_trailer(line: str) -> bool:
    key, sep, _ = line.partition(":")
    return bool(sep) and (key.strip().lower() in KNOWN_TRAILER_KEYS or bool(TRAILER.match(line)))


def clean_message(message: str) -> str:
    """The query of a fix commit: trailers, issue numbers, links and hashes removed."""
    subject, *rest = message.strip().splitlines() or [""]
    lines = [subject, *(ln for ln in rest if not _is_trailer(ln))]
    text = "\n".join(lines)
    text = ISSUE_URL.sub("", text)
    text = ISSUE_REF.sub("", text)
    text = COMMIT_HASH.sub("", text)
    text = EMPTY_BRACKETS.sub("", text)
    text = re.sub(r"[ \t]+", " ", text)
    text = re.sub(r" +([,.;:)])", r"\1", text)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return "\n".join(ln.strip() for ln in text.splitlines()).strip()
