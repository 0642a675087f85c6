# A choices-only change: LabeledItem.Split.HELD_OUT ("heldout"), the stable slice of imported train rows that is
# never trained on and that the retraining gate compares on (docs/rounds.md).

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('tasks', '0002_crowd_memberships_suspensions_guidelines'),
    ]

    operations = [
        migrations.AlterField(
            model_name='labeleditem',
            name='split',
            field=models.CharField(choices=[('train', 'Train / seed pool'), ('dev', 'Development'), ('test', 'Test'), ('heldout', 'Held out from the train data')], max_length=10),
        ),
    ]
