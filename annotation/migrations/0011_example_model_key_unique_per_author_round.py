from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0010_refingerprint_and_mark_repeats'),
    ]

    operations = [
        migrations.AddConstraint(
            model_name='example',
            constraint=models.UniqueConstraint(condition=models.Q(('key_shared', False), ('retracted', False), models.Q(('model_key', ''), _negated=True)), fields=('author', 'round', 'model_key'), name='example_model_key_unique_per_author_round'),
        ),
    ]
