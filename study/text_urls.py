"""The translations' routes: the owner's pages for a task's texts per language (study.text_views), and the page
scripts' catalogue of interface strings (Django's JavaScriptCatalog: gettext() in frontend/static/js/)."""

from django.urls import path
from django.views.decorators.cache import cache_control
from django.views.i18n import JavaScriptCatalog

from study import text_views

urlpatterns: list = [
    # The page's language is in the address (base.html adds ?v=<language>): a browser keeps one catalogue per
    # language for an hour, and a language switch fetches the other one.
    path("jsi18n/", cache_control(max_age=3600)(JavaScriptCatalog.as_view()), name="javascript-catalog"),
    path("tasks/<slug:slug>/texts/", text_views.overview, name="study-texts"),
    path("tasks/<slug:slug>/texts/<str:language>/", text_views.edit, name="study-texts-edit"),
]
