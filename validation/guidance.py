"""How validators judge an example: the task's own wording (`validation.guidance`, Markdown an owner edits in the
task's settings), or a default derived from what the task's kind asks of a writer: a label or a span of the
passage, the labels, and whether the label depends on the context or the context was only a prompt.

Shown on the validate and expert pages and on the validator quiz; the writers' instructions stay beside it,
folded, as what the writers were asked to do.
"""

from __future__ import annotations

from tasks.models import Task


def text(task: Task) -> str:
    """The guidance validators see (Markdown): the task's own, else the default for its kind."""
    own = task.typed_config.validation.guidance.strip()
    return own or default(task)


def _names(fields: list[str]) -> str:
    names = [f.replace("_", " ") for f in fields]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _one_of(labels: list[str]) -> str:
    quoted = [f"**{label}**" for label in labels]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]


def default(task: Task) -> str:
    config = task.typed_config
    kind = task.kind_impl
    inputs = _names(config.input_fields)
    if kind.answer_is_span:
        passage = _names(config.context_fields)
        return (
            f"**Judge the answer, not the model.** You see a {passage}, the writer's {inputs} and the span they "
            f"marked as its answer. Whether the model was fooled does not matter.\n\n"
            f"- **Correct** (1): the marked span answers the {inputs} as the {passage} states it: nothing essential "
            f"cut off, nothing added that changes the answer (a word more or less, such as *the*, is fine).\n"
            f"- **Incorrect** (2): the {passage} answers it with another span: type that span exactly as the "
            f"{passage} writes it.\n"
            f"- **Flag** (3): the {passage} does not answer the {inputs}, it has more than one fair answer, it gives "
            f"the answer away, or it breaks the guidelines (personal data, abuse). Say why in a few words.\n\n"
            f"Answer from the {passage} alone, never from what you know about the world."
        )
    labels = list(getattr(config, "labels", []) or [])
    read = kind.model_context_fields(config)
    if read:
        about = (f"Read the {_names(read)} first: the label says how the {inputs} relates to it, and is judged "
                 f"from the {_names(read)} alone, not from what you know about the world.")
    elif config.context_fields:
        about = (f"The {_names(config.context_fields)} only gave the writer an idea: judge the {inputs} on its own, "
                 f"as a careful reader would take it.")
    else:
        about = f"Judge the {inputs} on its own, as a careful reader would take it."
    copies = f", copies the {_names(config.context_fields)}" if config.context_fields else ""
    return (
        f"**Judge the label, not the model.** Would a careful reader who follows the guidelines give the "
        f"{inputs} the writer's label ({_one_of(labels)})? Whether the model was fooled does not matter.\n\n"
        f"{about}\n\n"
        f"- **Correct** (1): the writer's label is the one that fits best.\n"
        f"- **Incorrect** (2): another label fits better: choose it. Choose it too when the writer's label fits only "
        f"by a stretch.\n"
        f"- **Flag** (3): no label can be given fairly: the text is unreadable or in another language{copies}, or it "
        f"breaks the guidelines (personal data, abuse). Say why in a few words.\n\n"
        f"When you hesitate, the guidelines' worked examples decide. A text that careful readers would still "
        f"label differently is not a clear example: choose **Incorrect** with the label you would give."
    )
