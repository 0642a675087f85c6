"""The arms' pages: the owner's list (with the assignment's settings), adding, changing and deleting an arm
(study.arm_views)."""

from django.urls import path

from study import arm_views

urlpatterns: list = [
    path("tasks/<slug:slug>/arms/", arm_views.arms_page, name="study-arms"),
    path("tasks/<slug:slug>/arms/add/", arm_views.add, name="study-arm-add"),
    path("tasks/<slug:slug>/arms/assignment/", arm_views.assignment, name="study-arm-assignment"),
    path("tasks/<slug:slug>/arms/<int:pk>/", arm_views.edit, name="study-arm-edit"),
    path("tasks/<slug:slug>/arms/<int:pk>/delete/", arm_views.delete, name="study-arm-delete"),
]
