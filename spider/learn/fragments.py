"""Changelog fragments: what a fix commit tells its users, read as an issue-like query.

Many projects ask a fix to add a line to a changelog: a towncrier fragment
(``newsfragments/123.bugfix``, ``changelog.d/…``, ``CHANGES/…``), an Ansible
``changelogs/fragments/*.yml``, a ``.changeset/*.md``, or an entry under "Unreleased" in
``CHANGELOG.md``. That line describes the bug in the reader's words, closer to an issue
than the commit message is, so a mined fix commit gives a second query from it.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from spider.errors import InputError
from spider.patch import parse_patch

# Files that *are* a changelog, and folders whose every file is a fragment.
_CHANGELOG_FILE = re.compile(
    r"^(?:change(?:s|log)|news|history|release[-_ ]?notes|whatsnew)"
    r"(?:\.(?:md|rst|txt|markdown|adoc))?$",
    re.I,
)
_FRAGMENT_DIRS = frozenset(
    {"newsfragments", "changelog.d", "changes", "changelogs", "fragments", ".changeset",
     "changelog", "news", "unreleased"}
)  # fmt: skip
_HEADING = re.compile(r"^\s*(?:#+|=+|-{3,}|\*{3,}|\.\.\s)")  # markdown / rst structure
_VERSIONISH = re.compile(r"^\s*(?:v?\d+(?:\.\d+)+|unreleased|\[?unreleased\]?)\b", re.I)
_YAML_KEY = re.compile(r"^\s*[a-z_]+:\s*$", re.I)  # "bugfixes:" of an Ansible fragment
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_REF = re.compile(r"\(?(?:#\d+|GH-\d+|https?://[^\s)]+)\)?", re.I)
_ROLE = re.compile(r":(?:issue|pr|user|class|func|meth|attr|mod|ref|obj|exc|data):`~?([^`]*)`")
_MARKUP = re.compile(r"`+|\*{1,2}(?=\S)|(?<=\S)\*{1,2}")  # code ticks, emphasis
MIN_WORDS = 4
MAX_CHARS = 600


def is_changelog(path: str) -> bool:
    """Whether ``path`` is a changelog file or a fragment in a changelog folder."""
    p = PurePosixPath(path)
    if _CHANGELOG_FILE.match(p.name):
        return True
    return any(part.lower() in _FRAGMENT_DIRS for part in p.parts[:-1])


def _clean(line: str) -> str:
    s = _BULLET.sub("", line)
    s = _ROLE.sub(r"\1", s)
    s = _REF.sub("", s)
    s = _MARKUP.sub("", s)
    s = s.strip().strip("'\"").strip()
    s = re.sub(r"\s+([.,;:])", r"\1", s)  # the space a removed link left before a stop
    return re.sub(r"\s+", " ", s)


def changelog_fragment(patch: str) -> str:
    """The prose a patch adds to changelog files, cleaned of markup, headings, version
    lines and issue links; ``""`` when it adds none worth a query."""
    try:
        files = parse_patch(patch)
    except InputError:
        return ""
    lines: list[str] = []
    for fp in files:
        path = fp.new_path or fp.old_path or ""
        if not is_changelog(path):
            continue
        for hunk in fp.hunks:
            for tag, text in hunk.lines:
                if tag != "+" or not text.strip():
                    continue
                if _HEADING.match(text) or _VERSIONISH.match(text) or _YAML_KEY.match(text):
                    continue
                cleaned = _clean(text)
                if cleaned:
                    lines.append(cleaned)
    text = " ".join(lines)[:MAX_CHARS].strip()
    return text if len(re.findall(r"[A-Za-z]{2,}", text)) >= MIN_WORDS else ""
