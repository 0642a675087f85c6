from django.contrib import admin

from validation.models import Validation


@admin.register(Validation)
class ValidationAdmin(admin.ModelAdmin):
    list_display = ["id", "example", "validator", "verdict", "mode", "created_at"]
    list_filter = ["verdict", "mode"]
