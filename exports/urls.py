from django.urls import path

from exports import views

urlpatterns = [
    path("tasks/<slug:slug>/console/datasets/", views.console, name="exports-console"),
    path("tasks/<slug:slug>/rounds/<int:number>/publish/", views.publish, name="exports-publish-page"),
]
