"""The comment: a typed view model built from a Localization, rendered by Jinja2.

Every string in the view model is already safe Markdown (see ``spider.comment.markdown``); the
template only arranges them, with ``StrictUndefined`` so a missing field is an error
rather than a blank. A comment that cannot be rendered in full raises RenderError and
nothing is posted.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from spider.comment.markdown import Markdown, code, inline, plain
from spider.comment.mermaid import mermaid_graph
from spider.errors import RenderError
from spider.models import Hit, Localization, PartialIndex, Reason

if TYPE_CHECKING:  # Jinja loads when a comment is rendered: `spider locate`'s table needs none
    import jinja2

# The templates live in the top-level ``templates/`` folder, installed as this package.
TEMPLATES_PACKAGE = "spider_templates"
TEMPLATE = "comment.md.j2"
TOO_LARGE_TEMPLATE = "too_large.md.j2"
COULD_NOT_FINISH_TEMPLATE = "could_not_finish.md.j2"
MARKER = "<!-- spider-bot:localization -->"  # finds our one comment per issue
MAX_COMMENT_CHARS = 65_536  # GitHub rejects longer comment bodies
MAX_NAME_CHARS = 120  # link text; the permalink carries the full location
_HTML_URL = re.compile(r"^https://[A-Za-z0-9.-]+(:[0-9]+)?/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
SHOWN = 5  # items listed in full; the rest of K sit in a collapsed block
LOW_CONFIDENCE = 0.10  # below it the list is called weak (dev CV: 12% of issues, 0 right at 1)


@dataclass(frozen=True)
class HitView:
    """One numbered line: the function, its permalink, where it is, and why it is listed."""

    rank: int
    title: Markdown
    url: str
    location: Markdown
    reasons: Markdown  # the evidence in plain words
    ranks: Markdown  # the rankers' numbers and the expansion edge, for the details


@dataclass(frozen=True)
class CommentView:
    """Everything the template shows, each string already safe Markdown."""

    marker: str
    app_name: Markdown
    summary: Markdown
    confidence_note: Markdown | None
    hits: Sequence[HitView]  # listed in full
    more: Sequence[HitView]  # the rest of K, collapsed
    notes: Sequence[Markdown]
    commit: Markdown
    commit_url: str
    branch: Markdown  # where the commit came from: "head of `main`", or "at `v2.10.0`"
    read: Markdown  # how much of the issue was read: one text or how many windows
    config_source: Markdown
    method: Markdown
    skip_label: Markdown
    partial_note: Markdown | None = None  # ranked from a partial index (the cold path)
    llm_note: Markdown | None = None  # an LLM pass is queued and will edit this comment
    index_note: Markdown | None = None  # the details' line on a partial index
    graph: Markdown | None = None  # a Mermaid picture of how the listed functions connect


def reason_words(reason: Reason) -> Markdown:
    """A reason the technical way (``Reason.describe``) with repository text in code spans."""
    return Markdown(reason.describe(code=code, plain=plain))


def plain_words(reason: Reason, listed: Mapping[str, int] | None = None) -> Markdown | None:
    """A reason in plain words (``Reason.words``), or None for a ranker's rank."""
    words = reason.words(code=code, plain=plain, listed=(listed or {}).get)
    return None if words is None else Markdown(words)


def permalink(html_url: str, sha: str, path: str, start: int, end: int) -> str:
    """``https://github.com/OWNER/REPO/blob/FULL_SHA/PATH#Lstart-Lend``, the path escaped."""
    if not _HTML_URL.match(html_url):
        raise RenderError("the repository's html_url is not a plain https URL")
    if not re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", sha):
        raise RenderError("a permalink needs the full commit id")
    anchor = f"#L{start}" if end <= start else f"#L{start}-L{end}"
    try:
        raw = path.encode("utf-8", "surrogateescape")  # a non-UTF-8 name: its bytes, escaped
    except UnicodeEncodeError:
        raw = path.encode("utf-8", "replace")
    return f"{html_url}/blob/{sha}/{quote(raw, safe='/')}{anchor}"


def hit_view(
    rank: int, hit: Hit, html_url: str, sha: str, listed: Mapping[str, int] | None = None
) -> HitView:
    """The view of one hit; ``listed`` maps ids to their position in the list."""
    name = hit.name or hit.id.split(":", 1)[-1]
    lines = f"L{hit.start_line}" if hit.end_line <= hit.start_line else f"L{hit.start_line}-{hit.end_line}"
    words = [w for w in (plain_words(r, listed) for r in hit.reasons) if w is not None]
    technical = [reason_words(r) for r in hit.reasons if r.technical or r.kind == "expand"]
    return HitView(
        rank=rank,
        title=code(name, limit=MAX_NAME_CHARS),
        url=permalink(html_url, sha, hit.path, hit.start_line, hit.end_line),
        location=Markdown(f"{code(hit.path)} {lines}"),
        reasons=Markdown("; ".join(words) or "similar to the issue as a whole"),
        ranks=Markdown(f"{code(name, limit=MAX_NAME_CHARS)}: " + "; ".join(technical)),
    )


