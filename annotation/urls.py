from django.urls import path

from annotation import views

urlpatterns = [
    path("tasks/<slug:slug>/create/", views.create, name="annotation-create"),
]
