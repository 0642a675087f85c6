from django.urls import path

from validation import api

urlpatterns = [
    path("tasks/<slug:slug>/validation/next/", api.NextItemView.as_view(), name="api-validation-next"),
    path("tasks/<slug:slug>/stats/", api.TaskStatsView.as_view(), name="api-task-stats"),
    path("examples/<int:pk>/validations/", api.VoteView.as_view(), name="api-example-validations"),
]
