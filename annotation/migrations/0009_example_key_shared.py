from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0008_example_model_key'),
    ]

    operations = [
        migrations.AddField(
            model_name='example',
            name='key_shared',
            field=models.BooleanField(db_default=False, default=False, editable=False),
        ),
    ]
