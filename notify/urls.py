from django.urls import path

from notify import views

urlpatterns = [
    path("tasks/<slug:slug>/console/notifications/", views.console, name="notify-console"),
    path("tasks/<slug:slug>/console/notifications/webhooks/<int:pk>/", views.webhook_log, name="notify-webhook"),
    path("tasks/<slug:slug>/console/notifications/webhooks/<int:pk>/enable/", views.webhook_enable,
         name="notify-webhook-enable"),
    path("tasks/<slug:slug>/console/notifications/webhooks/<int:pk>/delete/", views.webhook_delete,
         name="notify-webhook-delete"),
    path("tasks/<slug:slug>/console/notifications/webhooks/<int:pk>/test/", views.webhook_test,
         name="notify-webhook-test"),
]
