from rest_framework.routers import SimpleRouter

from tasks.api import TaskViewSet

router = SimpleRouter()
router.register("tasks", TaskViewSet, basename="task")
urlpatterns = router.urls
