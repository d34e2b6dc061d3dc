"""spider-bot: the app's operator commands (the database and the fix report).

    spider-bot db upgrade                 apply the store's Alembic migrations
    spider-bot report [--repo OWNER/NAME] [--since DATE] [--html FILE] [--export FILE.jsonl]

The database is SPIDER_DATABASE_URL (default: SQLite in SPIDER_CACHE_DIR), the one the
workers write. The worker also upgrades the schema itself on its first use of the store;
the report only reads (it never creates a database). Exit status: 0, 1 when the database
cannot be read (the cause on one line), 3 when there is nothing to report yet.
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path

from contract.settings import AppSettings


def _since(text: str) -> datetime:
    try:
        when = datetime.fromisoformat(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not a date (YYYY-MM-DD): {text!r}") from exc
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="spider-bot", description=__doc__.split("\n\n")[0])
    p.add_argument("--database-url", help="default: SPIDER_DATABASE_URL, else SQLite in the cache")
    sub = p.add_subparsers(dest="command", required=True)
    db = sub.add_parser("db", help="the store's schema")
    db.add_argument("action", choices=["upgrade"])
    r = sub.add_parser("report", help="how the app did on merged fixes")
    r.add_argument("--repo", help="only this repository (owner/name)")
    r.add_argument("--since", type=_since, help="only fixes scored since (YYYY-MM-DD)")
    r.add_argument("--html", type=Path, help="write an HTML report with plots here")
    r.add_argument("--export", type=Path, help="write the fixes as bench JSONL rows here")
    r.add_argument("--json", action="store_true", help="print the table as JSON")
    return p


EXIT_OK = 0
EXIT_ERROR = 1  # the database cannot be read: down, refused, no such file (2: usage errors)
EXIT_EMPTY = 3  # nothing to report yet: no comment recorded, no fix scored
EMPTY_HINT = (
    "The report counts merged fixes scored against the app's comments: a worker records each "
    "comment it posts, and when a pull request that closes that issue is merged it scores the "
    "fix (the spider-fixes queue). Nothing to report until then."
)


def main(argv: list[str] | None = None) -> int:
    """Run one command: 0 on success, 1 when the database cannot be read (one line on
    stderr, no traceback), 3 when there is nothing to report yet."""
    args = _parser().parse_args(argv)
    url = args.database_url or AppSettings().database_url_or_default
    if args.command == "db":
        return _upgrade(url)
    return _report(args, url)


def _upgrade(url: str) -> int:
    from sqlalchemy.exc import ArgumentError, DBAPIError

    from worker.store import Store, cause, upgrade

    try:
        store = Store(url, auto_upgrade=False)
    except ArgumentError as exc:
        return _fail(f"not a database URL ({_shown(url)}): {exc}")
    try:
        upgrade(store.engine, url)
    except DBAPIError as exc:
        return _fail(f"database unavailable ({_shown(url)}): {cause(exc)}")
    finally:
        store.close()
    print("database at the latest revision", file=sys.stderr)
    return EXIT_OK


def _report(args: argparse.Namespace, url: str) -> int:
    """Read the store (never create or change it) and print the table, the HTML, the export."""
    import json

    from sqlalchemy.exc import ArgumentError

    from worker import report
    from worker.store import NoDatabase, Store, StoreUnavailable

    try:
        store = Store(url, auto_upgrade=False, read_only=True)
    except NoDatabase as exc:
        return _fail(f"{exc}; check --database-url or SPIDER_DATABASE_URL")
    except ArgumentError as exc:
        return _fail(f"not a database URL ({_shown(url)}): {exc}")
    try:
        if not store.has_schema():
            return _empty(args, f"The database at {_shown(url)} has no spider-bot tables yet "
                                "(no worker has written to it).")
        fixes = store.fixes(args.repo, args.since)
        comments = store.comments(args.repo, args.since)
    except StoreUnavailable as exc:
        return _fail(f"{exc} ({_shown(url)})")
    finally:
        store.close()
    if not fixes and not comments:
        scope = "".join((f" for {args.repo}" if args.repo else "",
                         f" since {args.since:%Y-%m-%d}" if args.since else ""))
        return _empty(args, f"No comment recorded and no fix scored yet{scope} "
                            f"in {_shown(url)}.")
    table = report.rows(comments, fixes)
    if args.json:
        print(json.dumps([r.as_dict() for r in table], indent=2))
    else:
        print(report.table_markdown(table), end="")
    if not fixes:
        print(f"No fix scored yet. {EMPTY_HINT}", file=sys.stderr)
    if args.html:
        report.write_html(args.html, table, fixes, template_dir=AppSettings().template_dir)
        print(f"HTML report: {args.html}", file=sys.stderr)
    if args.export:
        n = report.write_export(args.export, fixes)
        print(f"{n} fixes exported to {args.export}", file=sys.stderr)
    return EXIT_OK


def _empty(args: argparse.Namespace, what: str) -> int:
    """The empty state: what is missing and what fills it; ``[]`` for ``--json``."""
    if args.json:
        print("[]")
    print(f"{what}\n{EMPTY_HINT}", file=sys.stderr)
    return EXIT_EMPTY


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return EXIT_ERROR


def _shown(url: str) -> str:
    """The URL as it may be printed: the password hidden."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "an unparsable URL"


if __name__ == "__main__":
    raise SystemExit(main())
