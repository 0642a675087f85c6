from django.urls import path

from validation import views

urlpatterns = [
    path("tasks/<slug:slug>/validate/", views.validate, name="validation-validate"),
    path("tasks/<slug:slug>/expert/", views.expert, name="validation-expert"),
    path("tasks/<slug:slug>/expert/<int:pk>/resolve/", views.resolve, name="validation-expert-resolve"),
    path("tasks/<slug:slug>/figures/", views.figures, name="validation-stats"),
]
