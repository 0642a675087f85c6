from django.urls import path

from accounts import views

urlpatterns = [
    path("me/tokens/", views.tokens_page, name="accounts-tokens"),
    path("me/tokens/<int:pk>/revoke/", views.revoke_token, name="accounts-token-revoke"),
]
