"""REST API of chat conversations (docs/chat/conversations.md). Views parse, call chat.services, and answer; the
rules live in the services. Errors have the site's shape: `{"detail": "...", "code": ..., "errors": {...}}`, 400 for
bad input (naming the field), 409 when the conversation's state forbids it now (the `detail` says why), 404 for a
conversation or answer that is not yours (or a task you cannot see), 403 for a missing role.

Routes and what they answer (times and ids shortened):

POST /api/tasks/<slug>/chat/conversations/  (no body) -> 201, the conversation (as GET below)
GET  /api/tasks/<slug>/chat/conversations/  -> 200, your own, newest first, paginated:
    {"count": 1, "next": null, "previous": null, "results": [{"id": 7, "task": "chat", "round": 1,
     "scale": "slider", "state": "open", "turns_used": 2, "slots": [{"slot": 0, "name": "Model A", "target": null,
     "model": null}], "created_at": "...", "updated_at": "...", "link": "/api/chat/conversations/7/"}]}

GET  /api/chat/conversations/<id>/  -> 200 (its writer, and the task's owners and admins):
    {"id": 7, "task": "chat", "round": 1, "writer": "annotator", "scale": "pairwise", "state": "open",
     "blinded": true, "slots": [{"slot": 0, "name": "Model A", "target": null, "model": null},
                                {"slot": 1, "name": "Model B", "target": null, "model": null}],
     "max_turns": 8, "max_message_chars": 1000, "turns_used": 1, "can_send": false,
     "waiting_for": "choose the better answer to your last message (or call it a tie) before you go on",
     "categories": [{"name": "wrong", "description": "Wrong: a false claim, ..."}, ...],
     "turns": [{"turn": 0, "message": {"id": 40, "text": "What is the capital of Australia?", "created_at": "..."},
                "answers": [ANSWER, ANSWER], "preference": null}],
     "created_at": "...", "updated_at": "...",
     "links": {"self": "/api/chat/conversations/7/", "messages": ".../messages/", "preferences": ".../preferences/",
               "close": ".../close/"}}
    where ANSWER (also GET /api/chat/messages/<id>/) is
    {"id": 41, "conversation": 7, "turn": 0, "slot": 0, "slot_name": "Model A", "target": null, "model": null,
     "state": "ready", "text": "Canberra.", "error": "", "chosen": false, "attempts": 1, "rating": null,
     "failure": null, "usage": {"prompt_tokens": 31, "completion_tokens": 4, "seconds": 0.41, "calls": 1,
     "tries": 1, "queued_s": 0.01, "job_s": 0.43}, "created_at": "...", "ready_at": "...",
     "links": {"self": "/api/chat/messages/41/", "retry": ".../retry/", "rating": ".../rating/",
               "failure": ".../failure/"}}
    `target` and `model` are null while the conversation is blinded for you (chat.services.reveals_targets);
    `state` is pending, ready or failed (`error`: a sentence for the writer); `failure`, when marked:
    {"category": "wrong", "reason": "...", "consensus": "unvalidated", "can_retract": true}.

POST /api/chat/conversations/<id>/messages/  {"text": "..."} -> 202 at once, the answers pending (poll each):
    {"message": {"id": 42, "text": "...", "created_at": "..."}, "answers": [ANSWER (state "pending"), ...],
     "conversation": "/api/chat/conversations/7/"}
    409 while answers are pending, after max_turns, on a finished conversation or a closed round, and (pairwise)
    before the previous pair was decided.
POST /api/chat/conversations/<id>/preferences/  {"turn": 0, "winner": 1, "reason": "more precise"} -> 200,
    the conversation ("winner": null is a tie).
POST /api/chat/conversations/<id>/close/ -> 200, the conversation ("state": "closed").
GET  /api/chat/messages/<id>/ -> 200, ANSWER.
POST /api/chat/messages/<id>/retry/ -> 202, ANSWER (pending again); 409 unless it failed.
POST /api/chat/messages/<id>/rating/  {"score": 35} -> 200, ANSWER ("rating": 35); rating again replaces it.
POST /api/chat/messages/<id>/failure/  {"category": "wrong", "reason": "The capital is Canberra."} -> 201, ANSWER
    (with "failure"); 409 when already marked.
DELETE /api/chat/messages/<id>/failure/ -> 200, ANSWER ("failure": null); 409 once validators judged it.
"""

from __future__ import annotations

from django.http import Http404
from django.shortcuts import get_object_or_404
from django.urls import path, reverse
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.generics import ListAPIView
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from chat import serializers as s
from chat import services, throttles
from chat.models import Conversation, Message
from dynabench_site.errors import NotPermitted
from tasks.access import TaskScopedMixin
from tasks.permissions import IsAnnotator


