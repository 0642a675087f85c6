from django.urls import path

from crowd import views

urlpatterns = [
    # The owner's crowd console, under the task's console.
    path("tasks/<slug:slug>/console/crowd/", views.console, name="crowd-console"),
    path("tasks/<slug:slug>/console/crowd/members/", views.appoint, name="crowd-appoint"),
    path("tasks/<slug:slug>/console/crowd/people/", views.people, name="crowd-people"),
    path("tasks/<slug:slug>/console/crowd/suspend/", views.suspend, name="crowd-suspend"),
    path("tasks/<slug:slug>/console/crowd/gold/", views.gold_page, name="crowd-gold"),
    path("tasks/<slug:slug>/console/crowd/gold/mark/", views.gold_mark, name="crowd-gold-mark"),
    path("tasks/<slug:slug>/console/crowd/quiz/<str:role>/", views.quiz_edit, name="crowd-quiz-edit"),
    path("tasks/<slug:slug>/console/crowd/quiz/<str:role>/add/", views.quiz_add, name="crowd-quiz-add"),
    path("tasks/<slug:slug>/console/crowd/quiz/<str:role>/items/<int:item>/delete/", views.quiz_remove,
         name="crowd-quiz-remove"),
    path("tasks/<slug:slug>/console/crowd/batches/new/", views.batch_new, name="crowd-batch-new"),
    path("console/batches/<int:pk>/", views.batch_page, name="crowd-batch"),
    path("console/batches/<int:pk>/links.csv", views.batch_links_csv, name="crowd-batch-links"),
    path("console/batches/<int:pk>/close/", views.batch_close, name="crowd-batch-close"),
    path("console/batches/<int:pk>/platform/", views.batch_platform, name="crowd-batch-platform"),
    path("console/batches/<int:pk>/pay/", views.pay_page, name="crowd-pay"),
    path("console/batches/<int:pk>/pay.csv", views.pay_csv, name="crowd-pay-csv"),
    # The worker's side.
    path("tasks/<slug:slug>/quiz/<str:role>/", views.quiz_take, name="crowd-quiz"),
    path("go/<str:token>/", views.link, name="crowd-link"),
    path("join/<str:token>/", views.open_link, name="crowd-open-link"),
    path("assignments/<int:pk>/", views.assignment_page, name="crowd-assignment"),
    path("assignments/<int:pk>/finish/", views.assignment_finish, name="crowd-assignment-finish"),
    path("assignments/<int:pk>/complete/", views.assignment_complete, name="crowd-assignment-complete"),
    path("assignments/<int:pk>/leave/", views.assignment_leave, name="crowd-assignment-leave"),
    # The crowd platform's webhooks (signed with the batch's secret: crowd.platform).
    path("crowd/webhooks/<int:pk>/", views.webhook, name="crowd-webhook"),
    path("people/<str:username>/", views.profile, name="crowd-profile"),
]
