"""The study's API (under /api/): the participant's consent, surveys and withdrawal; the arms' (study.arm_api_urls)."""

from django.urls import include, path

urlpatterns: list = [
    path("", include("study.arm_api_urls")),
]
