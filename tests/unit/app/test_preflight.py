"""Override mistakes are one line with a "did you mean"; tolerances take either metric spelling."""

from __future__ import annotations

import subprocess
import sys

import pytest

from rageval.app.main import CONF_DIR, GROUPS
from rageval.app.preflight import group_options, normalize_tolerances, prepare_overrides
from rageval.errors import ConfigError


@pytest.mark.parametrize("spelling", ["recall@5", "recall_at_5", "+recall@5"])
def test_tolerance_overrides_take_both_spellings(spelling):
    text = f"gate.tolerances.{spelling.lstrip('+')}=0.05"
    assert normalize_tolerances([text, "chunk=512"]) == [
        "++gate.tolerances.recall_at_5=0.05",
        "chunk=512",
    ]


def test_a_tolerance_for_no_metric_lists_the_valid_names():
    with pytest.raises(ConfigError, match="valid names: precision, recall"):
        normalize_tolerances(["gate.tolerances.recal=0.05"])


def test_internal_options_are_not_choices():
    assert "base" not in group_options(CONF_DIR, "search")
    assert "vector" in group_options(CONF_DIR, "search")


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("chunks=256", "unknown config key 'chunks'; did you mean chunk"),
        ("search=vectr", "search has no option 'vectr'; did you mean vector?"),
        ("search.rrf=30", "did you mean search.rrf_k"),
        ("chunk=256,5l2", None),  # a sweep value is checked by the run itself (int check)
        ("chunk=range(512,128)", "the sweep is empty"),  # not Hydra's "requires --multirun"
    ],
)
def test_prepare_overrides_explains_mistakes(override, message):
    if message is None:
        assert prepare_overrides([override], CONF_DIR, GROUPS) == [override]
        return
    with pytest.raises(ConfigError, match=message) as err:
        prepare_overrides([override], CONF_DIR, GROUPS)
    assert "\n" not in str(err.value) and "base" not in str(err.value)


def test_tolerance_override_composes():
    out = prepare_overrides(["gate.tolerances.recall@5=0.05"], CONF_DIR, GROUPS)
    assert out == ["++gate.tolerances.recall_at_5=0.05"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [(["chunks=256"], "did you mean chunk"), (["search=vectr"], "did you mean vector")],
)
def test_the_app_exits_2_with_one_line(tmp_path, argv, message):
    proc = subprocess.run(
        [sys.executable, "-m", "rageval", *argv],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert (
        len(lines) == 1 and lines[0].startswith("rageval: error: override ") and message in lines[0]
    )
    assert "base" not in lines[0]


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("k=abc", r"bad override \(k=abc\): .*could not be converted to Integer"),
        ("chunks=32", "unknown config key 'chunks'; did you mean chunk"),
        ("search=vectr", "did you mean vector"),
    ],
)
def test_the_gate_rerun_explains_override_mistakes_in_one_line(override, message):
    from rageval.app.replay import compose_from_baseline
    from rageval.gate.baseline import Baseline

    with pytest.raises(ConfigError, match=message) as err:
        compose_from_baseline(
            Baseline({"choices": {"search": "vector"}, "config": {"chunk": 64}}), [override]
        )
    assert "\n" not in str(err.value)


def test_the_gate_rerun_replays_the_baseline_config_under_the_overrides():
    from rageval.app.replay import compose_from_baseline
    from rageval.gate.baseline import Baseline

    baseline = {
        "choices": {"search": "hybrid"},
        "config": {
            "chunk": 64,
            "cache_dir": "/elsewhere",
            "search": {"rrf_k": 10},
            "mlflow": {"enabled": True},
        },
    }
    cfg = compose_from_baseline(
        Baseline(baseline), ["chunk_overlap=8", "gate.tolerances.ndcg@5=0.1"]
    )
    assert (cfg.chunk, cfg.chunk_overlap, cfg.search.mode, cfg.search.rrf_k) == (
        64,
        8,
        "hybrid",
        10,
    )
    assert cfg.cache_dir != "/elsewhere" and cfg.mlflow.enabled is False
    assert dict(cfg.gate.tolerances) == {"ndcg_at_5": 0.1}
    assert (
        compose_from_baseline(Baseline(baseline), ["search=bm25"]).search.rrf_k == 60
    )  # a new group: its own values


