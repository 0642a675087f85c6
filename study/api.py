"""The study API (under /api/): the participant's consent, withdrawal and surveys; the owner's study settings,
consent versions, survey definitions and the study's records (consent records, survey answers) without examples.

Participant endpoints need a signed-in caller who may see the task, on a task whose study is on (404 otherwise).
Owner endpoints are the task's owners' and admins' (403 otherwise). Bad input is a 400 naming the field and why;
a step out of order (answering the pre-survey before the consent, agreeing to an old version) is a 409 with its
`code` and `next_url`.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from dynabench_site.errors import InvalidInput, NotFound
from study import consent as consents
from study import console, exits, gate, records, surveys, texts
from study import serializers as s
from study.models import Survey
from tasks import gates as work_gates
from tasks.access import TaskScopedMixin
from tasks.permissions import IsTaskOwner

PHASE = OpenApiParameter("phase", str, OpenApiParameter.PATH, enum=["pre", "post"], description="pre or post")
ERRORS = {400: None, 401: None, 403: None, 404: None, 409: None}


class StudyTaskMixin(TaskScopedMixin):
    def study_task(self):
        task = self.get_task()
        if not gate.enabled(task):
            raise NotFound("This task runs no study.")
        return task


def next_step_url(user, task) -> str | None:
    step = work_gates.pending(user, task)
    return step.url if step is not None else None


# --- the participant's side ----------------------------------------------------------------------------------


class ConsentView(StudyTaskMixin, APIView):
    """The task's current consent and the caller's standing; POST agrees (or declines)."""

    permission_classes = [IsAuthenticated]
    http_method_names = ["get", "post", "options"]

    def current(self, task):
        latest = consents.current(task)
        if latest is None:
            raise NotFound("This task asks for no consent.")
        return latest

    @extend_schema(summary="The task's consent, in your language, and whether you agreed to it",
                   responses={200: s.ConsentSerializer, **ERRORS})
    def get(self, request: Request, slug: str) -> Response:
        task = self.study_task()
        latest = self.current(task)
        return Response(s.ConsentSerializer({
            "task": task.slug, "version": latest.version, "text": texts.consent_text(latest),
            "published_at": latest.created_at, "status": consents.status(request.user, task),
            "withdraw_url": f"/api/tasks/{task.slug}/consent/withdraw/"}).data)

    @extend_schema(summary="Agree to the current consent (or decline: no work on the task)",
                   request=s.ConsentDecisionSerializer, responses={200: s.ConsentDecisionResultSerializer, **ERRORS})
    def post(self, request: Request, slug: str) -> Response:
        task = self.study_task()
        self.current(task)
        body = s.ConsentDecisionSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        agree = body.validated_data["agree"]
        if agree:
            consents.agree(request.user, task, body.validated_data["version"])
        return Response(s.ConsentDecisionResultSerializer({
            "agreed": agree, "status": consents.status(request.user, task),
            "next_url": next_step_url(request.user, task) if agree else None,
            "exit_url": None if agree else exits.return_url(request.user, task, exits.DECLINED)}).data)


class WithdrawView(StudyTaskMixin, APIView):
    permission_classes = [IsAuthenticated]
    http_method_names = ["post", "options"]

    @extend_schema(summary="Withdraw from the task's study (final): no more work; your examples leave new exports",
                   request=s.WithdrawSerializer, responses={200: s.WithdrawResultSerializer, **ERRORS})
    def post(self, request: Request, slug: str) -> Response:
        task = self.study_task()
        body = s.WithdrawSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        if body.validated_data["confirm"] is not True:
            raise InvalidInput("must be true to withdraw", field="confirm")
        participant = consents.withdraw(request.user, task)
        return Response(s.WithdrawResultSerializer({
            "withdrawn_at": participant.withdrawn_at,
            "exit_url": exits.return_url(request.user, task, exits.WITHDRAWN)}).data)


class SurveyView(StudyTaskMixin, APIView):
    """A survey's questions as the caller reads them (no eligibility rules: those are the owner's), and their
    answers."""

    permission_classes = [IsAuthenticated]
    http_method_names = ["get", "post", "options"]

    def active(self, task, phase: str) -> Survey:
        found = surveys.survey(task, phase)
        if found is None:
            raise NotFound(f"This task has no {phase}-survey to answer.")
        return found

    @extend_schema(summary="A survey's questions, in your language, and whether you answered it", parameters=[PHASE],
                   responses={200: s.PublicSurveySerializer, **ERRORS})
    def get(self, request: Request, slug: str, phase: str) -> Response:
        task = self.study_task()
        found = self.active(task, surveys.check_phase(phase))
        shown = texts.survey_texts(found)
        answered = surveys.response_of(request.user, found)
        questions = []
        for q in surveys.questions(found):
            tr = shown["questions"].get(q.key, {"text": q.text, "choices": q.choices})
            questions.append({"key": q.key, "kind": q.kind, "text": tr["text"], "choices": list(q.choices or []),
                              "labels": list(tr["choices"]), "required": q.required, "settings": q.settings or {}})
        return Response(s.PublicSurveySerializer({
            "phase": phase, "title": shown["title"], "intro": shown["intro"], "questions": questions,
            "answered": answered is not None, "submitted_at": answered.submitted_at if answered else None}).data)

    @extend_schema(summary="Answer a survey (once)", parameters=[PHASE], request=s.AnswersSerializer,
                   responses={201: s.AnswerResultSerializer, **ERRORS})
    def post(self, request: Request, slug: str, phase: str) -> Response:
        task = self.study_task()
        self.active(task, surveys.check_phase(phase))
        body = s.AnswersSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        response = surveys.answer(request.user, task, phase, body.validated_data["answers"])
        return Response(s.AnswerResultSerializer({"eligible": response.eligible,
                                                  "next_url": next_step_url(request.user, task)}).data, status=201)


# --- the owner's side ----------------------------------------------------------------------------------------


class OwnerView(TaskScopedMixin, APIView):
    permission_classes = [IsAuthenticated, IsTaskOwner]


class StudySettingsView(OwnerView):
    http_method_names = ["get", "patch", "options"]

    def answer(self, task) -> Response:
        study = console.study_of(task)
        return Response(s.StudySerializer({
            "enabled": bool(study and study.enabled), "seed": study.seed if study else 0,
            "assignment": study.assignment if study else "balanced", "languages": study.languages if study else [],
            "figures": console.figures(task)}).data)

    @extend_schema(summary="The task's study: its settings and figures", responses={200: s.StudySerializer, **ERRORS})
    def get(self, request: Request, slug: str) -> Response:
        return self.answer(self.get_task())

    @extend_schema(summary="Change the study's settings (on/off, languages; the seed and mode until anyone is "
                           "assigned)", request=s.StudySettingsSerializer, responses={200: s.StudySerializer, **ERRORS})
    def patch(self, request: Request, slug: str) -> Response:
        task = self.get_task()
        body = s.StudySettingsSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        console.configure(task, dict(body.validated_data))
        return self.answer(task)


class ConsentVersionsView(OwnerView):
    http_method_names = ["get", "post", "options"]

    @extend_schema(summary="The consent's versions, newest first", responses={200: s.ConsentVersionSerializer(many=True),
                                                                             **ERRORS})
    def get(self, request: Request, slug: str) -> Response:
        versions = self.get_task().consents.order_by("-version")
        return Response(s.ConsentVersionSerializer(versions, many=True).data)

    @extend_schema(summary="Publish the consent text (a changed text is a new version; everyone agrees again)",
                   request=s.ConsentPublishSerializer, responses={201: s.ConsentVersionSerializer, **ERRORS})
    def post(self, request: Request, slug: str) -> Response:
        body = s.ConsentPublishSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        saved = consents.publish(self.get_task(), body.validated_data["text"], by=request.user)
        return Response(s.ConsentVersionSerializer(saved).data, status=201)


class SurveyDefinitionView(OwnerView):
    http_method_names = ["get", "put", "options"]

    def answer(self, task, phase: str) -> Response:
        found = surveys.survey(task, phase, active=False)
        return Response(s.SurveyDefinitionSerializer({
            "phase": phase, "title": found.title if found else "", "intro": found.intro if found else "",
            "active": found.active if found else False,
            "questions": [surveys.definition(q) for q in surveys.questions(found)] if found else []}).data)

    @extend_schema(summary="A survey as the owner wrote it (with its eligibility rules)", parameters=[PHASE],
                   responses={200: s.SurveyDefinitionSerializer, **ERRORS})
    def get(self, request: Request, slug: str, phase: str) -> Response:
        return self.answer(self.get_task(), surveys.check_phase(phase))

    @extend_schema(summary="Set a survey: title, introduction, active, and its questions in order (all checked "
                           "first)", parameters=[PHASE], request=s.SurveyDefinitionSerializer,
                   responses={200: s.SurveyDefinitionSerializer, **ERRORS})
    def put(self, request: Request, slug: str, phase: str) -> Response:
        task = self.get_task()
        surveys.check_phase(phase)
        data = request.data
        if not isinstance(data, dict):
            raise InvalidInput("the body must be an object with title, intro, active and questions")
        unknown = sorted(str(k)[:40] for k in set(data) - {"title", "intro", "active", "questions"})
        if unknown:
            raise InvalidInput("is not an accepted field; accepted: title, intro, active, questions", field=unknown[0])
        if "questions" not in data:
            raise InvalidInput("is required (a list, possibly empty)", field="questions")
        found = surveys.configure(task, phase, title=data.get("title", ""), intro=data.get("intro", ""),
                                  active=data.get("active", True))
        surveys.replace_questions(found, data["questions"])
        return self.answer(task, phase)


class ConsentRecordsView(OwnerView):
    http_method_names = ["get", "options"]

    @extend_schema(summary="The consent records, under pseudonymous ids (withdrawals included; no examples)",
                   responses={200: s.ConsentRecordsSerializer, **ERRORS})
    def get(self, request: Request, slug: str) -> Response:
        return Response(s.ConsentRecordsSerializer({"records": records.consent_records(self.get_task())}).data)


class SurveyAnswersView(OwnerView):
    http_method_names = ["get", "options"]

    @extend_schema(summary="A survey's answers, under pseudonymous ids (people who withdrew left out; no examples)",
                   parameters=[PHASE], responses={200: s.SurveyAnswersSerializer, **ERRORS})
    def get(self, request: Request, slug: str, phase: str) -> Response:
        return Response(s.SurveyAnswersSerializer(records.survey_answers(self.get_task(), phase)).data)
