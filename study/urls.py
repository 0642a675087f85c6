"""The study's pages: the participant's path (consent, surveys, withdrawal) and the owner's study console;
the arms' pages (study.arm_urls) and the task texts' translations (study.text_urls)."""

from django.urls import include, path

urlpatterns: list = [
    path("", include("study.arm_urls")),
    path("", include("study.text_urls")),
]
