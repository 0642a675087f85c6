"""The arms' API routes (under /api/): the owner's arms (the assignment's settings are the study's: api-study), and a participant's own condition
(study.arm_api). An arm is named by its id (its key may be anything, e.g. the comparison's own word)."""

from django.urls import path

from study import arm_api

urlpatterns: list = [
    path("tasks/<slug:slug>/arms/", arm_api.ArmsView.as_view(), name="api-study-arms"),
    path("tasks/<slug:slug>/arms/mine/", arm_api.MineView.as_view(), name="api-study-arm-mine"),
    path("tasks/<slug:slug>/arms/<int:pk>/", arm_api.ArmView.as_view(), name="api-study-arm"),
]