class ConversationsView(TaskScopedMixin, ListAPIView):
    """A task's conversations of the caller: start one (annotators), or list their own (anyone signed in)."""

    permission_classes = [IsAuthenticated]

    def get_permissions(self):
        if self.request.method == "POST":
            return [IsAuthenticated(), IsAnnotator()]
        return super().get_permissions()

    def get_queryset(self):
        from django.db.models import Count, Q

        return services.conversations(self.request.user, self.get_task()).annotate(
            turns_used=Count("messages", filter=Q(messages__role=Message.Role.USER)))

    @extend_schema(summary="Your conversations on this task, newest first",
                   responses={200: s.ConversationRowSerializer(many=True), 404: None})
    def get(self, request: Request, slug: str) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(
            s.ConversationRowSerializer([s.conversation_row(c, request.user) for c in page], many=True).data)

    @extend_schema(
        summary="Start a conversation: the server assigns its blinded target models",
        description="Slider tasks get one target, pairwise tasks two distinct ones, chosen by the task's `assignment` "
                    "(balanced: those you met least; random). 409 when the task is not a chat task, has no open "
                    "round, or its guidelines are unread.",
        request=s.StartSerializer, responses={201: s.ConversationSerializer, 403: None, 404: None, 409: None})
    def post(self, request: Request, slug: str) -> Response:
        s.StartSerializer(data=request.data or {}).is_valid(raise_exception=True)
        throttles.check(request.user, self.get_task())
        conversation = services.start(request.user, self.get_task())
        conversation = services.with_messages(Conversation.objects.filter(pk=conversation.pk)).get()
        return Response(s.ConversationSerializer(s.conversation_data(conversation, request.user)).data,
                        status=status.HTTP_201_CREATED,
                        headers={"Location": reverse("api-chat-conversation", args=[conversation.pk])})


class ConversationScoped(APIView):
    """A view on one conversation: its writer, and the task's managers for reading; anyone else gets 404."""

    permission_classes = [IsAuthenticated]

    def get_conversation(self, pk: int, *, writer_only: bool = False) -> Conversation:
        conversation = get_object_or_404(services.with_messages(Conversation.objects.all()), pk=pk)
        if not services.may_see(self.request.user, conversation):
            raise Http404("No conversation with this id.")
        if writer_only and conversation.writer_id != self.request.user.pk:
            raise NotPermitted("only the conversation's writer may do this")
        return conversation

    def answer(self, conversation_id: int, code: int = status.HTTP_200_OK) -> Response:
        conversation = services.with_messages(Conversation.objects.filter(pk=conversation_id)).get()
        return Response(s.ConversationSerializer(s.conversation_data(conversation, self.request.user)).data,
                        status=code)


class ConversationView(ConversationScoped):
    @extend_schema(summary="A conversation: its turns, answers, your ratings, choices and marks",
                   responses={200: s.ConversationSerializer, 404: None})
    def get(self, request: Request, pk: int) -> Response:
        return Response(s.ConversationSerializer(s.conversation_data(self.get_conversation(pk), request.user)).data)


class MessagesView(ConversationScoped):
    @extend_schema(
        summary="Send a message; the models' answers are written in the background",
        description="The message and one pending answer per slot are saved before any model is called; answers 202 "
                    "at once. Poll each answer's `self` link until `state` is ready or failed. 409 while answers "
                    "are pending, after `max_turns`, on a finished conversation or a closed round, and on a pairwise "
                    "conversation before you chose between the previous pair.",
        request=s.MessageRequestSerializer, responses={202: s.SentSerializer, 400: None, 404: None, 409: None})
    def post(self, request: Request, pk: int) -> Response:
        conversation = self.get_conversation(pk, writer_only=True)
        body = s.MessageRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        throttles.check(request.user, conversation.round.task)
        message, answers = services.send(request.user, conversation, body.validated_data["text"])
        reveal = services.reveals_targets(request.user, conversation)
        data = {"message": {"id": message.pk, "text": message.text, "created_at": message.created_at},
                "answers": [s.answer_data(a, reveal, conversation.writer_id) for a in answers],
                "conversation": reverse("api-chat-conversation", args=[conversation.pk])}
        return Response(s.SentSerializer(data).data, status=status.HTTP_202_ACCEPTED,
                        headers={"Location": reverse("api-chat-conversation", args=[conversation.pk])})


class PreferencesView(ConversationScoped):
    @extend_schema(
        summary="Choose the better answer of a turn (pairwise), or call it a tie",
        description="`winner`: the slot (0 = Model A) or null for a tie; the conversation goes on with the chosen "
                    "answer (slot 0 on a tie). Only the last turn's choice can change.",
        request=s.PreferenceRequestSerializer, responses={200: s.ConversationSerializer, 400: None, 404: None,
                                                          409: None})
    def post(self, request: Request, pk: int) -> Response:
        conversation = self.get_conversation(pk, writer_only=True)
        body = s.PreferenceRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        services.prefer(request.user, conversation, data["turn"], data["winner"], data.get("reason", ""))
        return self.answer(conversation.pk)


