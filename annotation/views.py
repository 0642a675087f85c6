"""The create page: server-rendered, with create.js calling the same API the services back."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from annotation import assistant, feedback, jobs, scoring_health, services
from annotation.models import Example
from dynabench_site import errors
from dynabench_site.pages import back_url, returns_to
from dynabench_site.params import whole_number
from study import arms
from tasks import roles
from tasks.access import step_redirect, task_for, visible_task
from tasks.models import Task
from zoo import explain_methods


def page_config(task: Task, round_number: int | None, user=None) -> dict[str, Any]:
    """What create.js needs to know about the task (passed with json_script), API addresses included; with `user`,
    what the writer's study arm allows (study.arms: the assistant, the models' verdicts)."""
    config = task.typed_config
    return {
        "urls": api_urls(task),
        "slug": task.slug,
        "kind": task.kind,
        "answer_is_span": task.kind_impl.answer_is_span,
        "labels": list(getattr(config, "labels", [])),
        "input_fields": list(config.input_fields),
        "context_fields": list(config.context_fields),
        "max_input_chars": config.max_input_chars,
        "round": round_number,
        "explanation_methods": explain_methods.described(),  # name, label: how the map names its method
        "assistant": assistant.enabled(task, user),  # the writing assistant (annotation.assistant)
        "model_in_loop": arms.shows_models(task, user) if user is not None else True,  # else "saved" only
    }


def api_urls(task: Task) -> dict[str, str]:
    return {
        "next_context": reverse("api-context-next", args=[task.slug]),
        "submit": reverse("api-example-create", args=[task.slug]),
        "inspiration": reverse("api-inspiration", args=[task.slug]),
        "suggestions": reverse("api-suggestion-create", args=[task.slug]),
        "my_stats": f"{reverse('api-my-stats')}?{urlencode({'task': task.slug})}",
        "my_examples": f"{reverse('annotation-my-examples')}?{urlencode({'task': task.slug})}",
        "guidelines_acknowledge": reverse("api-guidelines-acknowledge", args=[task.slug]),  # confirmed in place
    }


def context_rows(task: Task) -> list[tuple[str, str]]:
    """The context fields the page shows, empty: create.js fills them with a context it asks for with
    POST contexts/next/ (serving a context counts its use, so a GET of this page changes nothing)."""
    return [(name, "") for name in task.typed_config.context_fields]


@login_required
def create(request, slug: str):
    task = task_for(request, slug, roles.ANNOTATOR)
    if (step := step_redirect(request, task)) is not None:  # consent, the pre-survey (tasks.gates)
        return step
    arms.joined(task, request.user)  # a study's arm, assigned before the page shows what it allows
    round = task.current_round
    figures = services.writer_figures(request.user, task)
    if not arms.shows_models(task, request.user):  # no model in the loop: the verdicts' figures are not shown
        figures.update(fooled="—", verified_fooled="—", mer=None, vmer=None)
    return render(
        request,
        "annotation/create.html",
        {
            "task": task,
            "task_config": task.typed_config,
            "round": round,
            "context": None,
            "context_rows": context_rows(task),
            "config": page_config(task, round.number if round else None, request.user),
            "figures": figures,
            "assistant": assistant.enabled(task, request.user),
            "assistant_model": assistant_model_name(task),
        },
    )


def assistant_model_name(task: Task) -> str:
    """Which model writes the suggestions, as the page names it (no key, no address)."""
    provider = task.typed_config.assistant.provider
    if provider.provider == "local":
        return "SmolLM2-135M-Instruct, on this server"
    return provider.model or "the site's language model"


@login_required
def my_examples(request):
    """The writer's own examples: the model's verdict, how validation went, and the appeal form."""
    slug = request.GET.get("task", "")
    task = visible_task(request.user, slug) if slug else None
    page = Paginator(feedback.my_examples(request.user, task), 50).get_page(request.GET.get("page"))
    return render(request, "annotation/my_examples.html",
                  {"task": task, "page": page, "rows": feedback.rows(list(page.object_list))})


@login_required
@require_POST
@returns_to("annotation-my-examples", say="Example {pk} not appealed: {error}")
def appeal(request, pk: int):
    example = get_object_or_404(Example.objects.select_related("round__task"), pk=pk)
    if example.author_id != request.user.pk:
        raise Http404("No example with this id.")
    services.appeal(example, request.POST.get("reason", ""))
    messages.success(request, _("Example %(id)s was sent to an expert. You will see the decision here.") % {"id": pk})
    return redirect(back_url(request, reverse("annotation-my-examples")))


@login_required
@require_POST
@returns_to("rounds-console-health", "slug", say="Scoring not retried: {error}")
def scoring_retry(request, slug: str):
    """The console's health page: an owner asks again for the task's examples whose scoring failed or is
    stuck (one, with `example=<id>`, or all of them). Failed ones get a fresh set of tries; stuck pending
    ones are queued again (a verdict is still stored once: scoring claims each attempt)."""
    task = task_for(request, slug, roles.OWNER)
    chosen = scoring_health.attention(task)
    if request.POST.get("example"):
        pk = whole_number(request.POST.get("example"), "example")
        chosen = [e for e in chosen if e.pk == pk]
        if not chosen:
            raise errors.InvalidInput(f"example {pk} of this task is neither failed nor stuck", field="example")
    failed = jobs.retry_failed(e for e in chosen if e.scoring_state == Example.Scoring.FAILED)
    stuck = [e for e in chosen if e.scoring_state == Example.Scoring.PENDING]
    for example in stuck:
        jobs.enqueue_scoring(example.pk)
    messages.success(request, _("Scoring asked again for %(n)s example(s) (%(failed)s failed, %(stuck)s stuck).")
                     % {"n": failed + len(stuck), "failed": failed, "stuck": len(stuck)})
    return redirect("rounds-console-health", slug=task.slug)
