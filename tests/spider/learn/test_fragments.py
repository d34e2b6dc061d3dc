"""Changelog fragments: the prose a fix adds to a changelog becomes a query."""

from __future__ import annotations

from spider.learn.fragments import changelog_fragment, is_changelog


def _added(path: str, *lines: str) -> str:
    body = "\n".join("+" + x for x in lines)
    return (
        f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
        f"@@ -0,0 +1,{len(lines)} @@\n{body}\n"
    )


CODE = "\n".join(
    [
        "diff --git a/shop/cart.py b/shop/cart.py",
        "--- a/shop/cart.py",
        "+++ b/shop/cart.py",
        "@@ -1,2 +1,3 @@",
        " def add_item(self, sku, quantity):",
        "+    check(quantity)",
        "     self.items.append((sku, quantity))",
        "",
    ]
)


def test_changelog_files_and_fragment_folders_are_recognised() -> None:
    for path in (
        "CHANGELOG.md",
        "CHANGES.rst",
        "NEWS",
        "docs/HISTORY.txt",
        "newsfragments/123.bugfix",
        "changelog.d/20240101_fix.md",
        "changelogs/fragments/77-uri-timeout.yml",
        ".changeset/brave-cats.md",
        "CHANGES/4242.bugfix.rst",
    ):
        assert is_changelog(path), path
    for path in ("shop/cart.py", "docs/usage.md", "src/changes.py", "news.py"):
        assert not is_changelog(path), path


def test_a_towncrier_fragment_is_read_without_markup_or_links() -> None:
    patch = CODE + _added(
        "CHANGES/812.bugfix.rst",
        "Fixed :class:`Cart` accepting a negative quantity in ``add_item`` -- by :user:`ann`.",
    )
    text = changelog_fragment(patch)
    assert text == "Fixed Cart accepting a negative quantity in add_item -- by ann."


def test_a_changelog_entry_drops_headings_versions_and_issue_refs() -> None:
    patch = (
        "diff --git a/CHANGELOG.md b/CHANGELOG.md\n--- a/CHANGELOG.md\n+++ b/CHANGELOG.md\n"
        "@@ -1,2 +1,7 @@\n # Changelog\n+## Unreleased\n+\n+### Fixed\n+\n"
        "+- Fixed infinite loop with `cells.split_graphemes` (#3962)\n \n"
        " ## [14.3.2] - 2026-02-01\n"
    )
    assert changelog_fragment(patch) == "Fixed infinite loop with cells.split_graphemes"


def test_an_ansible_fragment_keeps_the_prose_not_the_yaml_keys() -> None:
    patch = _added(
        "changelogs/fragments/77-uri.yml",
        "bugfixes:",
        "  - uri - the timeout option was ignored when follow_redirects was set "
        "(https://github.com/ansible/ansible/issues/77).",
    )
    assert changelog_fragment(patch) == (
        "uri - the timeout option was ignored when follow_redirects was set."
    )


def test_no_fragment_when_the_patch_adds_none_or_too_little() -> None:
    assert changelog_fragment(CODE) == ""
    assert changelog_fragment(CODE + _added("CHANGELOG.md", "## 1.2.3", "- Fix (#4)")) == ""
    assert changelog_fragment("not a diff") == ""
