"""A removed config key (rageval.config_schema.REMOVED_KEYS) stops a run with one line naming the
key to write instead, set on the command line or in a file of the project's config folder."""

from __future__ import annotations

import pytest

from rageval.app.removed_keys import refuse_removed_keys
from rageval.cli.main import main
from rageval.errors import ConfigError


@pytest.mark.parametrize("arg", ["mlflow.compare_metric=ndcg@5", "+mlflow.compare_metric=ndcg@5"])
def test_a_removed_key_on_the_command_line_names_its_replacement(arg, capsys):
    assert main([arg, "mlflow.enabled=false"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        f"rageval: error: override {arg!r}: mlflow.compare_metric was removed; write "
        "sweep.compare_metric=ndcg@5 instead"
    )


def test_a_removed_key_in_a_project_config_file_names_its_replacement(tmp_path, monkeypatch):
    (tmp_path / "rageval.yaml").write_text("config_dir: conf\n")
    (tmp_path / "conf").mkdir()
    config = tmp_path / "conf" / "config.yaml"
    config.write_text("defaults:\n  - rageval\n  - _self_\nmlflow:\n  compare_metric: mrr@5\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RAGEVAL_PROJECT", raising=False)
    with pytest.raises(ConfigError) as err:
        refuse_removed_keys([])
    assert str(err.value) == (
        f"{config}: mlflow.compare_metric was removed; write sweep.compare_metric=mrr@5 instead"
    )
    config.write_text("defaults:\n  - rageval\n  - _self_\nsweep:\n  compare_metric: mrr@5\n")
    refuse_removed_keys(["sweep.compare_metric=mrr@5"])  # the replacement passes


def test_a_check_refuses_a_removed_key_too():
    from rageval.app.replay import compose_from_baseline

    with pytest.raises(ConfigError, match=r"mlflow.compare_metric was removed; write sweep\."):
        compose_from_baseline(None, ["mlflow.compare_metric=ndcg@5"])
