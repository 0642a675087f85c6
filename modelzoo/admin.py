from django.contrib import admin

from modelzoo.models import Ensemble, EnsembleMember, Evaluation, ModelVersion


@admin.register(ModelVersion)
class ModelVersionAdmin(admin.ModelAdmin):
    list_display = ["name", "task", "version", "head", "status", "progress", "created_at"]
    list_filter = ["status", "head", "task"]
    readonly_fields = ["status"]  # status changes go through modelzoo.services.transition


class MemberInline(admin.TabularInline):
    model = EnsembleMember
    extra = 0


@admin.register(Ensemble)
class EnsembleAdmin(admin.ModelAdmin):
    list_display = ["id", "round", "strategy", "active", "created_at"]
    inlines = [MemberInline]


@admin.register(Evaluation)
class EvaluationAdmin(admin.ModelAdmin):
    list_display = ["model_version", "dataset", "size", "metrics"]
