from django.apps import AppConfig


class ChatConfig(AppConfig):
    name = "chat"
    verbose_name = "Chat tasks: conversations with language models, ratings, failures, the arena"
    default_auto_field = "django.db.models.BigAutoField"
