from django.contrib import admin

from accounts.models import Account


@admin.register(Account)
class AccountAdmin(admin.ModelAdmin):
    list_display = ["user", "origin", "signup_ip", "external_source", "external_worker_id", "created_at"]
    list_filter = ["origin", "external_source"]
    search_fields = ["user__username", "signup_ip", "external_worker_id"]
