from django.apps import AppConfig


class ModelzooConfig(AppConfig):
    name = "modelzoo"
