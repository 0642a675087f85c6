from rest_framework.routers import SimpleRouter

from modelzoo.api import EnsembleViewSet, ModelVersionViewSet

router = SimpleRouter()
router.register("models", ModelVersionViewSet, basename="model-version")
router.register("ensembles", EnsembleViewSet, basename="ensemble")
urlpatterns = router.urls
