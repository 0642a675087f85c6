from django.urls import path

from annotation import views

urlpatterns = [
    path("tasks/<slug:slug>/create/", views.create, name="annotation-create"),
    path("me/examples/", views.my_examples, name="annotation-my-examples"),
    path("me/examples/<int:pk>/appeal/", views.appeal, name="annotation-appeal"),
    # The console's health page: ask again for failed or stuck scoring (POST, owners).
    path("tasks/<slug:slug>/console/health/scoring/retry/", views.scoring_retry, name="annotation-scoring-retry"),
]
