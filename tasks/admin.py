from django.contrib import admin

from tasks.models import Context, Guidelines, LabeledItem, Round, Suspension, Task, TaskMembership


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


@admin.register(TaskMembership)
class TaskMembershipAdmin(admin.ModelAdmin):
    list_display = ["task", "user", "role", "source", "granted_at"]
    list_filter = ["task", "role", "source"]
    search_fields = ["user__username"]


@admin.register(Suspension)
class SuspensionAdmin(admin.ModelAdmin):
    list_display = ["task", "user", "reason", "created_at", "lifted_at"]
    list_filter = ["task"]


@admin.register(Guidelines)
class GuidelinesAdmin(admin.ModelAdmin):
    list_display = ["task", "version", "created_at", "created_by"]
