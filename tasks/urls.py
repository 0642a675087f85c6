from django.contrib.auth import views as auth_views
from django.urls import path

from accounts import views as accounts_views
from tasks import views

urlpatterns = [
    path("", views.home, name="home"),
    path("tasks/<slug:slug>/", views.task_detail, name="task-detail"),
    # The owner's task pages, linked from the owner console (their addresses sit under it).
    path("console/tasks/new/", views.task_create, name="tasks-create"),
    path("tasks/<slug:slug>/console/settings/", views.task_settings, name="tasks-settings"),
    path("tasks/<slug:slug>/console/import/", views.task_import, name="tasks-import"),
    path("tasks/<slug:slug>/console/guidelines/", views.guidelines_edit, name="tasks-guidelines-edit"),
    path("tasks/<slug:slug>/guidelines/", views.guidelines_page, name="tasks-guidelines"),
    path("tasks/<slug:slug>/guidelines/acknowledge/", views.acknowledge_guidelines, name="tasks-guidelines-ack"),
    path("accounts/signup/", views.signup, name="signup"),
    path("accounts/welcome/", views.welcome, name="welcome"),
    path("accounts/login/", accounts_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
]