def test_the_gate_rerun_composes_once_without_overrides_and_twice_with(monkeypatch):
    """``rageval check`` with no override has nothing to check before it composes the baseline's
    config: one composition (the preflight's would only repeat conf/); with overrides, the
    preflight composes them first."""
    import hydra

    from rageval.app.replay import compose_from_baseline
    from rageval.gate.baseline import Baseline

    calls = []
    real = hydra.compose
    monkeypatch.setattr(hydra, "compose", lambda *a, **k: calls.append(a) or real(*a, **k))
    baseline = Baseline({"choices": {"search": "vector"}, "config": {"chunk": 64}})
    assert compose_from_baseline(baseline, []).chunk == 64
    assert len(calls) == 1
    calls.clear()
    assert compose_from_baseline(baseline, ["chunk=128"]).chunk == 128
    assert len(calls) == 2


def test_options_from_a_teams_own_config_folder_are_choices(tmp_path):
    """A team adds its own backend in a folder of its own (hydra.searchpath or --config-dir)."""
    (tmp_path / "backend").mkdir()
    (tmp_path / "backend" / "inhouse.yaml").write_text("_target_: team.search.Retriever\n")
    search = f"hydra.searchpath=[file://{tmp_path}]"
    assert prepare_overrides([search, "backend=inhouse"], CONF_DIR, GROUPS)[-1] == "backend=inhouse"
    assert "inhouse" in group_options([CONF_DIR, tmp_path], "backend")
    with pytest.raises(ConfigError, match="did you mean inhouse"):
        prepare_overrides([search, "backend=inhose"], CONF_DIR, GROUPS)
    with pytest.raises(ConfigError, match="has no option 'inhouse'"):
        prepare_overrides(["backend=inhouse"], CONF_DIR, GROUPS)  # without the folder: unknown


def test_one_preflight_composes_once_for_a_sweep_and_answers_every_caller(monkeypatch):
    import rageval.app.config as config
    from rageval.app.preflight import preflight

    calls = []
    real = config.compose
    monkeypatch.setattr(
        config, "compose", lambda lines, *a, **k: calls.append(lines) or real(lines)
    )
    assert preflight(["-m", "chunk=32,64", "search=vector,bm25"]) == [
        "-m",
        "chunk=32,64",
        "search=vector,bm25",
    ]
    assert calls == []  # the other values were checked against the first job's config
    with pytest.raises(ConfigError, match=r"bad override \(chunk=abc\)"):
        preflight(["-m", "chunk=32,abc"])
    with pytest.raises(ConfigError, match="did you mean chunk"):
        preflight(["chunks=3"])
    with pytest.raises(ConfigError, match="re-runs one configuration"):
        preflight(["chunk=32,64"], one_config=True)
    assert preflight(["chunk=32"], one_config=True) == ["chunk=32"]


def test_a_bad_study_command_line_is_a_config_error_before_hydra_starts():
    from rageval.app.preflight import check_study

    with pytest.raises(ConfigError, match="a study tunes on split=tune"):
        check_study(["-m", "hydra/sweeper=optuna_bm25", "split=holdout"], CONF_DIR)
    with pytest.raises(ConfigError, match="hydra.sweeper.n_trials must be an integer >= 1"):
        check_study(["-m", "hydra/sweeper=optuna", "hydra.sweeper.n_trials=0"], CONF_DIR)
    check_study(["-m", "hydra/sweeper=optuna_bm25", "chunk=choice(64,128)"], CONF_DIR)
    check_study(["-m", "chunk=1,2"], CONF_DIR)  # no study: nothing to check


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("hydra.sweeper.n_trial=3", r"hydra.sweeper has no key 'n_trial'; did you mean n_trials\?"),
        ("hydra.sweeper.sampler.n_startup=3", r"did you mean n_startup_trials\?; .* write \+hydra"),
        ("+hydra.sweeper.sampler.multivariat=true", r"has no argument .*did you mean multivariate"),
    ],
)
def test_a_mistyped_sweeper_setting_is_one_line_with_the_closest_key(override, message):
    from rageval.app.preflight import check_study

    with pytest.raises(ConfigError, match=message) as err:
        check_study(["-m", "hydra/sweeper=optuna_bm25", override], CONF_DIR)
    assert "\n" not in str(err.value)
