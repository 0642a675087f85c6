"""Routes of this module are added by its owner (see chat/urls.py and chat/api_urls.py)."""

urlpatterns: list = []
