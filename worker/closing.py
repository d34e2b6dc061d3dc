"""Which issues a pull request closes, from its text: GitHub's closing keywords.

Pure (sans-I/O): text in, issue numbers out. GitHub closes an issue when a pull request
merged into the default branch says ``close``/``closes``/``closed``, ``fix``/``fixes``/
``fixed`` or ``resolve``/``resolves``/``resolved`` (any case, an optional colon) followed by
``#N``, ``owner/name#N`` or the issue's URL, in its title, body or commit messages. Only
references to the same repository count here: the app scores its own comments.
https://docs.github.com/issues/tracking-your-work-with-issues/linking-a-pull-request-to-an-issue
"""

from __future__ import annotations

import re
from collections.abc import Iterable

KEYWORDS = ("close", "closes", "closed", "fix", "fixes", "fixed", "resolve", "resolves", "resolved")
MAX_ISSUE_NUMBER = 10**9  # GitHub's numbers are int32; anything longer is not a reference
_REF = (
    r"(?:(?P<url>https?://[A-Za-z0-9.-]+(?::[0-9]+)?/(?P<uo>[A-Za-z0-9-]+)/(?P<un>[A-Za-z0-9_.-]+)"
    r"/issues/)|(?P<o>[A-Za-z0-9-]+)/(?P<n>[A-Za-z0-9_.-]+)#|#)(?P<num>[0-9]{1,10})"
)
_CLOSING = re.compile(
    rf"(?<![A-Za-z0-9_])(?:{'|'.join(KEYWORDS)}):?[ \t]+{_REF}(?![A-Za-z0-9_])",
    re.IGNORECASE,
)
_FENCE = re.compile(r"```.*?(?:```|\Z)|`[^`\n]*`", re.DOTALL)  # GitHub ignores code
_HTML_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)


def closing_references(text: str | None, repo: str, *, host: str = "github.com") -> list[int]:
    """Issue numbers of ``repo`` that ``text`` closes, in order of first mention."""
    if not text:
        return []
    text = _HTML_COMMENT.sub(" ", _FENCE.sub(" ", text))
    owner, name = repo.lower().split("/", 1)
    out: list[int] = []
    for m in _CLOSING.finditer(text):
        if m.group("url"):
            if host.lower() not in m.group("url").lower():
                continue
            ref_repo = (m.group("uo").lower(), m.group("un").lower())
        elif m.group("o"):
            ref_repo = (m.group("o").lower(), m.group("n").lower())
        else:
            ref_repo = (owner, name)
        number = int(m.group("num"))
        if ref_repo != (owner, name) or not 0 < number < MAX_ISSUE_NUMBER:
            continue
        if number not in out:
            out.append(number)
    return out


def closed_issues(texts: Iterable[str | None], repo: str, *, host: str = "github.com") -> list[int]:
    """The union of :func:`closing_references` over several texts (title, body, commits)."""
    out: list[int] = []
    for t in texts:
        for n in closing_references(t, repo, host=host):
            if n not in out:
                out.append(n)
    return out
