"""The chat kind's API: conversations and turns (`chat.api`), judgements of marked answers (`chat.judging_api`),
the arena (`chat.arena_api`) and the exports (`chat.exports_api`)."""

from django.urls import include, path

urlpatterns = [
    path("", include("chat.api")),
    path("", include("chat.judging_api")),
    path("", include("chat.arena_api")),
    path("", include("chat.exports_api")),
]
