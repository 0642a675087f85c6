from django.urls import path

from rounds import api, prediction_api

urlpatterns = [
    path("tasks/<slug:slug>/rounds/", api.TaskRoundsView.as_view(), name="api-task-rounds"),
    path("tasks/<slug:slug>/leaderboard/", api.LeaderboardView.as_view(), name="api-task-leaderboard"),
    path("tasks/<slug:slug>/dashboard/", api.DashboardView.as_view(), name="api-task-dashboard"),
    path("tasks/<slug:slug>/arms/comparison/", api.ArmsComparisonView.as_view(), name="api-task-arms-comparison"),
    path("tasks/<slug:slug>/models/", api.ModelUploadView.as_view(), name="api-task-models"),
    path("models/uploads/<int:pk>/ensemble/", api.UploadEnsembleView.as_view(), name="api-upload-ensemble"),
    path("models/uploads/<int:pk>/retrain-from/", api.UploadRetrainFromView.as_view(), name="api-upload-retrain-from"),
    path("jobs/<int:pk>/", api.JobView.as_view(), name="api-job-detail"),
    path("jobs/<int:pk>/retry/", api.JobRetryView.as_view(), name="api-job-retry"),
    path("jobs/<int:pk>/abandon/", api.JobAbandonView.as_view(), name="api-job-abandon"),
    path("jobs/<int:pk>/approve/", api.JobApproveView.as_view(), name="api-job-approve"),
    path("jobs/<int:pk>/discard/", api.JobDiscardView.as_view(), name="api-job-discard"),
    path("models/uploads/<int:pk>/retry/", api.UploadRetryView.as_view(), name="api-upload-retry"),
    path("models/uploads/<int:pk>/abandon/", api.UploadAbandonView.as_view(), name="api-upload-abandon"),
    path("tasks/<slug:slug>/predictions/", prediction_api.PredictionListView.as_view(), name="api-task-predictions"),
    path("tasks/<slug:slug>/predictions/test-sets/", prediction_api.TestSetsView.as_view(),
         name="api-task-prediction-test-sets"),
    path("predictions/<int:pk>/", prediction_api.PredictionDetailView.as_view(), name="api-prediction-detail"),
]
