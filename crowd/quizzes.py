"""Qualification quizzes: a short quiz per task and role, from items the owner chose, with known answers.

The rules, in one place (`grade`):
- a worker takes a task's quiz only after acknowledging its current guidelines (the quiz tests them);
- at most `max_attempts` attempts, each kept with its answers and score;
- a score of at least `pass_mark` grants the role on that task (`tasks.roles.grant_on_task`, source quiz);
- a failed attempt says which questions were wrong and what the worker answered (`marks`), never the right
  answer: a retake asks the same questions (and so would a second account), and a key to copy would qualify
  anyone. The mark sends the worker back to the guidelines on the point they missed. (An "is this label
  right?" question has two answers, so its mark does tell the answer: on a validator quiz a retake teaches more
  than it tests, and the gold items of the queue, `validation.gold`, stay the check that counts.)

Two kinds of question: "which label is right?" (`proposed` empty; the answer is a label, or for QA the
answer's text) and "is this label right?" (`proposed` set; the answer is correct or incorrect).
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Max

from annotation.models import Example
from crowd.models import Quiz, QuizAttempt, QuizItem
from dynabench_site.errors import Conflict, InvalidInput, NotFound
from dynabench_site.text import check_json_texts, check_optional_text
from tasks import guidelines, roles
from tasks.models import LabeledItem, Task, TaskMembership

CORRECT, INCORRECT = "correct", "incorrect"
MAX_ITEMS = 50


@dataclass(frozen=True)
class Question:
    item: QuizItem
    context: list[tuple[str, str]]
    input: list[tuple[str, str]]
    proposed: str | None
    choices: list[str] | None  # None: type the answer


def quiz_for(task: Task, role: str, *, active_only: bool = True) -> Quiz | None:
    quizzes = Quiz.objects.filter(task=task, role=role)
    return (quizzes.filter(active=True) if active_only else quizzes).first()


def text_of(task: Task, value: Any) -> str:
    return task.kind_impl.target_label(value) if value is not None else ""


def questions(quiz: Quiz) -> list[Question]:
    task = quiz.task
    labels = list(getattr(task.typed_config, "labels", []) or [])
    out = []
    for item in quiz.items.all():
        judged = item.proposed is not None
        choices = [CORRECT, INCORRECT] if judged else (labels or None)
        context = [(k, str(v)) for k, v in (item.context or {}).items()]
        inputs = [(k, str(v)) for k, v in (item.input or {}).items()]
        out.append(Question(item, context, inputs, text_of(task, item.proposed) if judged else None, choices))
    return out


def normalised(text: Any) -> str:
    folded = unicodedata.normalize("NFKC", str(text or "")).casefold()
    return " ".join(folded.split()).strip(" .,;:!?\"'")


def is_right(task: Task, item: QuizItem, given: Any) -> bool:
    expected = item.answer if item.proposed is not None else text_of(task, item.answer)
    return bool(normalised(given)) and normalised(given) == normalised(expected)


def attempts_left(quiz: Quiz, user) -> int:
    return max(0, quiz.max_attempts - quiz.attempts.filter(user=user).count())


def holds_by_quiz(user, quiz: Quiz) -> bool:
    return TaskMembership.objects.filter(task=quiz.task, user=user, role=quiz.role).exists()


def check_may_take(quiz: Quiz, user) -> None:
    if holds_by_quiz(user, quiz):
        raise Conflict(f"you already hold the {quiz.get_role_display().lower()} role on this task")
    if not quiz.items.exists():
        raise Conflict("this quiz has no questions yet; the task's owners are preparing it")
    if attempts_left(quiz, user) == 0:
        raise Conflict(f"you have used all {quiz.max_attempts} attempts at this quiz; ask the task's owners")
    guidelines.check_acknowledged(user, quiz.task)


@transaction.atomic
def grade(quiz: Quiz, user, answers: dict[str, Any]) -> QuizAttempt:
    """Score one attempt (every question answered) and grant the role on a pass."""
    quiz = Quiz.objects.select_for_update().select_related("task").get(pk=quiz.pk)  # attempts counted one at a time
    check_may_take(quiz, user)
    items = list(quiz.items.all())
    missing = [n for n, item in enumerate(items, start=1) if not str(answers.get(str(item.pk), "")).strip()]
    if missing:
        raise InvalidInput(f"answer every question (missing: {', '.join(map(str, missing))})", field="answers")
    check_json_texts({str(i.pk): answers[str(i.pk)] for i in items}, "answers")
    right = sum(is_right(quiz.task, item, answers[str(item.pk)]) for item in items)
    score = right / len(items)
    passed = score >= quiz.pass_mark - 1e-9
    attempt = QuizAttempt.objects.create(
        quiz=quiz, user=user, answers={str(i.pk): answers[str(i.pk)] for i in items}, correct=right,
        total=len(items), score=round(score, 4), passed=passed,
    )
    if passed:
        roles.grant_on_task(user, quiz.task, quiz.role, TaskMembership.Source.QUIZ)
    return attempt


@dataclass(frozen=True)
class Mark:
    """One question of an attempt, as the worker is told: its number, right or wrong, and their answer (never
    the right one)."""

    number: int
    right: bool
    given: str
    about: str  # the question's text (its input), so the mark says which one without the form


def marks(attempt: QuizAttempt) -> list[Mark]:
    """What an attempt got right and wrong, question by question, numbered as the quiz page numbers them (a
    question an owner added since is left out)."""
    task = attempt.quiz.task
    out = []
    for number, item in enumerate(attempt.quiz.items.all(), start=1):
        if str(item.pk) in attempt.answers:
            given = attempt.answers[str(item.pk)]
            about = " / ".join(str(v) for v in (item.input or {}).values())
            out.append(Mark(number, is_right(task, item, given), str(given), about))
    return out


# --- the owner's side ----------------------------------------------------------------------------


def ensure_quiz(task: Task, role: str) -> Quiz:
    _check_role(role)
    return Quiz.objects.get_or_create(task=task, role=role)[0]


def draft_quiz(task: Task, role: str) -> Quiz:
    """The task's quiz for `role`, or an unsaved one with the defaults: what the editor shows on a GET, which
    changes nothing (the first POST saves it)."""
    _check_role(role)
    return quiz_for(task, role, active_only=False) or Quiz(task=task, role=role)


def _check_role(role: str) -> None:
    if role not in Quiz.Role.values:
        raise NotFound(f"there is no {role!r} quiz; quizzes are for writers (annotator) and validators")


def configure(quiz: Quiz, *, pass_mark: float, max_attempts: int, active: bool) -> Quiz:
    if not 0 < pass_mark <= 1:
        raise InvalidInput("must be above 0 and at most 1 (e.g. 0.8)", field="pass_mark")
    if not 1 <= max_attempts <= 20:
        raise InvalidInput("must be between 1 and 20", field="max_attempts")
    quiz.pass_mark, quiz.max_attempts, quiz.active = pass_mark, max_attempts, active
    quiz.save(update_fields=["pass_mark", "max_attempts", "active", "updated_at"])
    return quiz


def add_item(quiz: Quiz, *, context: dict, input: dict, answer: Any, proposed: Any = None,
             explanation: str = "", source: str = "") -> QuizItem:
    """Add a question, checking its labels with the task kind (so the known answer is a valid one)."""
    if quiz.items.count() >= MAX_ITEMS:
        raise Conflict(f"a quiz holds at most {MAX_ITEMS} questions")
    task = quiz.task
    check_json_texts(context, "context")
    check_json_texts(input, "input")
    explanation = check_optional_text(explanation, "explanation")
    if quiz.role == Quiz.Role.VALIDATOR:
        if proposed is None:
            raise InvalidInput("a validator question shows a label to judge", field="proposed")
        proposed = task.kind_impl.clean_target(task.typed_config, context, proposed)
        if answer not in (CORRECT, INCORRECT):
            raise InvalidInput("is 'correct' or 'incorrect'", field="answer")
    else:
        answer, proposed = task.kind_impl.clean_target(task.typed_config, context, answer), None
    position = (quiz.items.aggregate(p=Max("position"))["p"] or 0) + 1
    return QuizItem.objects.create(quiz=quiz, position=position, context=context, input=input, proposed=proposed,
                                   answer=answer, explanation=explanation, source=source)


def add_labelled_item(quiz: Quiz, item: LabeledItem) -> QuizItem:
    """A writer question (which label?), or a validator question showing the item's own label (correct)."""
    judged = quiz.role == Quiz.Role.VALIDATOR
    return add_item(quiz, context=item.context, input=item.input, answer=CORRECT if judged else item.target,
                    proposed=item.target if judged else None, source=f"labelled item {item.pk}")


def add_example(quiz: Quiz, example: Example) -> QuizItem:
    """From a decided example: the writer's label and whether the validators confirmed it."""
    decided = {Example.Consensus.VERIFIED: CORRECT, Example.Consensus.REJECTED: INCORRECT}
    if example.consensus not in decided:
        raise Conflict(f"example {example.pk} is not decided (verified or rejected); its answer is unknown")
    context = example.context.payload if example.context_id else {}
    if quiz.role == Quiz.Role.VALIDATOR:
        return add_item(quiz, context=context, input=example.input, proposed=example.target,
                        answer=decided[example.consensus], source=f"example {example.pk}")
    right = example.target if example.consensus == Example.Consensus.VERIFIED else example.validated_label
    return add_item(quiz, context=context, input=example.input, answer=right, source=f"example {example.pk}")


def remove_item(quiz: Quiz, item_id: int) -> None:
    quiz.items.filter(pk=item_id).delete()


def summary(quiz: Quiz) -> dict[str, Any]:
    attempts = quiz.attempts.all()
    return {"items": quiz.items.count(), "attempts": attempts.count(),
            "takers": attempts.values("user").distinct().count(),
            "passed": attempts.filter(passed=True).values("user").distinct().count()}
