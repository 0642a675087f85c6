"""The owner's translations of a task's texts (study.texts): an overview of the languages, and one page per
language with every text beside its source. Owners and admins only (tasks.access.task_for with the owner role);
every value is checked before anything is stored (study.texts.save), and a refused form comes back with what was
typed and the reason by the field (400)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_http_methods

from dynabench_site.errors import InvalidInput
from study import texts
from tasks import roles
from tasks.access import task_for

GROUPS = {"task": gettext_lazy("The task"), "consent": gettext_lazy("Consent"),
          "survey:pre": gettext_lazy("Survey before the work"), "survey:post": gettext_lazy("Survey after the work"),
          "labels": gettext_lazy("Labels' and fields' display names")}


@login_required
def overview(request, slug: str):
    task = task_for(request, slug, roles.OWNER)
    languages = [{"code": code, "name": name, **texts.progress(task, code)}
                 for code, name in texts.target_languages().items()]
    return render(request, "study/texts.html", {"task": task, "languages": languages,
                                                "source": texts.languages()[texts.source_language()]})


@login_required
@require_http_methods(["GET", "POST"])
def edit(request, slug: str, language: str):
    task = task_for(request, slug, roles.OWNER)
    if language not in texts.target_languages():
        raise Http404(f"No language {language!r} to translate into; the site's are: "
                      f"{', '.join(texts.target_languages())}.")
    error = None
    rows = texts.rows_for_form(task, language)
    if request.method == "POST":
        values = {row["field"].key: request.POST.get(row["field"].key, "") for row in rows}
        try:
            counts = texts.save(task, language, values)
        except InvalidInput as refused:
            error = refused
            for row in rows:  # what was typed comes back, with the reason by its field
                row["value"] = values[row["field"].key]
                row["error"] = refused.message if refused.field == row["field"].key else ""
        else:
            messages.success(request, _("Translations saved: %(saved)d changed, %(removed)d removed.") % counts)
            return redirect("study-texts-edit", slug=task.slug, language=language)
    sections = []
    for row in rows:
        group = row["field"].group
        if not sections or sections[-1]["group"] != group:
            sections.append({"group": group, "title": GROUPS.get(group, group), "rows": []})
        sections[-1]["rows"].append(row)
    return render(request, "study/texts_edit.html",
                  {"task": task, "language": language, "language_name": texts.target_languages()[language],
                   "rtl": texts.is_rtl(language), "sections": sections, "error": error,
                   "progress": texts.progress(task, language)},
                  status=400 if error else 200)
