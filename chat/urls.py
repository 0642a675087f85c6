"""The chat kind's pages: the conversation page (`chat.views`), judging marked answers (`chat.judging_views`) and
the arena leaderboard (`chat.arena_views`)."""

from django.urls import include, path

urlpatterns = [
    path("", include("chat.views")),
    path("", include("chat.judging_views")),
    path("", include("chat.arena_views")),
]
