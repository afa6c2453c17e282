"""The gate and label sets: a baseline and a run measured with different labels (another label set,
or other judgements counted) are never compared; old baselines read as ``gold`` with none;
``rageval check`` refuses another label set before it re-runs anything (exit 2, the fix named)."""

import copy
import json
from pathlib import Path

import pytest

from rageval.errors import InputError
from rageval.gate.compare import LABELS_CHANGED, PASS, compare
from rageval.gate.labels import label_info, label_set_change
from rageval.inputs.judgements import judgements_digest

METRICS = ["recall@5", "mrr@5"]
NONE = judgements_digest([])


def report(label_set=None, counted=0, digest=None):
    rows = [
        {"id": f"q{i}", "query": f"question {i}", "recall@5": 1.0, "mrr@5": 1.0, "hit_rate@5": 1.0}
        for i in range(8)
    ]
    rep = {
        "metrics": {"recall@5": 1.0, "mrr@5": 1.0, "hit_rate@5": 1.0},
        "per_query": rows,
        "digests": {"golden": "g1"},
        "k": 5,
    }
    if label_set is not None:
        rep["label_set"] = label_set
        rep["digests"]["judgements"] = digest or NONE
        rep["judgements"] = {"counted": counted, "digest": digest or NONE}
    return rep


def test_an_old_baseline_reads_as_gold_without_judgements_and_passes():
    old = report()  # written before judgements existed
    assert label_info(old) == {"label_set": "gold", "judgements": 0, "digest": NONE}
    cmp = compare(old, report("gold"), METRICS)
    assert cmp.status == PASS
    shown = cmp.console()
    assert "Labels: gold, 0 judgements (digest " in shown
    assert "the same for the baseline and this run" in shown
    assert cmp.to_dict()["labels"]["baseline"]["label_set"] == "gold"


def test_another_label_set_is_refused_with_the_fix():
    cmp = compare(report("gold"), report("all", 3, "d" * 64), METRICS)
    assert cmp.status == LABELS_CHANGED and cmp.exit_code == 2
    text = cmp.console()
    assert "label set 'gold' (baseline) != 'all' (now)" in text
    assert "rageval check labels=gold" in text and text.rstrip().endswith(
        "measure with the baseline's labels or re-promote a baseline"
    )
    assert "Labels differ from the baseline's" in cmp.markdown()
    assert "gold, 0 judgements" in cmp.markdown() and "all, 3 judgements" in cmp.markdown()
    # the metrics were still compared, for the reader; the verdict is not a pass
    assert [r.metric for r in cmp.rows] == METRICS


def test_other_judgements_under_the_same_label_set_are_not_compared_either():
    base = report("gold", 2, "a" * 64)
    cmp = compare(base, report("gold", 5, "b" * 64), METRICS)
    assert cmp.status == LABELS_CHANGED
    assert "judgements counted changed since the baseline (2 -> 5" in cmp.console()
    assert compare(base, copy.deepcopy(base), METRICS).status == PASS


def test_check_refuses_another_label_set_before_running(tmp_path, monkeypatch):
    from rageval.app import check
    from rageval.cli.main import main

    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps({**report("gold"), "config": {}, "choices": {}}))

    def never(*a, **kw):  # the re-run must not start
        raise AssertionError("run_job was called")

    monkeypatch.setattr("rageval.app.main.run_job", never)
    with pytest.raises(InputError) as err:
        check.run_check(baseline, ["labels=all"])
    msg = str(err.value)
    assert msg.startswith(f"{baseline}: the baseline was measured with labels=gold")
    assert "labels=all" in msg and "rageval promote RUN --force" in msg
    assert main(["check", "--baseline", str(baseline), "labels=all"]) == 2


def test_check_refuses_a_baseline_measured_with_all_when_run_with_gold(tmp_path):
    from rageval.app.check import refuse_other_labels
    from rageval.gate.baseline import Baseline

    baseline = Baseline(report("all"), Path("b.json"))
    refuse_other_labels(baseline, "all")  # same set: nothing to say
    with pytest.raises(InputError, match="labels=all, this check would measure with labels=gold"):
        refuse_other_labels(baseline, "gold")


def test_one_label_set_rule_said_at_promote_check_and_compare():
    # the same pair of label sets is refused at every moment, each naming its own fix
    for moment in ("promote", "check", "compare"):
        assert label_set_change("gold", "gold", moment) is None
        said = label_set_change("gold", "all", moment)
        assert said and "never compares across label sets" in said
    assert "--force" in label_set_change("gold", "all", "promote")
    assert "drop the labels override" in label_set_change("gold", "all", "check")
    assert "(rageval check labels=gold)" in label_set_change("gold", "all", "compare")
    # compare's verdict says the rule's words
    cmp = compare(report("gold"), report("all"), METRICS)
    assert label_set_change("gold", "all", "compare") in cmp.console()