def confidence_note(confidence: float | None, bar: float = LOW_CONFIDENCE) -> Markdown | None:
    """One line when even the first item is unlikely to need the change, else None."""
    if confidence is None or confidence >= bar:
        return None
    return Markdown(
        f"The best match is weak: an estimated {confidence:.0%} chance that the first function "
        "needs the change. Read this list as a place to start looking, not an answer."
    )


def partial_note(partial: PartialIndex | None, *, updates: bool) -> Markdown | None:
    """One line when the ranking was made from a partial index (the engine's cold path),
    else None. ``updates``: a run after the full index is due, so the comment may promise it."""
    if partial is None:
        return None
    counts = f": {partial.embedded_functions:,} of {partial.functions:,} functions embedded"
    then = ("; this comment is updated once indexing completes" if updates
            else "; a later run (`/spider`) ranks from the full index")
    return Markdown(f"Made from a partial index (the repository is being indexed{counts}){then}.")


def read_words(query_texts: int) -> Markdown:
    """How much of the issue the dense ranker read, in words (``query_texts``: the texts
    the issue was embedded as; 0 = no dense retrieval)."""
    if query_texts <= 0:
        return Markdown("its words only (no dense retrieval)")
    if query_texts == 1:
        return Markdown("its title and the start of its body, as one text")
    return Markdown(f"{query_texts} windows: its title, then its body in parts")


def index_words(partial: PartialIndex | None) -> Markdown | None:
    """The details' line on a partial index (the cold path), else None."""
    if partial is None:
        return None
    return Markdown(
        f"partial: {partial.embedded_functions:,} of {partial.functions:,} functions embedded, "
        "the others ranked by BM25 and the issue's signals only"
    )


def build_view(
    loc: Localization,
    *,
    html_url: str,
    branch: str,
    ref: str | None = None,
    notes: Sequence[str] = (),
    extra_settings: Mapping[str, Any] | None = None,
    timings: Mapping[str, float] | None = None,
    config_found: bool = False,
    skip_label: str,
    app_name: str,
    shown: int = SHOWN,
    low_confidence: float = LOW_CONFIDENCE,
    partial_updates: bool = False,
    llm_pending: str | None = None,
) -> CommentView:
    """The view model of one comment. ``notes`` may hold single-backtick code spans.

    ``ref`` names what was ranked when it is not the head of ``branch`` (a tag or commit
    asked for on the command line). The first ``shown`` hits are listed in full, the rest collapsed; a first hit whose
    calibrated confidence is below ``low_confidence`` gets a one-line warning. The details
    show evidence (the commit, the method, how much of the issue was read, each item's
    ranks, a partial index), not settings or seconds: ``extra_settings`` and ``timings``
    are accepted from callers that still pass them and not shown.

    Long because its signature is the view's inputs (the worker's and the CLI's options); the
    body fills one view model.
    """
    del extra_settings, timings  # settings and seconds are no evidence for the reader
    sha = loc.commit or ""
    if not loc.hits:
        raise RenderError("the engine returned no functions")
    listed = {hit.id: i for i, hit in enumerate(loc.hits, start=1)}
    hits = [hit_view(i, hit, html_url, sha, listed) for i, hit in enumerate(loc.hits, start=1)]
    k = len(hits)
    shown = max(1, shown)
    summary = (
        f"These are the {k} functions most likely to need a change for this issue, "
        "most likely first."
        if k > 1
        else "This is the function most likely to need a change for this issue."
    )
    return CommentView(
        marker=MARKER,
        app_name=plain(app_name),
        summary=Markdown(summary),
        confidence_note=confidence_note(loc.confidence, low_confidence),
        hits=hits[:shown],
        more=hits[shown:],
        notes=[inline(n) for n in notes],
        commit=code(sha),
        commit_url=f"{html_url}/commit/{sha}",
        branch=Markdown(f"at {code(ref)}") if ref else Markdown(f"head of {code(branch)}"),
        read=read_words(loc.settings.query_texts),
        config_source=Markdown(
            "`.github/spider.yml`" if config_found else "defaults (no `.github/spider.yml`)"
        ),
        method=plain(loc.method()),
        skip_label=code(skip_label),
        partial_note=partial_note(loc.settings.partial, updates=partial_updates),
        llm_note=(
            Markdown(f"{code(llm_pending)} is reading this list with the issue; this comment "
                     "is edited when it finishes.")
            if llm_pending else None
        ),
        index_note=index_words(loc.settings.partial),
        graph=mermaid_graph(loc.hits, loc.links, top=shown),
    )


@dataclass(frozen=True)
class TooLargeView:
    """The polite comment on an issue of a repository above the size limit."""

    marker: str
    app_name: Markdown
    what: Markdown  # "is 2.1 GB, above the 1.9 GB" / "has 30000 source files, above the 20000"
    skip_label: Markdown


def human_size(kb: int) -> str:
    """Kilobytes (GitHub's unit for a repository's size) in words: ``2.1 GB``."""
    value, unit = float(kb), "KB"
    for bigger in ("MB", "GB", "TB"):
        if value < 1024:
            break
        value, unit = value / 1024, bigger
    return f"{value:.0f} {unit}" if unit == "KB" or value >= 100 else f"{value:.1f} {unit}"


