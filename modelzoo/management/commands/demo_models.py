"""Train (or reuse) a round-1 ensemble for every demo task with the real encoder, and deploy it.

The data is `modelzoo.demo.training_set` (the demo's own items and every other imported train collection: the
vendored samples, and with `load_demo --base-data` SNLI dev and an SST-2 train sample from DATA_DIR); the recipe
is the model zoo's (`modelzoo.ensemble_training`): ``cached-top`` where there is sample data, the earlier
``full`` recipe on a task that has only its few dozen demo items (it measured better there,
docs/benchmarks/demo.md). The cached-top settings are the task's (`ensemble_training.default_recipe`: head, then
task kind) with the demo's per-head `DEMO_RECIPE` on top, unless the task kind has settings of its own (NLI). The
cheap classifiers train first and QA last, each task's ensemble is deployed as soon as it is ready, and progress
is on each member's ModelVersion row (the task page shows it) — so `make run` can serve the site while this runs
in the background: submissions meanwhile are saved and answered "pending", and are scored when the ensemble is
deployed (`ensemble_deployed`).

Idempotent: a round whose ensemble is deployed and on disk is left alone, and members whose data and settings
did not change are reused from MODEL_STORE instead of retrained.
"""

from __future__ import annotations

import time

from django.core.management.base import BaseCommand, CommandError

from modelzoo import data, demo, encoders, ensemble_training, opponent, services
from modelzoo.signals import ensemble_deployed
from tasks.models import Task
from zoo.heads import get_head
from zoo.llm.base import ProviderError
from zoo.progress import tqdm_echo
from zoo.recipes import RECIPES

DEMO_TASKS = ["sentiment", "hate-speech", "nli", "qa"]  # cheapest first: the classifiers are ready soonest
# Per head: settings of the cached-top recipe for the demo (figures and costs: docs/benchmarks/demo.md), for a task
# whose kind has no training settings of its own; a kind that has (`TaskKind.recipe_defaults`: NLI) trains with the
# model zoo's settings for it (head, then kind), measured on the demo as they are.
DEMO_RECIPE = {
    # the classifiers keep the settings their held-out figures were measured with (lr 2e-4, the lowest dev loss),
    # not the head's newer round defaults (lr 1e-4, the fewest dev mistakes), which were not measured on the demo
    "classification": {"top_layers": 2, "epochs": 2, "max_steps": 600, "min_steps": 150, "max_length": 96,
                       "lr": 2e-4, "select_on": "loss"},
    # QA: every block, lr 1e-4, bfloat16 (the head's recipe_defaults, shared with the round pipeline)
    "qa": {"epochs": 2, "max_steps": 500, "min_steps": 150, "max_length": 256},
}


