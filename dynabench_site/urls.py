from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView

from accounts import views as accounts_views
from dynabench_site import health, pages

api_patterns = [
    path("", include("accounts.api_urls")),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("redoc/", SpectacularRedocView.as_view(url_name="api-schema"), name="api-redoc"),
    path("", include("tasks.api_urls")),
    path("", include("annotation.api_urls")),
    path("", include("validation.api_urls")),
    path("", include("modelzoo.api_urls")),
    path("", include("exports.api_urls")),
    path("", include("rounds.api_urls")),
    path("", include("chat.api_urls")),
    path("", include("study.api_urls")),
    path("", include("notify.api_urls")),
]

urlpatterns = [
    path("favicon.ico", pages.favicon, name="favicon"),
    # Health (dynabench_site.health): every check as JSON (503 when nothing can work), and "the process answers".
    path("healthz", health.healthz, name="healthz"),
    path("healthz/live", health.live, name="healthz-live"),
    # The admin's login page with the site's sign-in limit (LOGIN_RATE), before the admin's own routes.
    path("admin/login/", accounts_views.admin_login, name="admin-login"),
    path("admin/", admin.site.urls),
    path("api/", include(api_patterns)),
    path("", include("accounts.urls")),
    path("", include("tasks.urls")),
    path("", include("annotation.urls")),
    path("", include("validation.urls")),
    path("", include("exports.urls")),
    path("", include("rounds.urls")),
    path("", include("crowd.urls")),
    path("", include("chat.urls")),
    path("", include("study.urls")),
    path("", include("notify.urls")),
    path("i18n/", include("django.conf.urls.i18n")),
]

# Errors in the site's layout (Django calls these only when DEBUG is false; `pages.DomainErrorMiddleware`
# gives pages the same answers while it is true). A 500 is Django's own handler with templates/500.html.
handler403 = "dynabench_site.pages.permission_denied"
handler404 = "dynabench_site.pages.not_found"
