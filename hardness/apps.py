from django.apps import AppConfig


class HardnessConfig(AppConfig):
    name = "hardness"
