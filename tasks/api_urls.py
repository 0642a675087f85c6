from django.urls import path
from rest_framework.routers import SimpleRouter

from tasks.api import GuidelinesAcknowledgeView, TaskViewSet

router = SimpleRouter()
router.register("tasks", TaskViewSet, basename="task")
urlpatterns = [
    *router.urls,
    path("tasks/<slug:slug>/guidelines/acknowledge/", GuidelinesAcknowledgeView.as_view(),
         name="api-guidelines-acknowledge"),
]