class Command(BaseCommand):
    help = "Train or reuse a round-1 ensemble (different seeds) for each demo task and deploy it for the open round."

    def add_arguments(self, parser):
        parser.add_argument("--tasks", nargs="*", default=DEMO_TASKS, help="task slugs (default: the demo tasks)")
        parser.add_argument("--members", type=int, default=3, help="ensemble size (seeds 0..n-1)")
        parser.add_argument("--recipe", choices=("auto", *RECIPES), default="auto",
                            help="auto: cached-top with the samples; the earlier full recipe for a task that has "
                                 "only its few dozen demo items (NLI without `load_demo --base-data`)")
        parser.add_argument("--max-examples", type=int, default=None,
                            help="at most this many rows per extra training collection (a quicker, weaker run)")
        parser.add_argument("--max-steps", type=int, default=None, help="at most this many updates per member")
        parser.add_argument("--epochs", type=int, default=None, help="passes over the data (full recipe: fixed)")
        parser.add_argument("--encoder", default=None, metavar="NAME_OR_PATH",
                            help='the base encoder: a registered name (zoo.encoders; "tiny": a small random one, '
                                 "tests), upload:<id or name>, or a checkpoint folder; default: each task's "
                                 "retraining.encoder, else the site's")
        parser.add_argument("--no-progress", action="store_true", help="no progress bars (a log file)")
        parser.add_argument("--demo-items-only", action="store_true",
                            help="train on the demo's own items only (as before the samples; for comparison)")
        parser.add_argument("--force", action="store_true", help="retrain even when an ensemble is deployed")
        parser.add_argument("--opponent-rows", type=int, default=240,
                            help="training rows (a stable sample, as even across labels as they allow) the language "
                                 "model opponent's offsets are fitted on, for a task that turns it on; 0: no opponent")

    def handle(self, *args, **o):
        started = time.perf_counter()
        order = {slug: i for i, slug in enumerate(DEMO_TASKS)}
        tasks = sorted(Task.objects.filter(slug__in=o["tasks"]), key=lambda t: (order.get(t.slug, 99), t.slug))
        for task in [t for t in tasks if t.kind_impl.generative]:  # a chat task: its models are language models
            self.stdout.write(f"{task.slug}: a {task.kind} task answers with the language models of its settings; "
                              "no encoder models to train")
        tasks = [t for t in tasks if not t.kind_impl.generative]
        for task in tasks:  # a bad encoder is refused before anything trains
            try:
                encoders.validate_encoder(o["encoder"], task, operator=True)
            except encoders.EncoderError as exc:
                raise CommandError(f"{task.slug}: {exc}") from None
        for task in tasks:
            self._task(task, o)
        self.stdout.write(self.style.SUCCESS(f"demo models ready in {time.perf_counter() - started:.0f} s"))

    def _task(self, task: Task, o: dict) -> None:
        round_ = task.current_round
        if round_ is None:
            self.stdout.write(f"{task.slug}: no open round, skipped")
            return
        if o["opponent_rows"] > 0:  # first: deploying the ensemble evaluates every ready model, the opponent too
            self._opponent(task, o["opponent_rows"])
        self._ensemble(task, round_, o)

    def _opponent(self, task: Task, rows: int) -> None:
        """The language model opponent of a task that turns it on, its offsets fitted on training rows (the demo's
        rounds have no dev split yet; never a dev or test split of a dataset), then judged on the task's held-out
        rows (`opponent.held_out_rows`): it joins the demo's verdicts only if it beats the commonest label there by
        `opponent.MIN_MARGIN` (docs/llm-opponent.md)."""
        if not task.typed_config.opponent.enabled:
            return
        held_out = opponent.held_out_rows(task)
        began = time.perf_counter()
        version = opponent.latest(task)
        try:
            if version is None:
                sample = demo.opponent_rows(task, rows)
                version = opponent.fit(task, sample, sample.name, max_rows=rows, held_out=held_out)
                fitted = version.hyperparameters["llm"]["fitted_on"]
                self.stdout.write(f"{task.slug}: language model opponent {version.name} (v{version.version}), offsets "
                                  f"fitted on {fitted['size']} rows: accuracy {fitted['accuracy_before']:.3f} -> "
                                  f"{fitted['accuracy_after']:.3f} on them")
            elif not opponent.held_out_of(version):  # fitted before opponents were judged: judge it now
                opponent.judge(version, held_out)
            else:
                return
        except (ProviderError, opponent.NoOpponent) as exc:
            self.stdout.write(f"{task.slug}: no language model opponent ({exc})")
            return
        verdict = opponent.held_out_of(version)["verdict"]
        joins = "joins the verdicts" if verdict != opponent.FALLS_SHORT else "is left out of the verdicts"
        self.stdout.write(f"{task.slug}: {opponent.summary(version)} It {joins} "
                          f"({time.perf_counter() - began:.0f} s).")

    def _ensemble(self, task: Task, round_, o: dict) -> None:
        current = services.active_ensemble(round_)
        if current and not o["force"] and all((v.artifact_path / "zoo.json").is_file() for v in current.ordered_members()):
            self.stdout.write(f"{task.slug}: ensemble already deployed for round {round_.number}")
            return
        own = data.labeled_items(task, ["demo"], "train")
        labelled = own if o["demo_items_only"] else demo.training_set(task, o["max_examples"])
        recipe = o["recipe"]
        if recipe == "auto":  # a few dozen rows and nothing else: every layer is cheap and measured better
            only_own = len(labelled.inputs) <= demo.DEMO_REPEAT * len(own.inputs)
            recipe, labelled = ("full", own) if only_own else ("cached-top", labelled)
        if not labelled.inputs:
            self.stdout.write(f"{task.slug}: no training data, skipped (run `manage.py load_demo` first)")
            return
        began = time.perf_counter()
        seeds = list(range(o["members"]))
        head = task.kind_impl.head
        given = {"encoder": o["encoder"], "max_steps": o["max_steps"], "epochs": o["epochs"]}
        pinned = {} if task.kind_impl.recipe_defaults else DEMO_RECIPE.get(head, {})  # a kind's own settings win
        overrides = {**pinned, **{k: v for k, v in given.items() if v is not None}}
        spec = ensemble_training.default_recipe(task, **overrides)
        self.stdout.write(f"{task.slug}: training {len(seeds)} members on {len(labelled.inputs)} examples "
                          f"({labelled.name}), recipe {recipe}")
        with tqdm_echo(desc=task.slug) if not o["no_progress"] else _null() as echo:
            versions = ensemble_training.train_ensemble(
                task, labelled, seeds, names=[f"{task.slug}-r{round_.number}-s{s}" for s in seeds], recipe=recipe,
                spec=spec, full_overrides=self._full(head, o),
                echo=echo, reuse=True)
        services.deploy_ensemble(round_, versions)
        self.stdout.write(f"{task.slug}: deployed {', '.join(v.name for v in versions)} for round {round_.number} "
                          f"after {time.perf_counter() - began:.0f} s")
        for v in versions:
            self.stdout.write(f"  {v.name}: {v.progress_message or v.status}")
        ensemble_deployed.send(sender=self.__class__, round=round_, versions=versions)  # leaderboard; pending verdicts


    @staticmethod
    def _full(head: str, o: dict) -> dict:
        """The earlier demo recipe: every layer, the head's small-data epochs, lr 1e-4, batch 8."""
        full = {"epochs": o["epochs"] or get_head(head).small_data_epochs, "lr": 1e-4, "batch_size": 8}
        return {**full, **({"encoder": o["encoder"]} if o["encoder"] else {})}


class _null:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False
