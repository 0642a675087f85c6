"""The study's records, exported apart from the examples (owners and admins only; pages and API).

* Consent records: one row per person and version agreed to, withdrawals included (the study's records need both
  dates): the person's pseudonymous id (`accounts.pseudonyms.person_id`, the same id their examples carry in the
  task's datasets), the version, when they agreed, when they withdrew, the language they read it in.
* Survey answers, per phase: one row per response: the pseudonymous id, the language, when, whether it made the
  person eligible, then one column per question key (multiple choice joined with "|"; an unanswered optional
  question is empty). People who withdrew are left out (their answers leave the exports as their examples do;
  `withdrawn_left_out` says how many).

No example text is in either. CSV cells go through dynabench_site.csvsafe (no spreadsheet formulas).
"""

from __future__ import annotations

from typing import Any

from accounts.pseudonyms import person_id
from dynabench_site import csvsafe
from study import consent as consents
from study import surveys
from study.models import ConsentRecord, SurveyResponse

CONSENT_COLUMNS = ["person_id", "version", "agreed_at", "withdrawn_at", "language"]
ANSWER_COLUMNS = ["person_id", "language", "submitted_at", "eligible"]


def _time(value) -> str | None:
    return value.isoformat() if value else None


def consent_records(task) -> list[dict[str, Any]]:
    rows = ConsentRecord.objects.filter(task=task).order_by("agreed_at", "id")
    return [{"person_id": person_id(task.pk, r.user_id), "version": r.version, "agreed_at": _time(r.agreed_at),
             "withdrawn_at": _time(r.withdrawn_at), "language": r.language} for r in rows]


def consent_csv(task) -> str:
    rows = consent_records(task)
    return csvsafe.rows_text([CONSENT_COLUMNS, *([cell(row[c]) for c in CONSENT_COLUMNS] for row in rows)])


def survey_answers(task, phase: str) -> dict[str, Any]:
    """{phase, questions: [keys], rows: [...], withdrawn_left_out: n}; 404 for a phase that is not pre or post."""
    surveys.check_phase(phase)
    found = surveys.survey(task, phase, active=False)
    if found is None:
        return {"phase": phase, "questions": [], "rows": [], "withdrawn_left_out": 0}
    keys = [q.key for q in surveys.questions(found)]
    withdrawn = consents.withdrawn_user_ids(task)
    rows, left_out = [], 0
    for response in SurveyResponse.objects.filter(survey=found).order_by("submitted_at", "id"):
        if response.user_id in withdrawn:
            left_out += 1
            continue
        answers = response.answers or {}
        # Keys of questions deleted since are kept, after the current ones: an answer is never dropped silently.
        extra = [k for k in answers if k not in keys]
        keys += extra
        rows.append({"person_id": person_id(task.pk, response.user_id), "language": response.language,
                     "submitted_at": _time(response.submitted_at), "eligible": response.eligible,
                     "answers": answers})
    return {"phase": phase, "questions": keys, "rows": rows, "withdrawn_left_out": left_out}


def cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, list):
        return "|".join(str(v) for v in value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


def answers_csv(task, phase: str) -> str:
    data = survey_answers(task, phase)
    keys = data["questions"]
    lines: list[list[Any]] = [ANSWER_COLUMNS + keys]
    for row in data["rows"]:
        lines.append([row["person_id"], row["language"], row["submitted_at"], cell(row["eligible"]),
                      *(cell(row["answers"].get(k)) for k in keys)])
    return csvsafe.rows_text(lines)
