"""Run leases: a second execution of a run that a live worker holds does nothing; a lapsed lease or a
person's resume lets the run go on; a worker whose run was taken over stops without finishing it."""

from collections import Counter
from datetime import timedelta

import pytest
from django.utils import timezone

from injection import services
from injection.models import Candidate, InjectionItem, InjectionRun

pytestmark = pytest.mark.django_db


def plan(project, name="lease", directions=("en-de",)):
    return services.run_plan(
        spec=services.RunSpec(
            project=project, kind="mqm", backend="rule", name=name, directions=list(directions), seed=1
        )
    )


def test_a_live_lease_of_another_worker_is_respected(segments, project):
    run = plan(project)
    InjectionRun.objects.filter(pk=run.pk).update(
        status="running", lease_owner="other-host:1:abc", lease_expires_at=timezone.now() + timedelta(minutes=5)
    )
    result = services.run_execute(run_id=run.pk)
    assert result.status == "running" and result.lease_owner == "other-host:1:abc"
    assert not Candidate.objects.filter(run=run).exists()
    assert run.items.filter(status="pending").count() == run.total


def test_a_lapsed_lease_is_taken_and_released_at_the_end(segments, project):
    run = plan(project)
    InjectionRun.objects.filter(pk=run.pk).update(
        status="running", lease_owner="dead-host:1:abc", lease_expires_at=timezone.now() - timedelta(seconds=1)
    )
    result = services.run_execute(run_id=run.pk)
    assert result.status == "done" and Candidate.objects.filter(run=run).count() == run.total
    run.refresh_from_db()
    assert run.lease_owner == "" and run.lease_expires_at is None


def test_resume_by_a_person_takes_the_run_over(segments, project):
    run = plan(project)
    InjectionRun.objects.filter(pk=run.pk).update(
        status="running", lease_owner="killed-worker:1:abc", lease_expires_at=timezone.now() + timedelta(minutes=5)
    )
    services.run_resume(run=run)
    assert services.run_execute(run_id=run.pk).status == "done"


def test_a_worker_whose_run_was_taken_over_stops_and_the_new_owner_finishes(segments, project):
    run = plan(project, directions=sorted({s.direction.code for s in segments}))
    assert run.total > services.COMMIT_EVERY_N  # results are committed (and progress reported) in several groups
    seen = []

    def steal_after_first_progress(r):
        seen.append(r.done)
        if len(seen) == 2:  # after the first results: a person resumes the run elsewhere
            InjectionRun.objects.filter(pk=r.pk).update(
                lease_owner="new-worker:2:def", lease_expires_at=timezone.now() + timedelta(minutes=5)
            )

    first = services.run_execute(run_id=run.pk, progress=steal_after_first_progress, check_every_s=0.0)
    assert first.status == "running" and first.lease_owner == "new-worker:2:def"  # not finished by the loser
    pending_after_loss = run.items.filter(status="pending").count()
    assert 0 < pending_after_loss < run.total
    services.run_resume(run=run)
    assert services.run_execute(run_id=run.pk).status == "done"
    per_item = Counter(Candidate.objects.filter(run=run).values_list("segment_id", "error_type", "position"))
    assert set(per_item.values()) == {1} and sum(per_item.values()) == run.total
    assert not InjectionItem.objects.filter(run=run, status="pending").exists()
