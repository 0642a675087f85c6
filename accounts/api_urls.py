from django.urls import path

from accounts import api

urlpatterns = [
    path("auth/token/", api.ObtainTokenView.as_view(), name="api-token"),
    path("tokens/", api.TokenListView.as_view(), name="api-token-list"),
    path("tokens/<int:pk>/", api.TokenDetailView.as_view(), name="api-token-detail"),
]
