from __future__ import annotations

from dataclasses import dataclass

import pytest

from contract.policy import is_bot, may_rerun


@dataclass
class User:
    login: str
    type: str = "User"


@pytest.mark.parametrize(("user", "bot"), [
    (None, False),
    (User("octocat"), False),
    (User("dependabot[bot]", "Bot"), True),
    (User("spider-bot[bot]"), True),  # the suffix alone is enough
    (User("renovate", "Bot"), True),
])
def test_is_bot(user: User | None, bot: bool) -> None:
    assert is_bot(user) is bot


@pytest.mark.parametrize("association", ["OWNER", "MEMBER", "COLLABORATOR"])
def test_members_may_rerun_anyones_issue(association: str) -> None:
    assert may_rerun(association, User("maintainer"), User("reporter"))


def test_only_the_author_among_outsiders() -> None:
    assert may_rerun("NONE", User("reporter"), User("reporter"))
    assert not may_rerun("CONTRIBUTOR", User("stranger"), User("reporter"))
    assert not may_rerun("NONE", None, User("reporter"))
    assert not may_rerun("NONE", User("reporter"), None)
