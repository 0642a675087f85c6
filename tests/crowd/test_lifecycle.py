"""The crowd platform's lifecycle of a batch: the end of the work (N examples, M minutes, whichever comes first),
the post-survey and the redirect to the platform with the completion code, places and the open study link,
returned / timed-out / screened-out participants freeing their place, and the exit provider for the study."""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
from django.test import Client
from django.utils import timezone

from crowd import jobs, lifecycle, links
from crowd.models import Assignment, WorkerBatch
from study import surveys
from study.models import Study
from tests.factories import ExampleFactory, UserFactory

pytestmark = pytest.mark.django_db
COMPLETE = "https://app.prolific.com/submissions/complete?cc={code}"
SCREEN_OUT = "https://app.prolific.com/submissions/complete?cc=SCREENED1"


def make_batch(task, **kwargs) -> WorkerBatch:
    owner = task.owners.first() or UserFactory(username="study-owner")
    task.owners.add(owner)
    options = {"name": "wave", "source": "prolific", "hours": 24, "examples_required": 2, "workers": "",
               "places": 2, "completion_url": COMPLETE} | kwargs
    return links.create_batch(task, owner, **options)


def open_params(pid: str, study: str = "STUDY1", session: str | None = None) -> dict:
    return {"PROLIFIC_PID": pid, "STUDY_ID": study, "SESSION_ID": session or f"S-{pid}"}


def join(batch: WorkerBatch, pid: str, **kw):
    client = Client()
    response = client.post(lifecycle.open_link_path(batch), open_params(pid, **kw))
    return client, response


def write(assignment: Assignment, n: int) -> None:
    rnd = assignment.batch.task.rounds.get()
    for i in range(n):
        ExampleFactory(round=rnd, author=assignment.user, input={"text": f"example {i} of {assignment.worker_id}"})


# --- the end of the work -----------------------------------------------------------------------------------


def test_n_examples_end_the_work_and_the_finish_goes_to_the_platform_with_the_code(crowd_task):
    batch = make_batch(crowd_task)
    worker, started = join(batch, "PID1")
    assignment = Assignment.objects.get(batch=batch, worker_id="PID1")
    assert started.status_code == 302 and started.url == f"/assignments/{assignment.pk}/"
    early = worker.post(f"/assignments/{assignment.pk}/finish/", follow=True)
    assert b"write 2 more" in early.content
    write(assignment, 2)
    assert links.progress(assignment).done
    finished = worker.post(f"/assignments/{assignment.pk}/finish/")
    assert finished.status_code == 302 and finished.url == f"/assignments/{assignment.pk}/complete/"
    away = worker.get(finished.url)
    assignment.refresh_from_db()
    assert assignment.state == Assignment.State.COMPLETED
    assert away.status_code == 302 and urlsplit(away.url).netloc == "app.prolific.com"
    assert parse_qs(urlsplit(away.url).query) == {"cc": [assignment.completion_code]}


def test_m_minutes_end_the_work_with_a_clock(crowd_task):
    batch = make_batch(crowd_task, end_rule="minutes", minutes_required=20, time_limit_minutes=60)
    join(batch, "PID1")
    assignment = Assignment.objects.get(batch=batch)
    start = assignment.followed_at
    write(assignment, 5)  # examples do not end a minutes batch
    assert not links.progress(assignment, now=start + timedelta(minutes=19)).done
    with pytest.raises(links.Conflict, match="work 1 more minute"):
        links.complete(assignment, now=start + timedelta(minutes=19))
    assert links.progress(assignment, now=start + timedelta(minutes=20)).done
    assert links.complete(assignment, now=start + timedelta(minutes=20)) == assignment.completion_code


def test_whichever_comes_first(crowd_task):
    batch = make_batch(crowd_task, end_rule="first", examples_required=3, minutes_required=30)
    _, _ = join(batch, "FAST")
    _, _ = join(batch, "SLOW")
    fast, slow = (Assignment.objects.get(batch=batch, worker_id=w) for w in ("FAST", "SLOW"))
    write(fast, 3)
    write(slow, 1)
    soon = fast.followed_at + timedelta(minutes=5)
    assert links.progress(fast, now=soon).done  # three examples in five minutes
    assert not links.progress(slow, now=soon).done
    assert links.progress(slow, now=slow.followed_at + timedelta(minutes=30)).done  # thirty minutes, one example


