"""The arena as JSON (docs/chat/arena.md): GET /api/tasks/<slug>/arena/[?round=N].

Who may read it: whoever may see the task (tasks.access — anyone, signed in or not, for a public active task),
the rule of the task's model leaderboard (GET /api/tasks/<slug>/leaderboard/). Only a chat task has an arena:
any other kind answers 404. The arena names the targets: it is where blinding ends.
"""

from __future__ import annotations

from django.http import Http404
from django.urls import path
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from chat import arena
from dynabench_site.params import whole_number
from tasks.access import TaskScopedMixin
from tasks.models import Round, Task


def arena_task(task: Task) -> Task:
    if task.kind != "chat":
        raise Http404("Only a chat task has an arena.")
    return task


def arena_round(task: Task, raw: str | None) -> Round | None:
    """The round `?round=` names (400 when it is no whole number, 404 when the task has no such round)."""
    number = whole_number(raw, "round")
    if number is None:
        return None
    found = task.rounds.filter(number=number).first()
    if found is None:
        raise Http404(f"The task has no round {number}.")
    return found


class ArenaSerializer(serializers.Serializer):
    task = serializers.CharField()
    scale = serializers.ChoiceField(choices=["slider", "pairwise"])
    blinded = serializers.BooleanField(help_text="whether writers see the targets blinded (this page names them)")
    round = serializers.IntegerField(allow_null=True, help_text="the round asked for; null: every round")
    comparisons = serializers.IntegerField(help_text="pairwise choices between two ready answers (a tie counts)")
    compared_models = serializers.IntegerField()
    needed = serializers.IntegerField(help_text="about how many comparisons a ranking of this many models needs")
    enough = serializers.BooleanField(help_text="false: too few comparisons, `ranking` is null for every model")
    models = serializers.ListField(child=serializers.DictField(), help_text=(
        "each target: name, settings (provider, model, system_prompt, system_prompt_summary, temperature), "
        "answers, comparisons, wins, losses, ties, ranking (Bradley-Terry strength, score, their 95 % "
        "bootstrap interval, rank and its interval) or null, rating (mean, low, high, n) or null, and failures "
        "{category: {count, answers, rate, low, high}} (confirmed failures, Wilson 95 % interval)"))
    matrix = serializers.DictField(help_text="models and cells[row][column]: {wins, ties, n, rate} of the row's model "
                                             "against the column's (a tie half a win), null where they never met")
    categories = serializers.ListField(child=serializers.DictField())
    method = serializers.DictField()


class ArenaView(TaskScopedMixin, APIView):
    permission_classes = [AllowAny]

    @extend_schema(
        summary="The arena of a chat task: Bradley-Terry ranking of its target models from writers' pairwise "
                "choices, the win-rate matrix, mean ratings and confirmed-failure rates, with 95 % intervals",
        parameters=[OpenApiParameter("round", int, description="one round's conversations (default: every round)")],
        responses={200: ArenaSerializer, 400: OpenApiResponse(description="round is not a whole number"),
                   404: OpenApiResponse(description="no such task or round, or the task is not a chat task")},
    )
    def get(self, request, slug: str) -> Response:
        task = arena_task(self.get_task())
        return Response(arena.board(task, arena_round(task, request.query_params.get("round"))))


urlpatterns = [
    path("tasks/<slug:slug>/arena/", ArenaView.as_view(), name="api-chat-arena"),
]
