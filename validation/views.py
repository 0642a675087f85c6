"""Pages of validation: the keyboard-first validation page, the expert page and the figures page."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import BooleanField, Case, Exists, F, OuterRef, Prefetch, Q, QuerySet, Value, When
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from annotation.models import Example
from dynabench_site import throttles
from dynabench_site.pages import returns_to
from dynabench_site.params import whole_number
from tasks import roles
from tasks.access import step_redirect, task_for
from tasks.models import Task
from validation import guidance, services, stats
from validation.models import Validation

# What lands in the expert queue: disputed consensus, anything flagged (by the validators' consensus, by the
# writer, or by one validator's vote) and writers' appeals of a rejection.
DISPUTED = Q(consensus=Example.Consensus.DISPUTED)
FLAGS = Q(consensus=Example.Consensus.FLAGGED) | Q(flagged=True) | Q(has_flag_vote=True)
APPEALS = Q(appealed_at__isnull=False)
SHOW = {"all": DISPUTED | FLAGS | APPEALS, "disagreements": DISPUTED, "flags": FLAGS, "appeals": APPEALS}


@login_required
def validate(request: HttpRequest, slug: str) -> HttpResponse:
    task = task_for(request, slug, roles.VALIDATOR)
    if (step := step_redirect(request, task)) is not None:  # consent, the pre-survey (tasks.gates)
        return step
    return render(request, "validation/validate.html", {"task": task, "config": task.typed_config,
                                                        "rule": task.typed_config.validation,
                                                        "guidance": guidance.text(task)})


def review_queryset(task: Task, params: dict[str, str]) -> QuerySet[Example]:
    """The task's expert queue (disputed, flagged, appealed), filtered by the expert page's parameters.
    Resolved: an expert or owner voted (after the appeal, for an appealed example)."""
    wanted = SHOW.get(params.get("show", "all"), SHOW["all"])
    overridden = Validation.objects.filter(example=OuterRef("pk")).exclude(mode=Validation.Mode.CROWD)
    flag_votes = Validation.objects.filter(example=OuterRef("pk"), verdict=Validation.Verdict.FLAGGED, counted=True)
    examples = Example.objects.filter(round__task=task, retracted=False)
    examples = examples.annotate(has_flag_vote=Exists(flag_votes), overridden=Exists(overridden)).filter(wanted)
    appeal_open = Q(appealed_at__isnull=False, appeal_resolved_at__isnull=True)
    examples = examples.annotate(resolved=Case(When(appeal_open, then=Value(False)), default=F("overridden"),
                                               output_field=BooleanField()))
    if params.get("resolved") != "1":
        examples = examples.filter(resolved=False)
    if (number := whole_number(params.get("round"), "round")) is not None:
        examples = examples.filter(round__number=number)
    votes = Prefetch("validations", Validation.objects.select_related("validator").order_by("id"))
    return examples.select_related("round", "context", "author").prefetch_related(votes).order_by("id")


@login_required
def expert(request: HttpRequest, slug: str) -> HttpResponse:
    task = task_for(request, slug, roles.EXPERT)
    params = {k: request.GET.get(k, "") for k in ("show", "round", "resolved")}
    params["show"] = params["show"] if params["show"] in SHOW else "all"
    examples = list(review_queryset(task, params)[:200])
    return render(request, "validation/expert.html", {
        "task": task, "config": task.typed_config, "examples": examples, "params": params,
        "guidance": guidance.text(task),
        "labels": getattr(task.typed_config, "labels", None), "rounds": task.rounds.order_by("number"),
    })


def form_label(task: Task, example: Example, raw: str) -> Any:
    """A label typed into a form: a class name, or for QA the answer text (its offset is found in the passage)."""
    if not raw:
        return None
    if not task.kind_impl.answer_is_span:
        return raw
    passage = services.context_payload(example).get(task.typed_config.context_fields[0], "")
    return {"text": raw, "start": max(str(passage).find(raw.strip()), 0)}


@login_required
@require_POST
@returns_to("validation-expert", "slug", say="Example {pk} not resolved: {error}")
def resolve(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    task = task_for(request, slug, roles.EXPERT)
    throttles.check_vote(request.user)
    example = get_object_or_404(Example.objects.select_related("round__task", "context"), pk=pk, round__task=task)
    verdict = request.POST.get("verdict")
    label = form_label(task, example, request.POST.get("label", "")) if verdict == "incorrect" else None
    result = services.submit_vote(request.user, example, verdict, label, request.POST.get("reason"))
    messages.success(request, _("Example %(id)s is now %(state)s.") % {"id": pk, "state": result.decision.state})
    return redirect(reverse("validation-expert", args=[slug]) + _query(request.POST.get("next", "")))


def _query(raw: str) -> str:
    return raw if raw.startswith("?") else ""


def figures(request: HttpRequest, slug: str) -> HttpResponse:
    task = task_for(request, slug)
    return render(request, "validation/stats.html", {"task": task, "stats": stats.task_stats(task)})