class CloseView(ConversationScoped):
    @extend_schema(summary="Finish the conversation", request=None,
                   responses={200: s.ConversationSerializer, 404: None})
    def post(self, request: Request, pk: int) -> Response:
        conversation = self.get_conversation(pk, writer_only=True)
        services.close(request.user, conversation)
        return self.answer(conversation.pk)


class AnswerScoped(APIView):
    permission_classes = [IsAuthenticated]

    def get_answer(self, pk: int, *, writer_only: bool = False) -> Message:
        answer = get_object_or_404(
            Message.objects.select_related("conversation__round__task", "failure").prefetch_related("ratings"),
            pk=pk, role=Message.Role.ASSISTANT)
        if not services.may_see(self.request.user, answer.conversation):
            raise Http404("No answer with this id.")
        if writer_only and answer.conversation.writer_id != self.request.user.pk:
            raise NotPermitted("only the conversation's writer may do this")
        return answer

    def answer(self, pk: int, code: int = status.HTTP_200_OK) -> Response:
        answer = self.get_answer(pk)
        reveal = services.reveals_targets(self.request.user, answer.conversation)
        return Response(s.AnswerSerializer(s.answer_data(answer, reveal)).data, status=code)


class AnswerView(AnswerScoped):
    @extend_schema(summary="One answer (poll it while pending)", responses={200: s.AnswerSerializer, 404: None})
    def get(self, request: Request, pk: int) -> Response:
        self.get_answer(pk)
        return self.answer(pk)


class RetryView(AnswerScoped):
    @extend_schema(summary="Ask again for a failed answer", request=None,
                   responses={202: s.AnswerSerializer, 404: None, 409: None})
    def post(self, request: Request, pk: int) -> Response:
        answer = self.get_answer(pk, writer_only=True)
        throttles.check(request.user, answer.conversation.round.task)
        services.retry(request.user, answer)
        return self.answer(pk, status.HTTP_202_ACCEPTED)


class RatingView(AnswerScoped):
    @extend_schema(summary="Rate a ready answer from 0 to 100 (again: replaces your rating)",
                   request=s.RatingRequestSerializer, responses={200: s.AnswerSerializer, 400: None, 404: None,
                                                                 409: None})
    def post(self, request: Request, pk: int) -> Response:
        answer = self.get_answer(pk, writer_only=True)
        body = s.RatingRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        services.rate(request.user, answer, body.validated_data["score"])
        return self.answer(pk)


class FailureView(AnswerScoped):
    @extend_schema(summary="Mark a ready answer as failing: a category of the task and the reason",
                   request=s.FailureRequestSerializer, responses={201: s.AnswerSerializer, 400: None, 404: None,
                                                                  409: None})
    def post(self, request: Request, pk: int) -> Response:
        answer = self.get_answer(pk, writer_only=True)
        body = s.FailureRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        services.mark_failure(request.user, answer, body.validated_data["category"], body.validated_data["reason"])
        return self.answer(pk, status.HTTP_201_CREATED)

    @extend_schema(summary="Retract your mark (while no validator has judged it)", request=None,
                   responses={200: s.AnswerSerializer, 404: None, 409: None})
    def delete(self, request: Request, pk: int) -> Response:
        services.retract_failure(request.user, self.get_answer(pk, writer_only=True))
        return self.answer(pk)


urlpatterns = [
    path("tasks/<slug:slug>/chat/conversations/", ConversationsView.as_view(), name="api-chat-conversations"),
    path("chat/conversations/<int:pk>/", ConversationView.as_view(), name="api-chat-conversation"),
    path("chat/conversations/<int:pk>/messages/", MessagesView.as_view(), name="api-chat-conversation-messages"),
    path("chat/conversations/<int:pk>/preferences/", PreferencesView.as_view(),
         name="api-chat-conversation-preferences"),
    path("chat/conversations/<int:pk>/close/", CloseView.as_view(), name="api-chat-conversation-close"),
    path("chat/messages/<int:pk>/", AnswerView.as_view(), name="api-chat-message-self"),
    path("chat/messages/<int:pk>/retry/", RetryView.as_view(), name="api-chat-message-retry"),
    path("chat/messages/<int:pk>/rating/", RatingView.as_view(), name="api-chat-message-rating"),
    path("chat/messages/<int:pk>/failure/", FailureView.as_view(), name="api-chat-message-failure"),
]
