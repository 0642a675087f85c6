from django.contrib import admin

from tasks.models import Context, LabeledItem, Round, Task


class RoundInline(admin.TabularInline):
    model = Round
    extra = 0


@admin.register(Task)
class TaskAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "kind", "visibility", "active"]
    list_filter = ["kind", "visibility", "active"]
    search_fields = ["slug", "name"]
    filter_horizontal = ["owners"]
    inlines = [RoundInline]


@admin.register(Round)
class RoundAdmin(admin.ModelAdmin):
    list_display = ["task", "number", "status", "opened_at", "closed_at"]
    list_filter = ["status", "task"]


@admin.register(Context)
class ContextAdmin(admin.ModelAdmin):
    list_display = ["id", "task", "round", "source", "hardness_score", "is_seed", "times_used"]
    list_filter = ["task", "source", "is_seed"]


@admin.register(LabeledItem)
class LabeledItemAdmin(admin.ModelAdmin):
    list_display = ["id", "task", "collection", "split", "hardness_score", "seed_round"]
    list_filter = ["task", "collection", "split"]
