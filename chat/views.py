"""The writer's chat pages (docs/chat/pages.md): their conversations on a chat task, and one conversation.

Both are server-rendered and read only; chat.js does everything else through the same API any client calls
(chat.api: start a conversation, send a message, poll each answer, rate, choose, mark as failing, try again,
finish), with its addresses written into the page (json_script), never spelt in the script. The conversation page
renders the transcript too, so it reads without the script, and chat.js then takes it over from the API's answer.

Who may open them: the conversations page is for the task's writers (the annotator role, as the create page);
a conversation's page is its writer's, and the task's managers may read it (as the API lets them, with no message
box); for anyone else it does not exist (404), not a refusal. Blinding holds here as in the API
(chat.services.reveals_targets): while a conversation is blinded for the viewer, the page never names a target.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Q
from django.http import Http404
from django.shortcuts import get_object_or_404, render
from django.urls import path, reverse

from chat import services
from chat.models import Conversation, Message
from tasks import roles
from tasks.access import open_round, refusal, step_redirect, visible_task
from tasks.kinds.chat import ChatConfig, slot_name
from tasks.models import Task

# The address of a conversation's page as chat.js fills it in (its id replaces this number; reverse() spells it).
ID_MARK = 987654321


def chat_task(task: Task) -> Task:
    """Only a chat task has these pages (another kind's writers write on its create page)."""
    if task.kind != "chat":
        raise Http404("This task is not a chat task.")
    return task


def settings_of(task: Task):
    config = task.typed_config
    assert isinstance(config, ChatConfig)
    return config.chat


def page_config(task: Task, convo: Conversation) -> dict[str, Any]:
    """What chat.js needs (json_script): the protocol, the taxonomy, and the API's addresses."""
    chat = settings_of(task)
    return {
        "id": convo.pk,
        "slug": task.slug,
        "scale": convo.scale,
        "blinded": convo.blinded,
        "slots": [slot_name(slot) for slot in range(len(convo.targets))],
        "max_turns": chat.max_turns,
        "max_message_chars": chat.max_message_chars,
        "categories": [{"name": name, "label": label} for name, label in chat.categories()],
        # the conversation's own calls; each answer brings its own (`links`: self, retry, rating, failure)
        "urls": {
            "conversation": reverse("api-chat-conversation", args=[convo.pk]),
            "messages": reverse("api-chat-conversation-messages", args=[convo.pk]),
            "preferences": reverse("api-chat-conversation-preferences", args=[convo.pk]),
            "close": reverse("api-chat-conversation-close", args=[convo.pk]),
            "list": reverse("chat-conversations", args=[task.slug]),
            "guidelines_acknowledge": reverse("api-guidelines-acknowledge", args=[task.slug]),
        },
        "poll_ms": 800,
    }


def shown_name(convo: Conversation, message: Message, reveal: bool) -> str:
    """How the page names an answer's model: "Model A", and the target's name only to whom it is revealed
    (chat.services.reveals_targets: never the writer of a blinded conversation while its round is open)."""
    name = slot_name(message.slot or 0)
    return f"{name} ({message.target})" if reveal and message.target else name


def transcript(convo: Conversation, reveal: bool) -> list[dict[str, Any]]:
    """The conversation turn by turn, for the page's first render: the writer's message and each answer with its
    state, the writer's rating and their mark (chat.js then re-renders it from the API's answer)."""
    labels = dict(settings_of(convo.round.task).categories())  # "wrong" -> "Wrong: a false claim, …"
    rows = []
    for turn in services.turns(convo):
        answers = []
        for message in turn.answers:
            rating = next((r.score for r in message.ratings.all() if r.rater_id == convo.writer_id), None)
            failure = getattr(message, "failure", None)
            answers.append({"message": message, "name": shown_name(convo, message, reveal), "rating": rating,
                            "failure": failure,
                            "category": failure and labels.get(failure.category, failure.category).split(":")[0]})
        choice = turn.preference
        rows.append({"number": turn.number, "user": turn.user, "answers": answers, "choice": None if choice is None
                     else "A tie" if choice.winner_slot is None else f"{slot_name(choice.winner_slot)} is better"})
    return rows


@login_required
def conversations(request, slug: str):
    """The writer's conversations on this task, newest first, and the button that starts one."""
    task = chat_task(visible_task(request.user, slug))  # not a chat task: no such page (404), whoever asks
    if not roles.has_role(request.user, roles.ANNOTATOR, task):
        raise PermissionDenied(refusal(roles.ANNOTATOR))
    if (step := step_redirect(request, task)) is not None:  # consent, the pre-survey (tasks.gates)
        return step
    mine = (services.conversations(request.user, task)
            .annotate(turns=Count("messages", filter=Q(messages__role=Message.Role.USER), distinct=True),
                      marked=Count("messages__failure", distinct=True)))
    return render(request, "chat/conversations.html", {
        "task": task, "round": open_round(task), "conversations": mine, "chat": settings_of(task),
        "config": {"urls": {"start": reverse("api-chat-conversations", args=[task.slug]),
                            "guidelines_acknowledge": reverse("api-guidelines-acknowledge", args=[task.slug])},
                   "page": reverse("chat-conversation", args=[task.slug, ID_MARK]).replace(str(ID_MARK), "{id}")},
    })


@login_required
def conversation(request, slug: str, pk: int):
    """One conversation: its writer's, to go on with; the task's managers may read it (as the API lets them);
    for anyone else it does not exist (404), not a refusal."""
    task = chat_task(visible_task(request.user, slug))
    convo = get_object_or_404(services.with_messages(Conversation.objects.filter(round__task=task)), pk=pk)
    if not services.may_see(request.user, convo):
        raise Http404("No such conversation.")
    chat = settings_of(task)
    reveal = services.reveals_targets(request.user, convo)
    turns = transcript(convo, reveal)
    own = convo.writer_id == request.user.pk
    writer = own and roles.has_role(request.user, roles.ANNOTATOR, task)
    why_not = services.why_not_send(convo, chat) if writer else (
        "Only the task's writers may send messages." if own else "")
    return render(request, "chat/conversation.html", {
        "task": task, "task_config": task.typed_config, "convo": convo, "chat": chat, "turns": turns,
        "sent": sum(1 for turn in turns if turn["user"] is not None), "own": own, "writer": writer,
        "why_not": why_not[:1].upper() + why_not[1:] + ("" if why_not.endswith(".") else ".") if why_not else "",
        "config": page_config(task, convo) | {"writer": writer},
    })


urlpatterns = [
    path("tasks/<slug:slug>/chat/", conversations, name="chat-conversations"),
    path("tasks/<slug:slug>/chat/<int:pk>/", conversation, name="chat-conversation"),
]
