"""The owner's notifications console: a task's outgoing webhooks (add, list, switch on again, delete, send a test
event), each webhook's delivery log, and the mails sent. Owners and admins only (tasks.access.task_for with the
owner role: 404 where the task is hidden from the person, 403 for anyone else who sees it). Views parse, call
notify.webhooks, render."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Count, Prefetch, Q
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from dynabench_site.pages import returns_to
from notify import events, webhooks
from notify.models import SUBSCRIBABLE, Attempt, Delivery, Event, EventKind, Mail, Webhook
from tasks import roles
from tasks.access import task_for

RECENT = 25
LOG_DELIVERIES = 50


def event_choices() -> list[tuple[str, str]]:
    return [(kind, EventKind(kind).label) for kind in SUBSCRIBABLE]


def masked(address: str) -> str:
    """An address shown to the task's owners without giving it away whole: `a…@example.org`."""
    name, _at, domain = address.partition("@")
    return f"{name[:1]}…@{domain}" if domain else "…"


def labelled(hook: Webhook) -> Webhook:
    hook.event_labels = [EventKind(kind).label for kind in hook.events if kind in EventKind.values]
    return hook


def console_context(task, **extra) -> dict:
    hooks = Webhook.objects.filter(task=task).annotate(
        delivered=Count("deliveries", filter=Q(deliveries__status=Delivery.Status.DONE)),
        failed=Count("deliveries", filter=Q(deliveries__status=Delivery.Status.FAILED)),
        pending=Count("deliveries", filter=Q(deliveries__status=Delivery.Status.PENDING))).order_by("created_at", "pk")
    events = Event.objects.filter(task=task).annotate(
        hooks=Count("deliveries", distinct=True), mailed=Count("mails", distinct=True)).order_by("-created_at", "-pk")[:RECENT]
    mails = [{"mail": m, "to": masked(m.address)} for m in
             Mail.objects.filter(event__task=task).select_related("event", "user")[:RECENT]]
    hooks = [labelled(h) for h in hooks]
    return {"task": task, "webhooks": hooks, "events": events, "mails": mails, "choices": event_choices(),
            **extra}


@login_required
@returns_to("notify-console", "slug")
def console(request, slug: str):
    """GET: the console. POST: add a webhook (url, events); the answer shows its secret, once."""
    task = task_for(request, slug, roles.OWNER)
    if request.method == "POST":
        hook = webhooks.add(task, request.POST.get("url"), request.POST.getlist("events"), by=request.user)
        messages.success(request, _("Webhook added. Copy its secret now: it is not shown again."))
        return render(request, "notify/console.html", console_context(task, created=hook))
    return render(request, "notify/console.html", console_context(task))


def owned_webhook(request, slug: str, pk: int):
    task = task_for(request, slug, roles.OWNER)
    return task, get_object_or_404(Webhook, pk=pk, task=task)


@login_required
def webhook_log(request, slug: str, pk: int):
    """One webhook's deliveries, newest first, each with its tries (time, status code, error, duration)."""
    task, hook = owned_webhook(request, slug, pk)
    deliveries = (hook.deliveries.select_related("event")
                  .prefetch_related(Prefetch("attempt_log", queryset=Attempt.objects.order_by("number")))
                  [:LOG_DELIVERIES])
    return render(request, "notify/webhook.html", {"task": task, "hook": labelled(hook), "deliveries": deliveries})


@login_required
@require_POST
@returns_to("notify-console", "slug")
def webhook_enable(request, slug: str, pk: int):
    task, hook = owned_webhook(request, slug, pk)
    if webhooks.enable(hook):
        messages.success(request, _("The webhook is switched on again."))
    else:
        messages.info(request, _("The webhook was on already."))
    return redirect("notify-console", slug=task.slug)


@login_required
@require_POST
@returns_to("notify-console", "slug")
def webhook_delete(request, slug: str, pk: int):
    task, hook = owned_webhook(request, slug, pk)
    hook.delete()
    messages.success(request, _("Webhook deleted: nothing more is sent to %(url)s.") % {"url": hook.url})
    return redirect("notify-console", slug=task.slug)


@login_required
@require_POST
@returns_to("notify-console", "slug")
def webhook_test(request, slug: str, pk: int):
    task, hook = owned_webhook(request, slug, pk)
    events.send_test(hook, by=request.user)
    messages.success(request, _("A test event is on its way; its delivery shows in the log."))
    return redirect("notify-webhook", slug=task.slug, pk=hook.pk)
