from django.urls import path

from exports import api

urlpatterns = [
    path("tasks/<slug:slug>/datasets/", api.DatasetListView.as_view(), name="exports-dataset-list"),
    path(
        "tasks/<slug:slug>/rounds/<str:number>/dataset/", api.RoundDatasetView.as_view(), name="exports-round-dataset"
    ),
    path("tasks/<slug:slug>/rounds/<str:number>/bundle/", api.RoundBundleView.as_view(), name="exports-round-bundle"),
    path("tasks/<slug:slug>/rounds/<str:number>/snapshots/", api.PublishView.as_view(), name="exports-publish"),
    path("tokens/readonly/", api.TokenListView.as_view(), name="exports-token-list"),
    path("tokens/readonly/<int:pk>/", api.TokenRevokeView.as_view(), name="exports-token-revoke"),
]
