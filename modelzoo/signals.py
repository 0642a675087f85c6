"""Signals of the model zoo, for the apps above it (which the zoo never imports).

`ensemble_deployed` is sent where a round gets its ensemble outside the round pipeline (the demo models,
`manage.py train_model --deploy`): the rounds app then scores the new in-loop models on the test sets, so
the leaderboard ranks them from the moment the round opens. The pipeline evaluates in its own step.
"""

from django.dispatch import Signal

# Sent with round=<tasks.models.Round>, versions=[ModelVersion, ...].
ensemble_deployed = Signal()
