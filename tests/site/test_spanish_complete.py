"""Spanish is a complete second language (issue 42, item 6): every entry of locale/es/LC_MESSAGES/*.po is
translated (no empty msgstr, no fuzzy entry), each translation keeps its msgid's placeholders (%(name)s, %s, %%)
and HTML tags, and pages read with the language cookie set to "es" are in Spanish, with no English heading left.

The catalogues are parsed here (Django ships no .po parser): msgctxt, msgid, msgid_plural, msgstr and msgstr[n],
with their continuation lines; obsolete entries (#~) are skipped."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
from django.conf import settings

from tasks import roles
from tests.factories import RoundFactory, TaskFactory, UserFactory

SPANISH = Path(settings.BASE_DIR) / "locale" / "es" / "LC_MESSAGES"
CATALOGUES = sorted(SPANISH.glob("*.po"))
PLACEHOLDER = re.compile(r"%(?:\([^)]+\))?[-#0 +]*\d*(?:\.\d+)?[sdifrxXeEgGc%]")
TAG = re.compile(r"</?([a-zA-Z][a-zA-Z0-9]*)\b")


def unquote(text: str) -> str:
    body = text.strip()
    assert body.startswith('"') and body.endswith('"'), f"not a quoted string: {text!r}"
    escapes = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "r": "\r"}
    return re.sub(r"\\(.)", lambda m: escapes.get(m.group(1), "\\" + m.group(1)), body[1:-1])


def entries(path: Path) -> list[dict]:
    """The catalogue's entries: {'line', 'flags', 'msgid', 'msgid_plural', 'msgstr': {n: text}}."""
    found, entry, field = [], None, None

    def close():
        if entry is not None and entry.get("msgid") is not None:
            found.append(entry)

    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#~"):
            close()
            entry, field = None, None
            continue
        if entry is None:
            entry = {"line": number, "flags": set(), "msgid": None, "msgid_plural": None, "msgstr": {}}
        if line.startswith("#,"):
            entry["flags"] |= {flag.strip() for flag in line[2:].split(",")}
        elif line.startswith("#"):
            continue
        elif line.startswith("msgctxt "):
            field = None
        elif line.startswith("msgid_plural "):
            field, entry["msgid_plural"] = "msgid_plural", unquote(line[len("msgid_plural "):])
        elif line.startswith("msgid "):
            field, entry["msgid"] = "msgid", unquote(line[len("msgid "):])
        elif line.startswith("msgstr["):
            index = int(line[len("msgstr["):line.index("]")])
            field, entry["msgstr"][index] = index, unquote(line[line.index("]") + 1:])
        elif line.startswith("msgstr "):
            field, entry["msgstr"][0] = 0, unquote(line[len("msgstr "):])
        elif line.startswith('"') and field is not None:
            if isinstance(field, int):
                entry["msgstr"][field] += unquote(line)
            else:
                entry[field] += unquote(line)
    close()
    return found


def placeholders(text: str) -> Counter:
    return Counter(PLACEHOLDER.findall(text))


def tags(text: str) -> Counter:
    return Counter(tag.lower() for tag in TAG.findall(text))


def test_there_are_spanish_catalogues_for_the_pages_and_the_scripts():
    assert {path.name for path in CATALOGUES} == {"django.po", "djangojs.po"}
    for path in CATALOGUES:
        assert path.with_suffix(".mo").is_file(), f"{path} is not compiled: run manage.py compilemessages -l es"
        assert len(entries(path)) > 100 if path.name == "django.po" else len(entries(path)) > 20


@pytest.mark.parametrize("po", CATALOGUES, ids=lambda path: path.name)
def test_every_entry_is_translated_and_none_is_fuzzy(po):
    untranslated, fuzzy = [], []
    for entry in entries(po):
        if "fuzzy" in entry["flags"]:
            fuzzy.append(f"line {entry['line']}: {entry['msgid'][:70]!r}")
        if entry["msgid"] == "":  # the header
            continue
        forms = entry["msgstr"]
        if not forms or any(not text.strip() for text in forms.values()):
            untranslated.append(f"line {entry['line']}: {entry['msgid'][:70]!r}")
        if entry["msgid_plural"] is not None and len(forms) < 2:
            untranslated.append(f"line {entry['line']}: plural forms missing for {entry['msgid'][:70]!r}")
    assert not fuzzy, f"{po.name}: fuzzy entries (translate them and drop the flag):\n" + "\n".join(fuzzy)
    assert not untranslated, f"{po.name}: untranslated entries:\n" + "\n".join(untranslated)


@pytest.mark.parametrize("po", CATALOGUES, ids=lambda path: path.name)
def test_each_translation_keeps_the_placeholders_and_the_html_of_its_msgid(po):
    broken = []
    for entry in entries(po):
        if entry["msgid"] == "":
            continue
        sources = [entry["msgid"]] + ([entry["msgid_plural"]] if entry["msgid_plural"] else [])
        for index, text in entry["msgstr"].items():
            source = sources[min(index, len(sources) - 1)]
            # a singular form may leave out the count (Spanish "un ejemplo"); every other placeholder stays
            wanted, got = placeholders(source), placeholders(text)
            if set(got) - set(wanted) or (set(wanted) - set(got) - ({"%(n)s"} if index == 0 else set())):
                broken.append(f"line {entry['line']}: placeholders {sorted(wanted)} became {sorted(got)}")
            if tags(source) != tags(text):
                broken.append(f"line {entry['line']}: HTML tags {dict(tags(source))} became {dict(tags(text))}")
    assert not broken, f"{po.name}:\n" + "\n".join(broken)


