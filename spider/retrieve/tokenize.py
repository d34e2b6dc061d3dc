"""Code-aware tokenization for lexical matching: identifiers split on snake_case and camelCase."""

from __future__ import annotations

import re
from functools import lru_cache

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
MIN_TOKEN_CHARS = 2  # single letters (loop variables, `x`) carry no signal
MAX_TOKEN_CHARS = 40  # longer "words" are hashes or encoded data

STOPWORDS: frozenset[str] = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "not",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "of",
        "to",
        "in",
        "on",
        "at",
        "by",
        "for",
        "with",
        "from",
        "as",
        "this",
        "that",
        "these",
        "those",
        "it",
        "its",
        "into",
        "if",
        "then",
        "else",
        "when",
        "while",
        "do",
        "does",
        "did",
        "done",
        "have",
        "has",
        "had",
        "i",
        "we",
        "you",
        "he",
        "she",
        "they",
        "them",
        "our",
        "your",
        "my",
        "me",
        "us",
        "can",
        "could",
        "should",
        "would",
        "will",
        "shall",
        "may",
        "might",
        "must",
        "there",
        "here",
        "what",
        "which",
        "who",
        "whom",
        "whose",
        "how",
        "why",
        "where",
        "all",
        "any",
        "some",
        "no",
        "nor",
        "so",
        "than",
        "too",
        "very",
        "just",
        "only",
        "also",
        "but",
        "about",
        "above",
        "below",
        "up",
        "down",
        "out",
        "over",
        "under",
        "again",
        "further",
        "once",
        "self",
        "cls",
        "def",
        "return",
        "none",
        "true",
        "false",
        "null",
        "var",
        "let",
        "const",
        "function",
        "new",
        "import",
        "class",
        "pass",
        "get",
        "set",
        "use",
        "used",
        "using",
        "one",
        "two",
    ]
)


def split_identifier(word: str) -> list[str]:
    """``getHTTPResponse_code`` -> ``["get", "http", "response", "code"]``."""
    parts: list[str] = []
    for chunk in word.split("_"):
        if chunk:
            parts.extend(p.lower() for p in _CAMEL.findall(chunk))
    return parts


def code_tokens(text: str, *, keep_compound: bool = True) -> list[str]:
    """Lower-cased tokens of ``text``: each identifier's parts, plus the whole identifier.

    Keeping the compound (``send_request``) next to its parts (``send``, ``request``)
    lets an exact identifier in an issue outweigh a loose match on common words.
    """
    out: list[str] = []
    for word in _WORD.findall(text):
        out.extend(_word_tokens(word, keep_compound))
    return out


@lru_cache(maxsize=1 << 18)
def _word_tokens(word: str, keep_compound: bool) -> tuple[str, ...]:
    """``code_tokens`` of one word (memoized: a repository repeats its identifiers, and
    splitting them was most of the time a BM25 index took to build)."""
    if len(word) > MAX_TOKEN_CHARS:
        return ()
    parts = split_identifier(word)
    out = [p for p in parts if len(p) >= MIN_TOKEN_CHARS and p not in STOPWORDS]
    lowered = word.lower().strip("_")
    if keep_compound and len(parts) > 1 and lowered not in STOPWORDS:
        out.append(lowered)
    return tuple(out)


def word_keys(text: str) -> list[tuple[str, str]]:
    """Each identifier of ``text`` with the one token that stands for it in ``code_tokens``.

    ``decode_unicode`` -> ``("decode_unicode", "decode_unicode")``; ``timeout`` ->
    ``("timeout", "timeout")``. Words that ``code_tokens`` drops (stop words, single
    letters, over-long tokens) are left out.
    """
    out: list[tuple[str, str]] = []
    for word in _WORD.findall(text):
        if len(word) > MAX_TOKEN_CHARS:
            continue
        parts = split_identifier(word)
        key = word.lower().strip("_") if len(parts) > 1 else (parts[0] if parts else "")
        if len(key) >= MIN_TOKEN_CHARS and key not in STOPWORDS and not key.isdigit():
            out.append((word, key))
    return out


def is_code_shaped(word: str) -> bool:
    """Whether a word reads as an identifier, not prose: ``snake_case`` or ``camelCase``."""
    inner = word.strip("_")
    return "_" in inner or any(c.isupper() for c in inner[1:]) or any(c.isdigit() for c in inner)
