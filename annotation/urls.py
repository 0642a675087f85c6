from django.urls import path

from annotation import views

urlpatterns = [
    path("tasks/<slug:slug>/create/", views.create, name="annotation-create"),
    path("me/examples/", views.my_examples, name="annotation-my-examples"),
    path("me/examples/<int:pk>/appeal/", views.appeal, name="annotation-appeal"),
]
