"""How validators judge an example: the task's own wording (`validation.guidance`, Markdown an owner edits in the
task's settings), or a default derived from what the task's kind asks of a writer: a label or a span of the
passage, the labels, and whether the label depends on the context or the context was only a prompt.

Shown on the validate and expert pages and on the validator quiz; the writers' instructions stay beside it,
folded, as what the writers were asked to do.
"""

from __future__ import annotations

from django.utils.translation import gettext as _

from tasks.models import Task


def text(task: Task) -> str:
    """The guidance validators see (Markdown): the task's own, else the default for its kind."""
    own = task.typed_config.validation.guidance.strip()
    return own or default(task)


def _names(fields: list[str]) -> str:
    names = [f.replace("_", " ") for f in fields]
    if len(names) == 1:
        return names[0]
    return _("%(first)s and %(last)s") % {"first": ", ".join(names[:-1]), "last": names[-1]}


def _one_of(labels: list[str]) -> str:
    quoted = [f"**{label}**" for label in labels]
    if len(quoted) == 1:
        return quoted[0]
    return _("%(first)s or %(last)s") % {"first": ", ".join(quoted[:-1]), "last": quoted[-1]}


def default(task: Task) -> str:
    """The default wording, in the reader's language (the field names and labels stay the task's own)."""
    config = task.typed_config
    kind = task.kind_impl
    inputs = _names(config.input_fields)
    if kind.answer_is_span:
        names = {"passage": _names(config.context_fields), "inputs": inputs}
        return "\n".join([
            _("**Judge the answer, not the model.** You see a %(passage)s, the writer's %(inputs)s and the span they "
              "marked as its answer. Whether the model was fooled does not matter.") % names,
            "",
            _("- **Correct** (1): the marked span answers the %(inputs)s as the %(passage)s states it: nothing "
              "essential cut off, nothing added that changes the answer (a word more or less, such as *the*, is "
              "fine).") % names,
            _("- **Incorrect** (2): the %(passage)s answers it with another span: type that span exactly as the "
              "%(passage)s writes it.") % names,
            _("- **Flag** (3): the %(passage)s does not answer the %(inputs)s, it has more than one fair answer, it "
              "gives the answer away, or it breaks the guidelines (personal data, abuse). Say why in a few "
              "words.") % names,
            "",
            _("Answer from the %(passage)s alone, never from what you know about the world.") % names,
        ])
    labels = list(getattr(config, "labels", []) or [])
    read = kind.model_context_fields(config)
    if read:
        about = _("Read the %(read)s first: the label says how the %(inputs)s relates to it, and is judged from the "
                  "%(read)s alone, not from what you know about the world.") % {"read": _names(read), "inputs": inputs}
    elif config.context_fields:
        about = _("The %(context)s only gave the writer an idea: judge the %(inputs)s on its own, as a careful reader "
                  "would take it.") % {"context": _names(config.context_fields), "inputs": inputs}
    else:
        about = _("Judge the %(inputs)s on its own, as a careful reader would take it.") % {"inputs": inputs}
    if config.context_fields:
        flag = _("- **Flag** (3): no label can be given fairly: the text is unreadable or in another language, copies "
                 "the %(context)s, or it breaks the guidelines (personal data, abuse). Say why in a few "
                 "words.") % {"context": _names(config.context_fields)}
    else:
        flag = _("- **Flag** (3): no label can be given fairly: the text is unreadable or in another language, or it "
                 "breaks the guidelines (personal data, abuse). Say why in a few words.")
    return "\n".join([
        _("**Judge the label, not the model.** Would a careful reader who follows the guidelines give the %(inputs)s "
          "the writer's label (%(labels)s)? Whether the model was fooled does not matter.")
        % {"inputs": inputs, "labels": _one_of(labels)},
        "",
        about,
        "",
        _("- **Correct** (1): the writer's label is the one that fits best."),
        _("- **Incorrect** (2): another label fits better: choose it. Choose it too when the writer's label fits only "
          "by a stretch."),
        flag,
        "",
        _("When you hesitate, the guidelines' worked examples decide. A text that careful readers would still label "
          "differently is not a clear example: choose **Incorrect** with the label you would give."),
    ])