# --- pages in Spanish -----------------------------------------------------------------------------------


@pytest.fixture
def spanish(client):
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = "es"
    return client


def heading(html: str) -> str:
    return re.sub(r"<[^>]+>", "", re.search(r"<h1[^>]*>(.*?)</h1>", html, re.S).group(1)).strip()


def test_the_home_page_in_spanish(db, spanish):
    TaskFactory(slug="sentiment", kind="sentiment", name="Sentiment")
    html = spanish.get("/").content.decode()
    assert '<html lang="es"' in html
    assert heading(html) == "Recoge los ejemplos en los que fallan los modelos"
    for spanish_text in ("Cómo funciona una ronda", "Qué significan las cifras", "Regístrate para escribir ejemplos",
                         "Iniciar sesión", "Abrir la tarea"):
        assert spanish_text in html
    for english in ("Collect the examples that models get wrong", "How a round works", "What the figures mean",
                    "Sign up to write examples", "Open the task"):
        assert english not in html


def test_the_account_pages_in_spanish(db, spanish):
    login = spanish.get("/accounts/login/").content.decode()
    assert heading(login) == "Iniciar sesión" and "¿Aún no tienes cuenta?" in login and "No account yet?" not in login
    signup = spanish.get("/accounts/signup/").content.decode()
    assert heading(signup) == "Crea tu cuenta" and "Create your account" not in signup


def test_a_task_page_and_the_validation_page_in_spanish(db, spanish):
    task = TaskFactory(slug="sentiment", kind="sentiment", name="Sentiment")
    RoundFactory(task=task, number=1)
    validator = UserFactory(username="vera")
    roles.grant(validator, roles.VALIDATOR)
    spanish.force_login(validator)
    page = spanish.get(f"/tasks/{task.slug}/").content.decode()
    assert "ronda 1 abierta" in page and "Qué hacer" in page and "Rondas" in page
    assert "What to do" not in page and "round 1 open" not in page
    validate = spanish.get(f"/tasks/{task.slug}/validate/")
    if validate.status_code == 200:  # (a study's gate may send a person elsewhere first)
        html = validate.content.decode()
        assert heading(html).startswith("Validar: Sentiment") and "Cargando el siguiente ejemplo…" in html
        assert "Loading the next example" not in html and "Validate: Sentiment" not in html


def test_a_missing_page_in_spanish(db, spanish):
    html = spanish.get("/no/such/page/").content.decode()
    assert heading(html) == "Esta página no existe" and "This page does not exist" not in html
    assert "Volver a las tareas" in html


def test_the_same_pages_stay_english_without_the_cookie(db, client):
    html = client.get("/").content.decode()
    assert heading(html) == "Collect the examples that models get wrong"


# --- every string the templates mark is in the Spanish catalogue ---------------------------------------

TEMPLATE_DIRS = [Path(settings.BASE_DIR) / "frontend" / "templates", *sorted(Path(settings.BASE_DIR).glob("*/templates"))]
CALL = re.compile(r"\b(n?p?gettext)\(((?:\s*u?'(?:[^'\\]|\\.)*'\s*,?)+)")
LITERAL = re.compile(r"u?'(?:[^'\\]|\\.)*'")


def marked_in_templates() -> dict[tuple[str, str], str]:
    """(context, msgid) -> the template that marks it, as `makemessages` reads the templates (Django's templatize)."""
    import ast

    from django.utils.translation.template import templatize

    found = {}
    for folder in TEMPLATE_DIRS:
        for path in sorted(folder.rglob("*")):
            if path.suffix not in {".html", ".txt"} or ".venv" in path.parts:
                continue
            source = path.read_text(encoding="utf-8")
            if "{% load i18n" not in source and "i18n" not in source:
                continue
            for call, args in CALL.findall(templatize(source, origin=str(path))):
                strings = [ast.literal_eval(text) for text in LITERAL.findall(args)]
                context = strings.pop(0) if call.startswith(("pgettext", "npgettext")) else ""
                if strings:
                    found[(context, strings[0])] = str(path.relative_to(settings.BASE_DIR))
    return found


def test_every_string_the_templates_mark_has_a_spanish_translation():
    """A string marked in a template after the catalogue was made fails here: run
    `manage.py makemessages -l es --ignore=.venv --ignore=var --ignore=research --ignore=docs --ignore=tests
    --ignore=bench`, translate the new entries in locale/es/LC_MESSAGES/django.po, then `compilemessages -l es`."""
    catalogue = {entry["msgid"]: entry for entry in entries(SPANISH / "django.po")}  # (a context's entries too)
    missing = []
    for (_context, msgid), where in sorted(marked_in_templates().items()):
        entry = catalogue.get(msgid)
        if entry is None or not all(text.strip() for text in entry["msgstr"].values()):
            missing.append(f"{where}: {msgid[:80]!r}")
    assert not missing, "marked in templates, not translated in locale/es:\n" + "\n".join(missing)
