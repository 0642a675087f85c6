"""The study's rows in Django's admin: read mostly (the pages and the API are where a study is run)."""

from django.contrib import admin

from study.models import Consent, ConsentRecord, Participant, Question, Study, Survey, SurveyResponse


@admin.register(Study)
class StudyAdmin(admin.ModelAdmin):
    list_display = ("task", "enabled", "assignment", "seed", "updated_at")
    list_filter = ("enabled", "assignment")


@admin.register(Consent)
class ConsentAdmin(admin.ModelAdmin):
    list_display = ("task", "version", "created_by", "created_at")
    readonly_fields = ("task", "version", "text", "created_by", "created_at")


@admin.register(ConsentRecord)
class ConsentRecordAdmin(admin.ModelAdmin):
    list_display = ("task", "user", "version", "language", "agreed_at", "withdrawn_at")
    list_filter = ("version", "language")
    readonly_fields = ("consent", "task", "user", "version", "language", "agreed_at", "withdrawn_at")


class QuestionInline(admin.TabularInline):
    model = Question
    extra = 0


@admin.register(Survey)
class SurveyAdmin(admin.ModelAdmin):
    list_display = ("task", "phase", "title", "active", "updated_at")
    inlines = [QuestionInline]


@admin.register(SurveyResponse)
class SurveyResponseAdmin(admin.ModelAdmin):
    list_display = ("survey", "user", "eligible", "language", "submitted_at")
    list_filter = ("eligible", "language")
    readonly_fields = ("survey", "user", "answers", "eligible", "language", "submitted_at")


@admin.register(Participant)
class ParticipantAdmin(admin.ModelAdmin):
    list_display = ("task", "user", "arm", "sequence", "language", "eligible", "joined_at", "withdrawn_at")
    list_filter = ("eligible", "language")
