"""The arms' pages, in the owner's study console: the list (with the assignment's settings, which the study's own
console page sets), adding, changing and deleting an arm (study.arm_views)."""

from django.urls import path

from study import arm_views

urlpatterns: list = [
    path("tasks/<slug:slug>/console/study/arms/", arm_views.arms_page, name="study-arms"),
    path("tasks/<slug:slug>/console/study/arms/add/", arm_views.add, name="study-arm-add"),
    path("tasks/<slug:slug>/console/study/arms/<int:pk>/", arm_views.edit, name="study-arm-edit"),
    path("tasks/<slug:slug>/console/study/arms/<int:pk>/delete/", arm_views.delete, name="study-arm-delete"),
]