def test_the_minutes_run_on_the_page_too(crowd_task):
    """The page and the finish use the real clock: a start moved back in time stands in for the minutes passing."""
    batch = make_batch(crowd_task, end_rule="minutes", minutes_required=10)
    worker, _ = join(batch, "PID1")
    assignment = Assignment.objects.get(batch=batch)
    page = worker.get(f"/assignments/{assignment.pk}/")
    assert b'id="minutes">0 of 10 minutes' in page.content and b'id="finish" disabled' in page.content
    Assignment.objects.filter(pk=assignment.pk).update(followed_at=timezone.now() - timedelta(minutes=11))
    assert b'id="finish" disabled' not in worker.get(f"/assignments/{assignment.pk}/").content
    assert worker.post(f"/assignments/{assignment.pk}/finish/").status_code == 302
    assert Assignment.objects.get(pk=assignment.pk).state == Assignment.State.COMPLETED


def test_the_post_survey_comes_before_the_platform(crowd_task):
    """The task's study has a post-survey: finishing goes to it (the code waits), and once it is answered, to the
    platform with the code."""
    Study.objects.create(task=crowd_task, enabled=True)
    surveys.replace_questions(surveys.configure(crowd_task, "post", title="Afterwards"), [
        {"key": "hard", "kind": "likert", "text": "How hard was it?", "choices": ["easy", "fair", "hard"]}])
    batch = make_batch(crowd_task, examples_required=1)
    worker, _ = join(batch, "PID1")
    assignment = Assignment.objects.get(batch=batch)
    write(assignment, 1)
    complete_path = f"/assignments/{assignment.pk}/complete/"
    finished = worker.post(f"/assignments/{assignment.pk}/finish/")
    to_survey = worker.get(finished.url)
    assert to_survey.status_code == 302 and to_survey.url.startswith(f"/tasks/{crowd_task.slug}/surveys/post/")
    assert parse_qs(urlsplit(to_survey.url).query)["next"] == [complete_path]
    page = worker.get(f"/assignments/{assignment.pk}/")  # the code waits for the survey
    assert b"post-survey-link" in page.content and assignment.completion_code.encode() not in page.content
    answered = worker.post(to_survey.url, {"hard": "fair", "next": complete_path})
    assert answered.status_code == 302 and answered.url == complete_path
    away = worker.get(complete_path)
    assert away.url == COMPLETE.format(code=assignment.completion_code)
    assert assignment.completion_code.encode() in worker.get(f"/assignments/{assignment.pk}/").content


def test_no_completion_address_shows_the_code(crowd_task):
    batch = make_batch(crowd_task, examples_required=1, completion_url="")
    worker, _ = join(batch, "PID1")
    assignment = Assignment.objects.get(batch=batch)
    write(assignment, 1)
    done = worker.post(f"/assignments/{assignment.pk}/finish/", follow=True)
    assert assignment.completion_code.encode() in done.content and b"Paste it into Prolific" in done.content


# --- places and the open link ---------------------------------------------------------------------------------


def test_the_open_link_takes_free_places_once_per_participant(crowd_task):
    batch = make_batch(crowd_task, places=2, study_id="STUDY1")
    landing = Client().get(lifecycle.open_link_path(batch), open_params("PID1"))
    assert landing.status_code == 200 and b'name="PROLIFIC_PID" value="PID1"' in landing.content
    assert not Assignment.objects.exists()  # looking signs nobody in and takes no place
    worker, response = join(batch, "PID1")
    assignment = Assignment.objects.get(batch=batch)
    assert (assignment.worker_id, assignment.submission_id, assignment.state) == ("PID1", "S-PID1", "active")
    assert assignment.via_open_link and worker.session["_auth_user_id"] == str(assignment.user_id)
    assert lifecycle.places(batch).free == 1
    again = Client().post(lifecycle.open_link_path(batch), open_params("PID1", session="S-other"))
    assert again.status_code == 409 and b"already took a place" in again.content
    join(batch, "PID2")
    full = Client().post(lifecycle.open_link_path(batch), open_params("PID3"))
    assert full.status_code == 409 and b"no free places" in full.content
    assert Assignment.objects.filter(batch=batch).count() == 2


