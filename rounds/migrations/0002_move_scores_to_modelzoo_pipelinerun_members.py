"""EnsembleScore and ModelMeasurement now belong to the model zoo (modelzoo 0002 took over their tables, rows
included); they leave the rounds app's state here. A pipeline run keeps its ensemble's members itself."""

from django.db import migrations, models


def members_from_deploy_step(apps, schema_editor):
    """Runs started before this migration kept the members in their deploy step's result."""
    PipelineStep = apps.get_model('rounds', 'PipelineStep')
    PipelineRun = apps.get_model('rounds', 'PipelineRun')
    for step in PipelineStep.objects.filter(name='deploy').only('run_id', 'result').iterator():
        members = (step.result or {}).get('members')
        if members is not None:
            PipelineRun.objects.filter(pk=step.run_id).update(members=members)


class Migration(migrations.Migration):

    dependencies = [
        ('rounds', '0001_initial'),
        ('modelzoo', '0002_move_ensemblescore_modelmeasurement'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name='EnsembleScore'),
                migrations.DeleteModel(name='ModelMeasurement'),
            ],
        ),
        migrations.AddField(
            model_name='pipelinerun',
            name='members',
            field=models.JSONField(blank=True, default=None, help_text="model version ids of the next round's ensemble, fixed the first time a step needs them", null=True),
        ),
        migrations.RunPython(members_from_deploy_step, migrations.RunPython.noop),
    ]
