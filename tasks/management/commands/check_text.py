"""`manage.py check_text [--fix] [--fail]`: stored text that breaks the site's text rule (dynabench_site.text).

Lists one line per offending value (model, primary key, field and path, problem), found by a generic scan of
every model's text and JSON fields (dynabench_site.textdata). `--fix` replaces what can be replaced
(surrogates and noncharacters with U+FFFD; control and bidi characters removed; mark stacks cut) and prints
each change; it retracts and deletes nothing, and leaves texts with no visible character for a person.
`--fail` exits with an error when anything was found (for CI or a deploy step).
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from dynabench_site.textdata import Finding, repair_row, scan


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


class Command(BaseCommand):
    help = "List stored text that breaks the text rule (surrogates, controls, bidi controls, mark stacks, blank text)."

    def add_arguments(self, parser):
        parser.add_argument("--fix", action="store_true",
                            help="replace the offending characters (nothing is retracted or deleted)")
        parser.add_argument("--fail", action="store_true", help="exit with an error when anything was found")

    def handle(self, *args, **opts):
        findings = list(scan())
        for finding in findings:
            self.stdout.write(str(finding))
        rows = {(f.model, f.pk) for f in findings}
        if not findings:
            self.stdout.write("no problems: every stored text passes the text rule")
            return
        self.stdout.write(f"{plural(len(findings), 'problem')} in {plural(len(rows), 'row')}")
        if opts["fix"]:
            self.fix(findings)
        elif opts["fail"]:
            raise CommandError(f"{plural(len(findings), 'stored text')} break the text rule; run check_text --fix")

    def fix(self, findings: list[Finding]) -> None:
        done: set[tuple] = set()
        for finding in findings:
            key = (finding.model, finding.pk, finding.field)
            if key in done:
                continue
            done.add(key)
            changed, left = repair_row(finding)
            if changed:
                self.stdout.write(f"fixed {finding.label} {finding.field}: {finding.problem}")
            if left is not None:
                self.stdout.write(f"left {finding.label} {finding.field}: {left} (edit or retract it by hand)")