def test_the_open_link_checks_the_study_and_needs_a_participant_id(crowd_task):
    batch = make_batch(crowd_task, study_id="STUDY1")
    other_study = Client().post(lifecycle.open_link_path(batch), open_params("PID1", study="STUDY2"))
    assert other_study.status_code == 400 and b"another study" in other_study.content
    for params in ({}, {"PROLIFIC_PID": "has spaces in it", "STUDY_ID": "STUDY1"}):
        missing = Client().get(lifecycle.open_link_path(batch), params)
        assert missing.status_code == 400 and b"participant id" in missing.content
    token = lifecycle.open_token(batch)
    tampered = Client().post(f"/join/{token[:-3]}xyz/", open_params("PID1"))
    assert tampered.status_code == 400
    assert not Assignment.objects.exists()


def test_a_listed_worker_id_cannot_take_a_second_place_by_the_open_link(crowd_task):
    batch = make_batch(crowd_task, workers="LISTED,A1", places=3)
    assert lifecycle.places(batch).taken == 1 and lifecycle.places(batch).free == 2
    refused = Client().post(lifecycle.open_link_path(batch), open_params("LISTED"))
    assert refused.status_code == 409
    assert links.follow(links.token(batch.assignments.get())).state == "active"  # their own link still works


def test_the_open_link_never_signs_into_a_staff_or_owner_account(crowd_task):
    batch = make_batch(crowd_task)
    account_user = links.worker_account(crowd_task, "prolific", "PID9")
    crowd_task.owners.add(account_user)
    refused = Client().post(lifecycle.open_link_path(batch), open_params("PID9"))
    assert refused.status_code == 403 and not Assignment.objects.exists()


def test_returned_and_timed_out_participants_free_their_place_and_keep_their_examples(crowd_task):
    batch = make_batch(crowd_task, places=1, time_limit_minutes=30)
    first, _ = join(batch, "PID1")
    a1 = Assignment.objects.get(worker_id="PID1")
    write(a1, 1)
    assert Client().post(lifecycle.open_link_path(batch), open_params("PID2")).status_code == 409  # full
    assert lifecycle.end(a1, Assignment.State.RETURNED)
    assert not lifecycle.end(a1, Assignment.State.TIMED_OUT)  # the first ending stands
    assert lifecycle.places(batch).free == 1
    page = first.get(f"/assignments/{a1.pk}/")
    assert b'data-state="returned"' in page.content and b"finish-form" not in page.content
    refused = first.post(f"/assignments/{a1.pk}/finish/", follow=True)
    assert b"has ended" in refused.content
    join(batch, "PID2")  # the freed place is taken by the next participant
    a2 = Assignment.objects.get(worker_id="PID2")
    assert lifecycle.time_out_due(now=a2.followed_at + timedelta(minutes=29)) == 0
    assert lifecycle.time_out_due(now=a2.followed_at + timedelta(minutes=30)) == 1
    a2.refresh_from_db()
    assert a2.state == "timed_out" and a2.ended_at is not None and lifecycle.places(batch).free == 1
    from annotation.models import Example

    assert Example.objects.filter(author=a1.user).count() == 1  # kept


def test_finishing_after_the_time_limit_times_out(crowd_task):
    batch = make_batch(crowd_task, examples_required=1, time_limit_minutes=30)
    join(batch, "PID1")
    assignment = Assignment.objects.get(batch=batch)
    write(assignment, 1)
    with pytest.raises(links.Conflict, match="timed out"):
        links.complete(assignment, now=assignment.followed_at + timedelta(minutes=31))
    assert Assignment.objects.get(pk=assignment.pk).state == "timed_out"


def test_an_ended_assignments_link_signs_nobody_in(crowd_task):
    batch = make_batch(crowd_task, workers="W1,A1\nW2,A2", places=0)
    a1, a2 = batch.assignments.order_by("worker_id")
    lifecycle.end(a1, Assignment.State.RETURNED)
    for response in (Client().get(links.link_path(a1)), Client().post(links.link_path(a1))):
        assert response.status_code == 410 and b"has ended" in response.content
    assert Client().post(links.link_path(a2)).status_code == 302


