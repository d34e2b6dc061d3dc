"""The load harnesses key every job by the task id the bot published it under."""

from __future__ import annotations

from contract.jobs import IndexJob, IssueJob, task_id_of
from tests.load.jobs import DONE, INDEX_DONE, QueuedJob, queued_jobs

GUID = "3f1c6a52-1b7e-4c1e-9a55-0d6f0c1e2b7a"


def test_an_issue_job_is_keyed_by_its_delivery_id() -> None:
    task_id = task_id_of(IssueJob(1, "acme/alpha", 3, GUID, "issues.opened"))
    (job,) = queued_jobs(GUID, {"status": "queued", "task_id": task_id})
    assert job == QueuedJob(GUID, GUID, index=False)
    assert job.done == DONE


def test_index_jobs_are_keyed_by_their_own_task_ids_not_the_delivery() -> None:
    ids = [task_id_of(IndexJob(1, repo, GUID)) for repo in ("acme/alpha", "acme/beta")]
    answer = {"status": "queued", "task_id": ids[0], "task_ids": ids, "coalesced": 1}
    jobs = queued_jobs(GUID, answer)
    assert [j.task_id for j in jobs] == [f"index:acme/alpha:{GUID}", f"index:acme/beta:{GUID}"]
    assert all(j.index and j.delivery_id == GUID and j.done == INDEX_DONE for j in jobs)
    assert GUID not in {j.task_id for j in jobs}


def test_an_answer_that_queued_nothing_names_no_job() -> None:
    for answer in (
        {"status": "duplicate", "reason": "delivery already queued"},
        {"status": "coalesced", "reason": "an index job already waits"},
        {"status": "ignored", "reason": "comment on a pull request"},
        {"status": "acknowledged", "reason": "ping"},
        {},
    ):
        assert queued_jobs(GUID, answer) == []
