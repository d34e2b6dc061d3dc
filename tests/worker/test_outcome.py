"""One outcome for the issue, index and scoring jobs; its JSON form shows what a job filled."""

from __future__ import annotations

from worker.outcome import Outcome


def test_the_json_form_leaves_out_the_body_and_what_the_job_did_not_fill() -> None:
    issue = Outcome(status="created", comment_id=5, sha="a" * 40, body="the comment",
                    timings={"total": 1.5})
    assert issue.as_dict() == {"status": "created", "reason": "", "sha": "a" * 40,
                               "timings": {"total": 1.5}, "comment_id": 5}
    index = Outcome(status="indexed", sha="b" * 40, functions=12, embedded=3, recorded=True,
                    reruns=[{"issue_number": 1}])
    assert index.as_dict() == {"status": "indexed", "reason": "", "sha": "b" * 40,
                               "functions": 12, "embedded": 3, "recorded": True,
                               "reruns": [{"issue_number": 1}]}
    assert Outcome("skipped", "archived").as_dict() == {"status": "skipped", "reason": "archived"}
