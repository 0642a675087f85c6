"""Pages of judging marked answers (docs/chat/judging.md): the judge page (one marked answer at a time, from the
API's queue) and the experts' list of disputed answers. Both are read from the API by frontend/static/js/judge.js;
the pages hold the task, the taxonomy and the API's addresses."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import path

from chat import judging
from chat.judging_api import disputed_payload
from tasks import roles
from tasks.access import task_for


@login_required
def judge(request: HttpRequest, slug: str) -> HttpResponse:
    task = judging.chat_task(task_for(request, slug, roles.VALIDATOR))
    return render(request, "chat/judge.html", {
        "task": task, "config": task.typed_config, "quorum": judging.quorum(task),
        "categories": judging.categories(task), "guidance": judging.guidance_text(task)})


@login_required
def disputed(request: HttpRequest, slug: str) -> HttpResponse:
    task = judging.chat_task(task_for(request, slug, roles.EXPERT))
    failures = [disputed_payload(f, task) for f in judging.disputed(task)[:200]]
    return render(request, "chat/judge_disputed.html", {
        "task": task, "config": task.typed_config, "failures": failures, "categories": judging.categories(task),
        "figures": judging.figures(task), "guidance": judging.guidance_text(task)})


urlpatterns = [
    path("tasks/<slug:slug>/chat/judge/", judge, name="chat-judge"),
    path("tasks/<slug:slug>/chat/disputed/", disputed, name="chat-disputed"),
]
