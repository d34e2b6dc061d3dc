from __future__ import annotations

from worker.repo_config import DEFAULT_SKIP_LABEL, RepoConfig, parse_config


def test_absent_file_means_defaults() -> None:
    loaded = parse_config(None)
    assert loaded == parse_config(None) and not loaded.found and loaded.problem is None
    assert loaded.config.triggers == ["opened"] and loaded.config.skip_label == DEFAULT_SKIP_LABEL


def test_full_file() -> None:
    loaded = parse_config(
        "enabled: true\nk: 8\nselector: none\nedges: invokes\ninclude: src/**\n"
        "exclude: [docs/**, '**/gen_*.py']\nskip_label: no-bot\ntriggers: [opened, reopened]\n"
        "min_issue_length: 10\n"
    )
    assert loaded.found and loaded.problem is None
    cfg = loaded.config
    assert cfg.overrides() == {"k": 8, "selector": "none", "edges": ("invokes",),
                               "include": ["src/**"], "exclude": ["docs/**", "**/gen_*.py"]}
    assert (cfg.skip_label, cfg.triggers, cfg.min_issue_length) == ("no-bot", ["opened", "reopened"], 10)


def test_empty_file_is_fine() -> None:
    assert parse_config("# nothing\n").problem is None


def test_invalid_values_fall_back_to_defaults_with_a_reason() -> None:
    loaded = parse_config("k: 500\nselector: oracle\ncolour: blue\n")
    assert loaded.config == RepoConfig()
    assert "`k`" in loaded.problem and "`selector`" in loaded.problem  # type: ignore[operator]
    assert "`colour`: unknown setting" in loaded.problem  # type: ignore[operator]


def test_yaml_on_key_is_reported_not_misread() -> None:
    # YAML 1.1 reads `on:` as the boolean true: the file is rejected with a reason.
    assert parse_config("on: [opened]\n").problem is not None


def test_broken_yaml_and_non_mappings() -> None:
    assert "not valid YAML at line 2" in parse_config("k: 3\n  - x: [\n").problem  # type: ignore[operator]
    assert parse_config("- k\n- 3\n").problem == "it is not a mapping of settings"


def test_bad_edges_message_is_kept() -> None:
    problem = parse_config("edges: imports\n").problem
    assert problem is not None and "`edges`" in problem


def test_auto_and_an_explicit_none_are_told_apart() -> None:
    auto = parse_config("selector: auto\nedges: auto\n").config
    assert auto.overrides() == {"selector": "auto", "edges": "auto"}
    assert parse_config("edges: none\n").config.overrides() == {"edges": ()}
    assert "edges" not in parse_config("k: 5\n").config.overrides()  # unset: the installation's
