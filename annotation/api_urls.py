from django.urls import path

from annotation import api

urlpatterns = [
    path("tasks/<slug:slug>/contexts/next/", api.NextContextView.as_view(), name="api-context-next"),
    path("tasks/<slug:slug>/examples/", api.ExampleCreateView.as_view(), name="api-example-create"),
    path("tasks/<slug:slug>/sandbox/", api.SandboxView.as_view(), name="api-sandbox"),
    path("tasks/<slug:slug>/inspiration/", api.InspirationView.as_view(), name="api-inspiration"),
    path("tasks/<slug:slug>/suggestions/", api.SuggestionCreateView.as_view(), name="api-suggestion-create"),
    path("suggestions/<int:pk>/", api.SuggestionView.as_view(), name="api-suggestion-detail"),
    path("examples/<int:pk>/", api.ExampleView.as_view(), name="api-example-detail"),
    path("examples/<int:pk>/score/", api.ScoreView.as_view(), name="api-example-score"),
    path("examples/<int:pk>/word-map/", api.WordMapView.as_view(), name="api-example-word-map"),
    path("examples/<int:pk>/retract/", api.RetractView.as_view(), name="api-example-retract"),
    path("examples/<int:pk>/flag/", api.FlagView.as_view(), name="api-example-flag"),
    path("examples/<int:pk>/explanation/", api.WriterExplanationView.as_view(), name="api-example-explanation"),
    path("examples/<int:pk>/appeal/", api.AppealView.as_view(), name="api-example-appeal"),
    path("me/stats/", api.MyStatsView.as_view(), name="api-my-stats"),
    path("me/examples/", api.MyExamplesView.as_view(), name="api-my-examples"),
]
