"""Making untrusted text safe to put in a GitHub comment.

Function names, paths and config values come from the repository; command options and
issue snippets come from whoever wrote them. In a comment they must not ping anyone
(``@user``, ``@org/team``), reference other issues (``#12``, ``owner/repo#12``), turn into
links or images, inject HTML, or break the surrounding Markdown. Two tools:

- :func:`code` puts a value in a code span, where GitHub renders nothing special;
- :func:`inline` neutralises prose, keeping code spans it contains as they are.
"""

from __future__ import annotations

import re
from typing import NewType

Markdown = NewType("Markdown", str)  # text already safe to place in the comment

ZWSP = "\u200b"  # a zero-width space breaks mentions, references and autolinks invisibly
MAX_CODE_CHARS = 200  # long identifiers are cut: the link beside them carries the full path
_CONTROL = re.compile(r"[\x00-\x1f\x7f\u2028\u2029]+")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_NOT_ESCAPED_BYTE = re.compile(r"[\ud800-\udc7f\udd00-\udfff]")  # not from surrogateescape
_CODE_SPAN = re.compile(r"(`[^`\n]*`)")
# Inline text never starts a line here, so list and heading markers (-, +, #) stay as-is.
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()!|~])")
_TRIGGERS = (
    (re.compile(r"@(?=[A-Za-z0-9])"), "@" + ZWSP),  # @user, @org/team
    (re.compile(r"#(?=[0-9])"), "#" + ZWSP),  # #12, owner/repo#12
    (re.compile(r"(?i)\b(gh)-(?=[0-9])"), r"\1-" + ZWSP),  # GH-12
    (re.compile(r"://"), ":" + ZWSP + "//"),  # https://...
    (re.compile(r"(?i)\bwww\."), "www" + ZWSP + "."),  # www.example.com
)


def printable(value: object) -> str:
    """``value`` as text that can be sent: bytes a repository path held that were not
    UTF-8 (kept as lone surrogates by ``surrogateescape``) become U+FFFD."""
    text = str(value)
    if _SURROGATE.search(text):
        text = _NOT_ESCAPED_BYTE.sub("\ufffd", text)
        text = text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return text


def code(value: object, *, limit: int = MAX_CODE_CHARS) -> Markdown:
    """A code span showing ``value`` literally, on one line, at most ``limit`` characters."""
    text = _CONTROL.sub(" ", printable(value)).strip()
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text else ""
    return Markdown(f"{fence}{pad}{text}{pad}{fence}")


def plain(value: object) -> Markdown:
    """Prose with Markdown, HTML, mentions, references and autolinks neutralised."""
    text = _CONTROL.sub(" ", printable(value))
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = _MARKDOWN_SPECIAL.sub(r"\\\1", text)
    for pattern, replacement in _TRIGGERS:
        text = pattern.sub(replacement, text)
    return Markdown(text)


def inline(value: object) -> Markdown:
    """Like :func:`plain`, but single-backtick code spans in ``value`` are kept as code."""
    parts = _CODE_SPAN.split(_CONTROL.sub(" ", printable(value)))
    return Markdown(
        "".join(part if _CODE_SPAN.fullmatch(part) else plain(part) for part in parts)
    )