def test_the_sweep_job_times_out_and_never_raises(crowd_task, settings):
    settings.CROWD_PLATFORM_API_URL = "http://127.0.0.1:9"  # nothing listens: the poll fails, the job goes on
    batch = make_batch(crowd_task, time_limit_minutes=5, study_id="STUDY1")
    join(batch, "PID1")
    Assignment.objects.filter(batch=batch).update(followed_at=timezone.now() - timedelta(minutes=6))
    result = jobs.lifecycle_sweep()
    assert result["timed_out"] == 1 and result["failed"] == 1
    batch.refresh_from_db()
    assert batch.poll_error and batch.polled_at is not None


# --- the ways out: ineligible, declined, withdrawn -----------------------------------------------------------


def test_the_screen_out_path_sends_the_person_back_without_a_code(crowd_task):
    batch = make_batch(crowd_task, screen_out_url=SCREEN_OUT)
    worker, _ = join(batch, "PID1")
    assignment = Assignment.objects.get(batch=batch)
    url = lifecycle.exit_url(assignment.user, crowd_task, "ineligible")
    assert url == f"/assignments/{assignment.pk}/leave/?reason=ineligible"
    assert lifecycle.exit_url(assignment.user, crowd_task, "finished") is None
    assert lifecycle.exit_url(UserFactory(username="someone-else"), crowd_task, "declined") is None
    page = worker.get(url)
    assert page.status_code == 200 and b"without a completion code" in page.content
    assert Assignment.objects.get(pk=assignment.pk).state == "active"  # looking changes nothing
    away = worker.post(f"/assignments/{assignment.pk}/leave/", {"reason": "ineligible"})
    assert away.status_code == 302 and away.url == SCREEN_OUT and assignment.completion_code not in away.url
    assignment.refresh_from_db()
    assert assignment.state == "screened_out" and lifecycle.places(batch).free == 2
    assert lifecycle.exit_url(assignment.user, crowd_task, "withdrawn") is None  # nothing under way any more
    assert worker.get(f"/assignments/{assignment.pk}/complete/").url == f"/assignments/{assignment.pk}/"


def test_declining_without_a_screen_out_address_frees_the_place_and_says_so(crowd_task):
    batch = make_batch(crowd_task)
    worker, _ = join(batch, "PID1")
    assignment = Assignment.objects.get(batch=batch)
    bad = worker.get(f"/assignments/{assignment.pk}/leave/?reason=bored")
    assert bad.status_code == 400
    left = worker.post(f"/assignments/{assignment.pk}/leave/", {"reason": "declined"})
    assert left.status_code == 200 and b"return the study on Prolific" in left.content
    assert Assignment.objects.get(pk=assignment.pk).state == "returned"
    nosy = Client()
    nosy.force_login(UserFactory(username="nosy"))
    assert nosy.post(f"/assignments/{assignment.pk}/leave/", {"reason": "declined"}).status_code == 404


def test_the_study_asks_the_crowd_for_the_way_back(crowd_task):
    exits = pytest.importorskip("study.exits")
    if lifecycle.exit_url not in getattr(exits, "_providers", [lifecycle.exit_url]):
        pytest.fail("crowd/apps.py registers lifecycle.exit_url with study.exits.provide")
    batch = make_batch(crowd_task, screen_out_url=SCREEN_OUT)
    join(batch, "PID1")
    assignment = Assignment.objects.get(batch=batch)
    assert exits.return_url(assignment.user, crowd_task, "declined") == \
        f"/assignments/{assignment.pk}/leave/?reason=declined"


# --- the owner's batch page ------------------------------------------------------------------------------------


