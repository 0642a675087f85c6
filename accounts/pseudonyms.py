"""The one pseudonym rule of every download: a person's id in a task's datasets (the classification rounds'
`annotator_id`, the chat exports' writer, author and judge ids) is a salted HMAC of the user id — stable within a
task, unlinkable across tasks, never reversible — so a person has one pseudonym per task in every download."""

from __future__ import annotations

import hashlib
import hmac

from django.conf import settings


def person_id(task_id: int, user_id: int) -> str:
    secret = settings.EXPORTS_PSEUDONYM_KEY or settings.SECRET_KEY
    key = hashlib.sha256(f"{secret}|exports.annotator|{task_id}".encode()).digest()
    return "a_" + hmac.new(key, str(user_id).encode(), hashlib.sha256).hexdigest()[:20]
