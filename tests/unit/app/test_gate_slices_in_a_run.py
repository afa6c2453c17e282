"""A run refuses a mistyped gate.slices before its index is built: promoted, its config is what
`rageval check` re-runs, so a slice no query is in would stop every later check."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from rageval.app.main import check_gate_slices
from rageval.errors import ConfigError
from rageval.run.spec import RunSpec
from rageval.types import GoldenSet


def _cfg(slices):
    return OmegaConf.create(
        {"gate": {"slices": slices, "metrics": ["recall@5", "ndcg@5"]}, "min_slice_size": 10}
    )


def test_a_run_checks_gate_slices_against_its_golden_set(mini):
    spec = RunSpec(corpus=str(mini / "corpus"), golden=str(mini / "golden.jsonl"), tokenizer_dir="")
    check_gate_slices(_cfg({}), spec)
    # small slices are still gated by name (pooled on their own), and a field's slices, too
    check_gate_slices(_cfg({"source=adversarial": {"recall_at_5": 0.05}, "tags": 0.1}), spec)
    with pytest.raises(ConfigError, match=r"'source=adverserial' \(did you mean source=adv"):
        check_gate_slices(_cfg({"source=adverserial": 0.05}), spec)
    with pytest.raises(ConfigError, match=r"'recal@5' after the slice 'source=ticket' is no"):
        check_gate_slices(_cfg({"source=ticket.recal@5": 0.05}), spec)
    with pytest.raises(ConfigError, match="a tolerance is a number"):
        check_gate_slices(_cfg({"source=ticket": "high"}), spec)


def test_the_golden_set_the_check_reads_is_the_one_the_run_scores(mini, monkeypatch):
    spec = RunSpec(corpus=str(mini / "corpus"), golden=str(mini / "golden.jsonl"), tokenizer_dir="")
    assert check_gate_slices(_cfg({}), spec) is spec  # no slices gated: nothing read
    checked = check_gate_slices(_cfg({"tags": 0.1}), spec)
    assert isinstance(checked.golden, GoldenSet) and checked.golden.path == spec.golden
    assert checked.corpus == spec.corpus

    def read_twice(path):
        raise AssertionError(f"{path} read again")

    monkeypatch.setattr("rageval.inputs.golden.load_golden", read_twice)
    monkeypatch.setattr("rageval.run.load.load_golden", read_twice)
    assert check_gate_slices(_cfg({"tags": 0.1}), checked).golden is checked.golden