def test_the_owner_sees_places_states_the_webhook_and_the_events(crowd_task):
    batch = make_batch(crowd_task, workers="W1,A1", places=3, study_id="STUDY1")
    join(batch, "PID1")
    join(batch, "PID2")
    lifecycle.apply_submission_status(batch, participant_id="PID2", submission_id="S-PID2", status="RETURNED",
                                      channel="webhook")
    owner = Client()
    owner.force_login(batch.task.owners.get())
    page = owner.get(f"/console/batches/{batch.pk}/").content.decode()
    assert 'id="places-taken">2<' in page and 'id="places-free">1<' in page
    assert 'data-worker="PID2" data-state="returned"' in page and 'data-worker="PID1" data-state="active"' in page
    assert f"/crowd/webhooks/{batch.pk}/" in page and batch.webhook_secret in page
    assert "PROLIFIC_PID={{%PROLIFIC_PID%}}" in page and "/join/" in page
    assert "returned: place freed" in page
    saved = owner.post(f"/console/batches/{batch.pk}/platform/", {
        "places": 5, "study_id": "STUDY1", "completion_url": COMPLETE, "screen_out_url": SCREEN_OUT,
        "webhook_secret": "the-platform-secret-0123456789"})
    assert saved.status_code == 302
    batch.refresh_from_db()
    assert (batch.places, batch.screen_out_url, batch.webhook_secret) == (5, SCREEN_OUT,
                                                                          "the-platform-secret-0123456789")
    short = owner.post(f"/console/batches/{batch.pk}/platform/", {"places": 5, "webhook_secret": "short"},
                       follow=True)
    assert b"at least 16" in short.content
    batch.refresh_from_db()
    assert batch.webhook_secret == "the-platform-secret-0123456789"


def test_the_batch_form_takes_the_end_rule_and_places(crowd_task):
    owner = UserFactory(username="form-owner")
    crowd_task.owners.add(owner)
    client = Client()
    client.force_login(owner)
    response = client.post(f"/tasks/{crowd_task.slug}/console/crowd/batches/new/", {
        "name": "open wave", "source": "prolific", "workers": "", "places": 40, "hours": 48, "end_rule": "first",
        "examples_required": 5, "minutes_required": 15, "time_limit_minutes": 45, "completion_url": COMPLETE,
        "screen_out_url": SCREEN_OUT, "study_id": "STUDY1"})
    batch = WorkerBatch.objects.get(name="open wave")
    assert response.status_code == 302
    assert (batch.end_rule, batch.minutes_required, batch.places, batch.time_limit_minutes) == ("first", 15, 40, 45)
    with pytest.raises(links.InvalidInput, match="longer than the minutes"):
        make_batch(crowd_task, end_rule="minutes", minutes_required=30, time_limit_minutes=20)
    with pytest.raises(links.InvalidInput, match="minutes of work"):
        make_batch(crowd_task, end_rule="minutes")
    with pytest.raises(links.InvalidInput, match="at least one worker"):
        make_batch(crowd_task, places=0)


def test_a_worker_whose_assignment_ended_does_no_more_work_though_still_signed_in(crowd_task):
    """Returned or timed out: the place went to someone else, so the session that is still open writes nothing more;
    the API says why (409 `assignment_ended`) and the write page sends them to their assignment's page."""
    import json

    batch = make_batch(crowd_task, places=1, time_limit_minutes=30)
    worker, _ = join(batch, "PID1")
    assignment = Assignment.objects.get(worker_id="PID1")
    context = crowd_task.contexts.get()
    body = {"context_id": context.pk, "input": {"text": "Cold soup, warm smile, I would return."},
            "target": "positive"}
    written = worker.post(f"/api/tasks/{crowd_task.slug}/examples/", json.dumps(body),
                          content_type="application/json")
    assert written.status_code in (201, 202), written.content  # at work while the assignment runs
    assert lifecycle.time_out_due(now=assignment.followed_at + timedelta(minutes=31)) == 1
    body["input"] = {"text": "A second example, after the time limit."}
    refused = worker.post(f"/api/tasks/{crowd_task.slug}/examples/", json.dumps(body),
                          content_type="application/json")
    assert refused.status_code == 409 and refused.json()["code"] == "assignment_ended", refused.content
    assert refused.json()["next_url"] == f"/assignments/{assignment.pk}/"
    page = worker.get(f"/tasks/{crowd_task.slug}/create/")
    assert page.status_code == 302 and page.url.startswith(f"/assignments/{assignment.pk}/")
