from django.contrib import admin

from annotation.models import Example


@admin.register(Example)
class ExampleAdmin(admin.ModelAdmin):
    list_display = ["id", "round", "author", "scoring_state", "fooled", "consensus", "retracted", "flagged", "split"]
    list_filter = ["scoring_state", "fooled", "consensus", "retracted", "flagged", "round__task"]
    search_fields = ["input", "author__username"]
    readonly_fields = ["fooled", "ensemble_prediction", "model_predictions", "explanation", "model_versions"]
