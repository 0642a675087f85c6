"""Pages of prediction-file uploads (docs/evaluation/predictions.md): the upload form with the task's test sets and
the line format, the JSON-lines download of the test rows without their labels, and an upload's page (its status
per test set and its row-level error report, a page at a time)."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _

from dynabench_site import bodylimit
from dynabench_site.pages import throttled_page
from dynabench_site.text import validate_text
from dynabench_site.throttles import Throttled
from rounds import predictions
from rounds.models import PredictionUpload
from tasks import roles
from tasks.access import task_for
from tasks.models import Task

ERRORS_PER_PAGE = 50


class PredictionForm(forms.Form):
    name = forms.CharField(max_length=100, validators=[validate_text], help_text="shown on the leaderboard")
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}), validators=[validate_text])
    file = forms.FileField(label="Prediction file (JSON lines)", required=False)


def upload_context(request, task: Task, form: PredictionForm, errors: list[str]) -> dict[str, Any]:
    return {"task": task, "form": form, "errors": errors, "mine": predictions.visible_uploads(request.user, task)[:50],
            "can_manage": roles.can_manage(request.user, task),
            "sets": predictions.public_sets(task), "kind": predictions.output_kind(task),
            "line_format": predictions.line_format(task), "labels": getattr(task.typed_config, "labels", None),
            "max_mb": predictions.MAX_BYTES // predictions.MB, "daily_limit": predictions.DAILY_LIMIT}


@login_required
def upload(request, slug: str):
    """GET: the form, the test sets and the line format; POST: check, store and score a file, then its page."""
    task = task_for(request, slug, roles.RESEARCHER)
    template = "rounds/predictions_upload.html"
    form = PredictionForm(request.POST or None, request.FILES or None)
    errors: list[str] = []
    if request.method == "POST" and (too_large := bodylimit.refusal(request)):  # stopped at the cap: nothing stored
        return render(request, template, upload_context(request, task, form, [too_large]), status=413)
    if predictions.output_kind(task) is None:
        errors = ["A chat task's models are language models answering people: there is nothing to predict, so "
                  "prediction files are not accepted."]
        return render(request, template, upload_context(request, task, form, errors),
                      status=400 if request.method == "POST" else 200)
    if request.method == "POST" and form.is_valid():
        try:
            done = predictions.submit(task, request.user, form.cleaned_data["name"], form.cleaned_data["file"],
                                      form.cleaned_data["description"])
        except predictions.PredictionsRefused as exc:
            errors = exc.errors
        except Throttled as exc:
            return throttled_page(request, template, upload_context(request, task, form, [exc.message]),
                                  exc.retry_after or 60)
        else:
            if done.status == PredictionUpload.Status.REJECTED:
                messages.error(request, _("No line of %(file)s could be used: the report below says why, line by "
                                          "line.") % {"file": done.filename or _("the file")})
                return redirect("rounds-predictions-detail", pk=done.pk)
            messages.success(request, _("%(name)s: %(accepted)s of %(rows)s lines accepted and scored.")
                             % {"name": done.name, "accepted": done.accepted, "rows": done.rows})
            return redirect("rounds-predictions-detail", pk=done.pk)
    return render(request, template, upload_context(request, task, form, errors),
                  status=400 if errors or form.errors else 200)


@login_required
def inputs(request, slug: str):
    """The test sets' rows without their labels, one JSON line each: {"id", "dataset", "context", "input"}."""
    task = task_for(request, slug, roles.RESEARCHER)
    lines = []
    for name, rows in predictions.test_rows(task).items():
        for row in rows:
            lines.append(json.dumps({**predictions.shown(task, row), "dataset": name}, ensure_ascii=False))
    response = HttpResponse("\n".join(lines) + ("\n" if lines else ""), content_type="application/x-ndjson")
    response["Content-Disposition"] = f'attachment; filename="{task.slug}-test-inputs.jsonl"'
    return response


@login_required
def detail(request, pk: int):
    """An upload's page: its status per test set and its row-level error report (ERRORS_PER_PAGE a page). The
    uploader and the task's owners and admins; anyone else finds nothing here (404)."""
    done = predictions.get_visible(request.user, pk)
    report = done.report or {}
    page = Paginator(report.get("errors", []), ERRORS_PER_PAGE).get_page(request.GET.get("page"))
    return render(request, "rounds/predictions_detail.html", {
        "task": done.task, "upload": done, "sets": predictions.summary(done), "page": page,
        "error_count": report.get("error_count", 0), "by_code": [(predictions.CODE_LABELS.get(code, code), n)
                                                          for code, n in sorted(report.get("by_code", {}).items())],
        "truncated": report.get("truncated", False), "max_errors": predictions.REPORT_MAX_ERRORS,
        "can_upload": predictions.can_upload(request.user, done.task)})
