"""rageval.tracking.log.log_inputs: two sweep jobs that log the same golden set at the same moment
race on MLflow's dataset insert; the loser links its run to the winner's dataset."""

from __future__ import annotations

import pytest
from mlflow.exceptions import MlflowException

from rageval.tracking.log import log_inputs

# what an MLflow server answered a Ray sweep job whose twin had just inserted the same dataset
RACE = (
    "BAD_REQUEST: (sqlite3.IntegrityError) UNIQUE constraint failed: datasets.experiment_id, "
    "datasets.name, datasets.digest"
)


class Client:
    def __init__(self, errors):
        self.errors = list(errors)
        self.calls = 0
        self.linked = []

    def log_inputs(self, run_id, datasets):
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        self.linked.append((run_id, datasets))


def test_a_dataset_created_by_a_concurrent_job_is_linked_on_the_next_try(monkeypatch):
    monkeypatch.setattr("time.sleep", lambda s: None)
    client = Client([MlflowException(RACE)])
    log_inputs(client, "r1", ["golden"])
    assert client.calls == 2 and client.linked == [("r1", ["golden"])]


@pytest.mark.parametrize(
    "message",
    [
        'duplicate key value violates unique constraint "datasets_pk"',  # PostgreSQL
        "(pymysql.err.IntegrityError) (1062, \"Duplicate entry '1-golden' for key 'PRIMARY'\")",
    ],
)
def test_other_stores_unique_key_errors_are_the_same_race(monkeypatch, message):
    monkeypatch.setattr("time.sleep", lambda s: None)
    client = Client([MlflowException(message)])
    log_inputs(client, "r1", ["golden"])
    assert client.linked


def test_any_other_error_is_raised_at_once():
    client = Client([MlflowException("RESOURCE_DOES_NOT_EXIST: run r1 not found")])
    with pytest.raises(MlflowException, match="not found"):
        log_inputs(client, "r1", ["golden"])
    assert client.calls == 1


def test_a_race_that_keeps_failing_is_raised_after_the_last_try(monkeypatch):
    monkeypatch.setattr("time.sleep", lambda s: None)
    client = Client([MlflowException(RACE)] * 4)
    with pytest.raises(MlflowException, match="UNIQUE"):
        log_inputs(client, "r1", ["golden"], attempts=4)
    assert client.calls == 4 and not client.linked
