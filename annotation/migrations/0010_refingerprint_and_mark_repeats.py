"""Fingerprints as the tokenizer reads the text (issue 39, item 13), and the repeats that existed before the database
held one live example per writer, round and fingerprint (item 12) marked, so that constraint can be created.

Nothing is deleted: an example that repeats an earlier live example of its writer in its round (by the new
fingerprint: a zero-width space or an accent no longer makes a new one) keeps every field and gets
`key_shared = True`, which leaves it outside the constraint (migration 0011). The duplicate check still sees it.
"""

import hashlib
import json

from django.db import migrations
from django.db.models import Count, Min

BATCH = 1000


def _reads(apps):
    from tasks.kinds import get_kind

    reads = {}
    for task in apps.get_model("tasks", "Task").objects.all():
        try:
            kind = get_kind(task.kind)
            reads[task.pk] = kind.model_context_fields(kind.parse_config(task.config))
        except Exception:  # noqa: BLE001 - a task whose kind or config no longer parses: the input alone
            reads[task.pk] = []
    return reads


def refingerprint(apps, schema_editor):
    """Every example's `model_key` recomputed with annotation.fingerprints (as a new example gets it on save);
    only the rows whose key changes are written."""
    from annotation.fingerprints import model_key

    Example = apps.get_model("annotation", "Example")
    reads = _reads(apps)
    changed = []
    rows = Example.objects.select_related("round", "context").only(
        "pk", "input", "model_key", "round__task_id", "context__payload").order_by("pk")
    for example in rows.iterator(chunk_size=BATCH):
        payload = example.context.payload if example.context_id else None
        inputs = example.input if isinstance(example.input, dict) else {}
        key = model_key(reads.get(example.round.task_id, []), payload, inputs)
        new = hashlib.sha256(json.dumps(key, ensure_ascii=False).encode()).hexdigest()
        if new != example.model_key:
            example.model_key = new
            changed.append(example)
        if len(changed) >= BATCH:
            Example.objects.bulk_update(changed, ["model_key"])
            changed = []
    if changed:
        Example.objects.bulk_update(changed, ["model_key"])


def mark_repeats(apps, schema_editor):
    """In each group of live examples with one writer, round and key, every example but the first is marked."""
    Example = apps.get_model("annotation", "Example")
    live = Example.objects.filter(retracted=False, key_shared=False).exclude(model_key="")
    groups = (live.values("author_id", "round_id", "model_key").annotate(n=Count("id"), first=Min("id"))
              .filter(n__gt=1).order_by())
    for group in groups.iterator(chunk_size=BATCH):
        live.filter(author_id=group["author_id"], round_id=group["round_id"], model_key=group["model_key"],
                    id__gt=group["first"]).update(key_shared=True)


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0009_example_key_shared'),
        ('tasks', '0003_labeleditem_split_heldout'),
    ]

    operations = [
        migrations.RunPython(refingerprint, migrations.RunPython.noop),
        migrations.RunPython(mark_repeats, migrations.RunPython.noop),
    ]
