"""``spider-bot``: the app's operator commands (the database and the fix report).

    spider-bot db upgrade                 apply the store's Alembic migrations
    spider-bot report [--repo OWNER/NAME] [--since DATE] [--html FILE] [--export FILE.jsonl]

The database is SPIDER_DATABASE_URL (default: SQLite in SPIDER_CACHE_DIR), the one the
workers write. The worker also upgrades the schema itself on its first use of the store.
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


def main(argv: list[str] | None = None) -> int:
    """Run one command; 0 on success."""
    import json

    from worker import report
    from worker.store import Store, StoreUnavailable, upgrade

    args = _parser().parse_args(argv)
    url = args.database_url or AppSettings().database_url_or_default
    store = Store(url, auto_upgrade=args.command != "db")
    try:
        if args.command == "db":
            upgrade(store.engine, url)
            print("database at the latest revision", file=sys.stderr)
            return 0
        fixes = store.fixes(args.repo, args.since)
        table = report.rows(store.comments(args.repo, args.since), fixes)
        if args.json:
            print(json.dumps([r.as_dict() for r in table], indent=2))
        else:
            print(report.table_markdown(table), end="")
        if args.html:
            report.write_html(args.html, table, fixes)
            print(f"HTML report: {args.html}", file=sys.stderr)
        if args.export:
            n = report.write_export(args.export, fixes)
            print(f"{n} fixes exported to {args.export}", file=sys.stderr)
        return 0
    except StoreUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        store.close()


if __name__ == "__main__":
    raise SystemExit(main())
