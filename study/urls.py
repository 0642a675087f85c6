"""The study's pages: the participant's path (consent, surveys, withdrawal) and the owner's study console;
the arms' pages (study.arm_urls) and the task texts' translations (study.text_urls)."""

from django.urls import include, path

from study import views

urlpatterns: list = [
    # --- the participant's path ---
    path("tasks/<slug:slug>/consent/", views.consent_page, name="study-consent"),
    path("tasks/<slug:slug>/consent/withdraw/", views.withdraw_page, name="study-withdraw"),
    path("tasks/<slug:slug>/surveys/<str:phase>/", views.survey_page, name="study-survey"),
    path("tasks/<slug:slug>/study/stop/<str:reason>/", views.stop_page, name="study-stop"),
    # --- the owner's study console ---
    path("tasks/<slug:slug>/console/study/", views.console_page, name="study-console"),
    path("tasks/<slug:slug>/console/study/consent/", views.consent_edit, name="study-consent-edit"),
    path("tasks/<slug:slug>/console/study/consent.csv", views.consent_csv, name="study-consent-csv"),
    path("tasks/<slug:slug>/console/study/surveys/<str:phase>/", views.survey_edit, name="study-survey-edit"),
    path("tasks/<slug:slug>/console/study/surveys/<str:phase>/answers.csv", views.answers_csv,
         name="study-answers-csv"),
    path("tasks/<slug:slug>/console/study/surveys/<str:phase>/questions/", views.question_add,
         name="study-question-add"),
    path("tasks/<slug:slug>/console/study/surveys/<str:phase>/questions/<slug:key>/", views.question_edit,
         name="study-question-edit"),
    path("tasks/<slug:slug>/console/study/surveys/<str:phase>/questions/<slug:key>/delete/", views.question_delete,
         name="study-question-delete"),
    path("tasks/<slug:slug>/console/study/surveys/<str:phase>/questions/<slug:key>/move/", views.question_move,
         name="study-question-move"),
    path("", include("study.arm_urls")),
    path("", include("study.text_urls")),
]
