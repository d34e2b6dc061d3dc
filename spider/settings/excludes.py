"""The paths the graph leaves out by default, by category (the category is the skip reason
the graph's stats count)."""

from __future__ import annotations

# Default exclusions by category (the category is the skip reason the graph's stats count).
# GitHub Linguist's vendored/generated/documentation rules, .gitattributes and the
# python-package rule come on top of these (spider/graph/exclusions.py, linguist.yml).
TEST_EXCLUDES: tuple[str, ...] = (
    # the bot points at code to fix, and the benchmark's ground truth excludes tests
    "**/test/**",
    "**/tests/**",
    "**/testing/**",
    "**/__tests__/**",
    "**/spec/**",
    "**/test_*.py",
    "**/*_test.py",
    "**/*_tests.py",
    "**/conftest.py",
    "**/*Test.java",
    "**/*Tests.java",
    "**/*.test.*",
    "**/*.spec.*",
    "**/*_test.go",
    "**/*Test.kt",
    "**/*Tests.cs",
    "**/*_spec.rb",
    "**/*Test.php",
)
BUILD_EXCLUDES: tuple[str, ...] = (
    # build output (Linguist counts dist/ as vendored; `-linguist-vendored` lifts these)
    "**/dist/**",
    "**/build/**",
    "**/target/**",
    "**/out/**",
    "**/.git/**",
)
VENDORED_EXCLUDES: tuple[str, ...] = (
    "**/node_modules/**",
    "**/vendor/**",
    "**/third_party/**",
    "**/thirdparty/**",
    "**/site-packages/**",
    "**/bower_components/**",
    "**/*.min.js",
    "**/*.min.mjs",
    "**/*.bundle.js",
)
GENERATED_EXCLUDES: tuple[str, ...] = (
    "**/*_pb2.py",
    "**/*.pb.go",
    "**/*.generated.*",
    "**/*.g.cs",
    "**/*.d.ts",
)
DEFAULT_EXCLUDES: tuple[str, ...] = (
    TEST_EXCLUDES + BUILD_EXCLUDES + VENDORED_EXCLUDES + GENERATED_EXCLUDES
)


def is_test_glob(glob: str) -> bool:
    """Whether ``glob`` is one of the test exclusions (dropped when tests are included)."""
    g = glob.lower()
    return any(t in g for t in ("test", "spec", "conftest"))
