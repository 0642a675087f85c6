"""EnsembleScore and ModelMeasurement move from the rounds app to the model zoo, keeping their rows.

The tables exist (rounds 0001); the model zoo takes them over in Django's state only, then renames them to
its own names. rounds 0002 removes them from the rounds app's state (nothing in the database).
"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('modelzoo', '0001_initial'),
        ('rounds', '0001_initial'),
        ('tasks', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='ModelMeasurement',
                    fields=[
                        ('model_version', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True, related_name='measurement', serialize=False, to='modelzoo.modelversion')),
                        ('examples', models.PositiveIntegerField(default=0, help_text='examples predicted in the measurement')),
                        ('seconds', models.FloatField(default=0.0)),
                        ('throughput', models.FloatField(help_text='examples per second, one model on this machine')),
                        ('memory_mb', models.FloatField(help_text='weights held in memory (parameters and buffers), MB')),
                        ('measured_at', models.DateTimeField(auto_now=True)),
                    ],
                    options={'db_table': 'rounds_modelmeasurement'},
                ),
                migrations.CreateModel(
                    name='EnsembleScore',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('round_number', models.PositiveIntegerField(help_text='the round whose ensemble this is')),
                        ('dataset', models.CharField(max_length=300)),
                        ('members', models.JSONField(default=list, help_text='model version ids')),
                        ('size', models.PositiveIntegerField()),
                        ('metrics', models.JSONField(default=dict)),
                        ('updated_at', models.DateTimeField(auto_now=True)),
                        ('task', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='ensemble_scores', to='tasks.task')),
                    ],
                    options={
                        'db_table': 'rounds_ensemblescore',
                        'ordering': ['task', 'round_number', 'dataset'],
                        'constraints': [models.UniqueConstraint(fields=('task', 'round_number', 'dataset'), name='ensemble_score_unique')],
                    },
                ),
            ],
        ),
        migrations.AlterModelTable(name='modelmeasurement', table=None),
        migrations.AlterModelTable(name='ensemblescore', table=None),
    ]
