"""The study's API (under /api/): the participant's consent, surveys and withdrawal; the owner's study settings,
consent versions, survey definitions and records; the arms' (study.arm_api_urls)."""

from django.urls import include, path

from study import api

urlpatterns: list = [
    path("tasks/<slug:slug>/consent/", api.ConsentView.as_view(), name="api-study-consent"),
    path("tasks/<slug:slug>/consent/withdraw/", api.WithdrawView.as_view(), name="api-study-withdraw"),
    path("tasks/<slug:slug>/surveys/<str:phase>/", api.SurveyView.as_view(), name="api-study-survey"),
    path("tasks/<slug:slug>/study/", api.StudySettingsView.as_view(), name="api-study"),
    path("tasks/<slug:slug>/study/consent/", api.ConsentVersionsView.as_view(), name="api-study-consent-versions"),
    path("tasks/<slug:slug>/study/consent-records/", api.ConsentRecordsView.as_view(),
         name="api-study-consent-records"),
    path("tasks/<slug:slug>/study/surveys/<str:phase>/", api.SurveyDefinitionView.as_view(),
         name="api-study-survey-definition"),
    path("tasks/<slug:slug>/study/surveys/<str:phase>/answers/", api.SurveyAnswersView.as_view(),
         name="api-study-survey-answers"),
    path("", include("study.arm_api_urls")),
]
