from django.apps import AppConfig


class ChatConfig(AppConfig):
    name = "chat"
    verbose_name = "Chat tasks: conversations with language models, ratings, failures, the arena"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from chat import demo
        from tasks.signals import demo_task_loaded

        # The demo chat task's recorded conversations (tasks/demo/chat.json), stored when load_demo loads it.
        demo_task_loaded.connect(demo.load_conversations, dispatch_uid="chat.demo_conversations")
