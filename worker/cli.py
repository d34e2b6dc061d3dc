"""spider-bot: the app's operator commands (the database and the fix report).

    spider-bot db upgrade                 apply the store's Alembic migrations
    spider-bot report [--repo OWNER/NAME] [--since DATE] [--html FILE] [--export FILE.jsonl]

The database is SPIDER_DATABASE_URL (default: SQLite in SPIDER_CACHE_DIR), the one the
workers write: SQLite or PostgreSQL (any other URL is refused, naming these). The worker
also upgrades the schema itself on its first use of the store; ``db upgrade`` creates a
SQLite file only in a folder that exists and names the database it upgraded; the report
only reads (it never creates a database). Exit status: 0, 1 when the database cannot be
read or is not supported (the cause on one line, never a traceback), 3 when there is
nothing to report yet.
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
    """Bring the database at ``url`` to the latest revision; say which database it was."""
    from sqlalchemy.exc import ArgumentError, DBAPIError

    from worker.store import NoDatabase, Store, UnsupportedDatabase, cause, sqlite_path, upgrade

    path = sqlite_path(url)
    existed = path is not None and path.exists()
    try:
        store = Store(url, auto_upgrade=False, create_folder=False)
    except (NoDatabase, UnsupportedDatabase) as exc:
        return _fail(str(exc))
    except ArgumentError as exc:
        return _fail(f"not a database URL ({_shown(url)}): {exc}")
    try:
        upgrade(store.engine, url)
        revision = store.revision()
    except DBAPIError as exc:
        return _fail(f"database unavailable ({_shown(url)}): {cause(exc)}")
    finally:
        store.close()
    where = _shown(url)
    if path is not None:
        where = f"{where} (the file {path.resolve()}{'' if existed else ', created'})"
    print(f"upgraded {where} to revision {revision or 'none'}", file=sys.stderr)
    return EXIT_OK


def _report(args: argparse.Namespace, url: str) -> int:
    """Read the store (never create or change it) and print the table, the HTML, the export."""
    import json

    from sqlalchemy.exc import ArgumentError

    from worker import report
    from worker.store import NoDatabase, Store, StoreUnavailable, UnsupportedDatabase

    try:
        store = Store(url, auto_upgrade=False, read_only=True)
    except NoDatabase as exc:
        return _fail(f"{exc}; check --database-url or SPIDER_DATABASE_URL")
    except UnsupportedDatabase as exc:
        return _fail(str(exc))
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
