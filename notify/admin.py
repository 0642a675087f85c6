from django.contrib import admin

from notify.models import Attempt, Delivery, Event, Mail, Webhook


@admin.register(Webhook)
class WebhookAdmin(admin.ModelAdmin):
    list_display = ("task", "url", "created_at", "consecutive_failures", "disabled_at")
    list_filter = ("task",)
    exclude = ("secret",)  # the signing secret is shown once, to the owner who added the webhook


@admin.register(Event)
class EventAdmin(admin.ModelAdmin):
    list_display = ("kind", "task", "created_at")
    list_filter = ("kind", "task")


class AttemptInline(admin.TabularInline):
    model = Attempt
    extra = 0
    can_delete = False
    readonly_fields = ("number", "started_at", "status_code", "error", "duration_ms")


@admin.register(Delivery)
class DeliveryAdmin(admin.ModelAdmin):
    list_display = ("event", "webhook", "status", "attempts", "next_attempt_at", "last_error")
    list_filter = ("status",)
    inlines = [AttemptInline]


@admin.register(Mail)
class MailAdmin(admin.ModelAdmin):
    list_display = ("event", "address", "status", "attempts", "finished_at", "last_error")
    list_filter = ("status",)
