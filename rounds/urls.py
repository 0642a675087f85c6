from django.urls import path

from rounds import prediction_views, views

urlpatterns = [
    path("console/", views.console, name="rounds-console"),
    path("console/jobs/<int:pk>/", views.job, name="rounds-job"),
    path("console/jobs/<int:pk>/retry/", views.job_action, {"action": "retry"}, name="rounds-job-retry"),
    path("console/jobs/<int:pk>/abandon/", views.job_action, {"action": "abandon"}, name="rounds-job-abandon"),
    path("console/jobs/<int:pk>/approve/", views.job_action, {"action": "approve"}, name="rounds-job-approve"),
    path("console/jobs/<int:pk>/discard/", views.job_action, {"action": "discard"}, name="rounds-job-discard"),
    path("console/uploads/<int:pk>/retry/", views.upload_action, {"action": "retry"}, name="rounds-upload-retry"),
    path("console/uploads/<int:pk>/abandon/", views.upload_action, {"action": "abandon"}, name="rounds-upload-abandon"),
    path("console/uploads/<int:pk>/ensemble/", views.upload_include, name="rounds-upload-include"),
    path("console/uploads/<int:pk>/retrain-from/", views.upload_retrain_from, name="rounds-upload-retrain-from"),
    path("tasks/<slug:slug>/console/", views.task_console, name="rounds-task-console"),
    # The console's rounds section: GET shows it with what closing will do, POST closes the round.
    path("tasks/<slug:slug>/console/rounds/", views.console_rounds, name="rounds-console-rounds"),
    path("tasks/<slug:slug>/console/health/", views.console_health, name="rounds-console-health"),
    path("tasks/<slug:slug>/leaderboard/", views.leaderboard_page, name="rounds-leaderboard"),
    path("tasks/<slug:slug>/dashboard/", views.dashboard_page, name="rounds-dashboard"),
    path("tasks/<slug:slug>/models/upload/", views.model_upload, name="rounds-model-upload"),
    # Prediction-file uploads (rounds.predictions): the form, the test rows without labels, an upload's report.
    path("tasks/<slug:slug>/predictions/upload/", prediction_views.upload, name="rounds-predictions-upload"),
    path("tasks/<slug:slug>/predictions/inputs/", prediction_views.inputs, name="rounds-predictions-inputs"),
    path("predictions/<int:pk>/", prediction_views.detail, name="rounds-predictions-detail"),
]
