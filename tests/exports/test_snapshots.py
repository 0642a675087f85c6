from __future__ import annotations

import hashlib
import io
import json
import zipfile

import pytest
from django.core.exceptions import ValidationError

from annotation.models import Example
from exports import services
from exports.bundle import sha256_file
from tests.exports.conftest import make_example, vote

pytestmark = pytest.mark.django_db


def members(snapshot) -> dict[str, bytes]:
    with zipfile.ZipFile(services.snapshot_path(snapshot)) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def test_a_published_snapshot_keeps_its_checksum_after_later_validations(mixed_round, open_round, owner_user):
    v1, created = services.publish_snapshot(open_round, owner_user)
    assert created and v1.version == 1
    on_disk = sha256_file(services.snapshot_path(v1))
    assert on_disk == v1.sha256
    for example in mixed_round["unverified"]:
        vote(example, "correct", "correct")
        Example.objects.filter(pk=example.pk).update(consensus="verified", validated_label="positive")
    v2, created = services.publish_snapshot(open_round, owner_user)
    assert created and v2.version == 2 and v2.sha256 != v1.sha256
    v1.refresh_from_db()
    assert v1.sha256 == on_disk == sha256_file(services.snapshot_path(v1))


def test_publishing_unchanged_data_makes_no_new_version(mixed_round, open_round, owner_user):
    v1, _ = services.publish_snapshot(open_round, owner_user)
    again, created = services.publish_snapshot(open_round, owner_user)
    assert not created and again.pk == v1.pk


def test_a_published_snapshot_cannot_be_edited(mixed_round, open_round, owner_user):
    snapshot, _ = services.publish_snapshot(open_round, owner_user)
    snapshot.sha256 = "0" * 64
    with pytest.raises(ValidationError, match="immutable"):
        snapshot.save()
    snapshot.refresh_from_db()
    snapshot.audience = "public"
    snapshot.save()


def test_the_bundle_holds_files_card_and_a_manifest_that_matches(mixed_round, open_round, owner_user):
    snapshot, _ = services.publish_snapshot(open_round, owner_user, include_excluded=True)
    files = members(snapshot)
    assert {
        "README.md",
        "SHA256SUMS",
        "manifest.json",
        "data/train.jsonl",
        "data/test.parquet",
        "data/excluded.csv",
    } <= set(files)
    for line in files["SHA256SUMS"].decode().splitlines():
        digest, name = line.split("  ")
        assert hashlib.sha256(files[name]).hexdigest() == digest
    excluded = [json.loads(line) for line in files["data/excluded.jsonl"].splitlines()]
    assert {row["exclusion"] for row in excluded} == {"rejected", "flagged", "flagged_by_writer"}
    assert snapshot.counts["excluded"] == 4


def test_the_dataset_card_reports_counts_rates_agreement_models_and_licence(mixed_round, open_round, owner_user):
    task = open_round.task
    task.config = {**task.config, "dataset": {"licence": "CC BY-SA 4.0", "intended_use": "Robustness research."}}
    task.save()
    snapshot, _ = services.publish_snapshot(open_round, owner_user)
    card = members(snapshot)["README.md"].decode()
    figures = Example.objects.filter(round=open_round).figures()
    assert f"| train | {snapshot.counts['train']} |" in card
    assert "| positive |" in card
    assert f"**MER** (model error rate, fooled / collected): {figures['mer']}" in card
    assert f"**vMER** (verified fooled / collected): {figures['vmer']}" in card
    assert "Fleiss' κ =" in card and "over 6 example(s)" in card
    assert "r1-a (version 1)" in card and "CC BY-SA 4.0" in card and "Robustness research." in card
    assert "@example.org" not in card and "task-owner" not in card


def test_a_snapshot_member_streams_from_the_zip(mixed_round, open_round, owner_user):
    snapshot, _ = services.publish_snapshot(open_round, owner_user)
    download = services.snapshot_file(snapshot, "train", "jsonl")
    body = b"".join(download.chunks)
    assert len(body.splitlines()) == snapshot.counts["train"]


def test_a_new_example_in_a_later_version_does_not_touch_the_first(mixed_round, open_round, owner_user):
    v1, _ = services.publish_snapshot(open_round, owner_user)
    before = members(v1)
    make_example(open_round, fooled=False)
    v2, created = services.publish_snapshot(open_round, owner_user)
    assert created and members(v1) == before
    assert v2.counts["train"] == v1.counts["train"] + 1
    assert io.BytesIO(members(v2)["data/train.jsonl"]).read().count(b"\n") == v2.counts["train"]