def build_too_large_view(*, app_name: str, skip_label: str, size_kb: int | None = None,
                         limit_kb: int | None = None, files: int | None = None,
                         limit_files: int | None = None) -> TooLargeView:
    """The view of the comment that says the repository is too large to index: by size
    (``size_kb``, ``limit_kb``) or by number of source files (``files``, ``limit_files``)."""
    if size_kb is not None and limit_kb is not None:
        what = f"is {human_size(size_kb)}, above the {human_size(limit_kb)}"
    elif files is not None and limit_files is not None:
        what = f"has {files} source files, above the {limit_files}"
    else:
        raise RenderError("a too-large comment needs a size or a file count, with its limit")
    return TooLargeView(marker=MARKER, app_name=plain(app_name), what=plain(what),
                        skip_label=code(skip_label))


@dataclass(frozen=True)
class CouldNotFinishView:
    """The polite comment on an issue whose job ran out of time twice (the worker's hard
    time limit, once with the usual settings and once with cheaper ones)."""

    marker: str
    app_name: Markdown
    minutes: Markdown  # the time limit of one run, in words
    skip_label: Markdown


def build_could_not_finish_view(*, app_name: str, skip_label: str,
                                limit_s: float) -> CouldNotFinishView:
    """The view of the comment that says the job could not finish within its time limit."""
    minutes = f"{limit_s / 60:.0f} minutes" if limit_s >= 120 else f"{limit_s:.0f} seconds"
    return CouldNotFinishView(marker=MARKER, app_name=plain(app_name), minutes=plain(minutes),
                              skip_label=code(skip_label))


def shipped_templates() -> Path:
    """The folder of the shipped templates: the top-level ``templates/`` of a source tree
    (a checkout, an editable install), else the installed :data:`TEMPLATES_PACKAGE`."""
    source = Path(__file__).resolve().parents[2] / "templates"
    if (source / TEMPLATE).is_file():
        return source
    spec = importlib.util.find_spec(TEMPLATES_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise RenderError(f"the templates are not installed (no {TEMPLATES_PACKAGE} package)")
    return Path(next(iter(spec.submodule_search_locations)))


def template_loader(template_dir: str | Path | None = None) -> jinja2.BaseLoader:
    """The shipped templates, each overridden by a file of the same name in an operator's
    ``template_dir`` (``SPIDER_TEMPLATE_DIR``) when there is one."""
    import jinja2

    shipped = jinja2.FileSystemLoader(shipped_templates())
    if not template_dir:
        return shipped
    return jinja2.ChoiceLoader([jinja2.FileSystemLoader(str(template_dir)), shipped])


@lru_cache(maxsize=4)
def _environment(template_dir: str | None) -> jinja2.Environment:
    """The shipped templates, or an operator's directory that overrides them."""
    import jinja2

    return jinja2.Environment(
        loader=template_loader(template_dir),
        undefined=jinja2.StrictUndefined,
        autoescape=False,  # Markdown, not HTML: the view model carries escaped text
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def render(view: CommentView | TooLargeView | CouldNotFinishView,
           template_dir: Path | None = None) -> str:
    """The comment's Markdown; RenderError if the template fails or the body is too long.

    ``template_dir`` overrides the templates shipped in the top-level ``templates/``.
    """
    import jinja2

    template = (TOO_LARGE_TEMPLATE if isinstance(view, TooLargeView)
                else COULD_NOT_FINISH_TEMPLATE if isinstance(view, CouldNotFinishView)
                else TEMPLATE)
    try:
        env = _environment(str(template_dir) if template_dir else None)
        body = env.get_template(template).render(view=view)
    except jinja2.TemplateError as exc:
        raise RenderError(f"{template}: {exc}") from exc
    if not body.startswith(MARKER):
        raise RenderError("the rendered comment must start with the marker")
    if len(body) > MAX_COMMENT_CHARS:
        raise RenderError(f"the comment is {len(body)} characters, over GitHub's limit")
    return body


FIX_OPEN = "<!-- spider-bot:fix -->"
FIX_CLOSE = "<!-- /spider-bot:fix -->"
_FIX_BLOCK = re.compile(re.escape(FIX_OPEN) + r".*?" + re.escape(FIX_CLOSE) + r"\n*", re.DOTALL)


def with_fix_line(body: str, line: Markdown) -> str:
    """``body`` with ``line`` (safe Markdown, e.g. built with ``code``/``plain``) in the
    marked fix block: replaced in place when the block exists, else put right before the
    ``<details>`` block (at the end when there is none). Idempotent."""
    block = f"{FIX_OPEN}\n{line}\n{FIX_CLOSE}\n\n"
    if _FIX_BLOCK.search(body):
        return _FIX_BLOCK.sub(lambda _m: block, body, count=1)
    at = body.find("<details>")
    if at < 0:
        return body.rstrip("\n") + "\n\n" + block.rstrip("\n") + "\n"
    return body[:at] + block + body[at:]
