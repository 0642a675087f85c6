"""Downloads of a chat round (chat.exports; docs/chat/exports.md).

    GET /api/tasks/{slug}/rounds/{n}/chat/{dataset}/   dataset: conversations | preferences | red-team (JSON Lines),
                                                        card (the dataset card, Markdown), bundle (a zip of all four)

Who may download: the rule of `exports.access.can_download` for a researchers' snapshot — the task must be visible
to the caller (404 otherwise, `tasks.access`), and the caller must hold the researcher role on it, which the task's
owners and admins do too (`tasks.roles.has_role`; a suspension takes it away). Chat sits below `exports` and
cannot call it, so the rule is re-applied here from the same two calls; tests/chat/test_exports.py checks, persona
by persona, that both give the same answer. A chat round has no published versions: conversations are final once
written, so what a researcher downloads is the round as it stands (the card says when its conversations ran).
"""

from __future__ import annotations

import tempfile

from django.http import FileResponse, HttpResponse, StreamingHttpResponse
from django.urls import path
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.authentication import SessionAuthentication
from rest_framework.views import APIView

from accounts.authentication import ApiTokenAuthentication
from chat import exports
from dynabench_site.errors import InvalidInput
from dynabench_site.text import quote
from tasks.access import TaskScopedMixin
from tasks.models import Round, Task
from tasks.permissions import IsResearcher

# Tokens first: their 401 answers carry "WWW-Authenticate: Token" (as the classification datasets' API).
AUTHENTICATION = [ApiTokenAuthentication, SessionAuthentication]
CARD, BUNDLE = "card", "bundle"
SPOOL_BYTES = 8 << 20  # a bundle larger than this is written to a temporary file, not held in memory


class ChatExportError(InvalidInput, ValueError):
    """A bad request for chat data (not a chat task, unknown round or dataset); the message says what is wrong."""


def chat_round(task: Task, number: str) -> Round:
    if not task.kind_impl.generative:
        raise ChatExportError(f"task {task.slug!r} is a {task.kind} task, not a chat task: its rounds are downloaded "
                              f"from /api/tasks/{task.slug}/rounds/{{n}}/dataset/")
    try:
        return task.rounds.get(number=int(number))
    except (ValueError, Round.DoesNotExist):
        have = ", ".join(str(n) for n in task.rounds.values_list("number", flat=True)) or "none yet"
        raise ChatExportError(f"task {task.slug!r} has no round {quote(number)}; its rounds: {have}") from None


def _attachment(response: HttpResponse, filename: str) -> HttpResponse:
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    response["X-Content-Type-Options"] = "nosniff"
    return response


class ChatDatasetView(TaskScopedMixin, APIView):
    authentication_classes = AUTHENTICATION
    permission_classes = [IsResearcher]

    @extend_schema(responses={(200, "application/jsonl"): OpenApiTypes.BINARY,
                              (200, "text/markdown"): OpenApiTypes.STR,
                              (200, "application/zip"): OpenApiTypes.BINARY})
    def get(self, request, slug: str, number: str, dataset: str):
        task = self.get_task()
        round_ = chat_round(task, number)
        prefix = f"{task.slug}-round{round_.number}"
        if dataset == CARD:
            return _attachment(HttpResponse(exports.card(round_), content_type="text/markdown; charset=utf-8"),
                               f"{prefix}-README.md")
        if dataset == BUNDLE:
            spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES)  # noqa: SIM115 (FileResponse closes it)
            exports.write_bundle(round_, spool)
            spool.seek(0)
            return _attachment(FileResponse(spool, content_type="application/zip"), f"{prefix}-chat.zip")
        try:
            chosen = exports.get_dataset(dataset)
        except exports.UnknownDataset as exc:
            raise ChatExportError(str(exc)) from None
        chunks = exports.jsonl(exports.rows(round_, chosen.name))
        return _attachment(StreamingHttpResponse(chunks, content_type="application/jsonl; charset=utf-8"),
                           f"{prefix}-{chosen.filename}")


urlpatterns = [
    path("tasks/<slug:slug>/rounds/<str:number>/chat/<str:dataset>/", ChatDatasetView.as_view(),
         name="chat-export"),
]
