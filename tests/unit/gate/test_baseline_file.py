"""golden/baseline.json + its per-query CSV: round trip, small diffs, old format, tampering."""

from __future__ import annotations

import copy
import difflib
import json
import os

import pytest

from rageval.errors import InputError
from rageval.gate.baseline import read_baseline, sidecar_path, write_baseline


def report(n=50):
    rows = [
        {
            "id": f"q{i:03d}",
            "query": f'question, "{i}"',
            "n_relevant": 2,
            "first_relevant_rank": i % 4,
            "retrieved": ["c1", "c2"],
            "recall@5": (i % 4 > 0) / 3,
            "ndcg@5": i / 97,
            "evidence_iou@5": None,
        }
        for i in range(n)
    ]
    metrics = {
        "recall@5": sum(r["recall@5"] for r in rows) / n,
        "ndcg@5": 0.25,
        "evidence_iou@5": 0.1,
    }
    return {
        "schema": 1,
        "metrics": metrics,
        "ci": {"ndcg@5": [0.2, 0.3]},
        "per_query": rows,
        "digests": {"golden": "g" * 64},
        "k": 5,
        "ks": [5],
        "level": "chunk",
        "config": {"chunk": 256},
        "choices": {"search": "vector"},
        "overrides": [],
    }


def test_round_trip_keeps_every_gate_value_exactly(tmp_path):
    rep = report()
    path = write_baseline(rep, tmp_path / "baseline.json", {"run_id": "r1"})
    back = read_baseline(path).report
    assert sidecar_path(path).name == "baseline.per_query.csv"
    for key in ("metrics", "digests", "k", "config", "choices", "ci"):
        assert back[key] == rep[key]
    keep = (
        "id",
        "query",
        "n_relevant",
        "first_relevant_rank",
        "retrieved",  # the top k, so the gate's page shows real rank moves
        "recall@5",
        "ndcg@5",
        "evidence_iou@5",
    )
    assert back["per_query"] == [{k: r[k] for k in keep} for r in rep["per_query"]]
    assert ',"[""c1"",""c2""]",' in sidecar_path(path).read_text().splitlines()[1]
    assert back["promoted_from"] == {"run_id": "r1"} and back["n_queries"] == 50


def test_a_promote_that_changes_two_queries_diffs_in_a_few_lines(tmp_path):
    rep = report()
    path = write_baseline(rep, tmp_path / "baseline.json", {"run_id": "r1"})
    before = path.read_text().splitlines() + sidecar_path(path).read_text().splitlines()
    new = copy.deepcopy(rep)
    for i in (7, 31):
        new["per_query"][i]["ndcg@5"] = 0.999
    new["metrics"]["ndcg@5"] = 0.26
    write_baseline(new, path, {"run_id": "r1"})
    after = path.read_text().splitlines() + sidecar_path(path).read_text().splitlines()
    changed = [
        line
        for line in difflib.unified_diff(before, after, lineterm="", n=0)
        if line[:1] in "+-" and line[:3] not in ("+++", "---")
    ]
    assert len(changed) == 2 * 4  # two rows, the mean and the CSV digest: each - and +


def test_an_old_single_file_baseline_still_reads(tmp_path):
    rep = report(5)
    (tmp_path / "old.json").write_text(json.dumps(rep))
    assert read_baseline(tmp_path / "old.json").report["per_query"] == rep["per_query"]


def test_an_edited_or_missing_csv_is_refused(tmp_path):
    path = write_baseline(report(5), tmp_path / "baseline.json", {})
    csv_path = sidecar_path(path)
    csv_path.write_text(csv_path.read_text().replace("q001", "q999"))
    with pytest.raises(InputError, match="does not match baseline.json"):
        read_baseline(path)
    csv_path.unlink()
    with pytest.raises(InputError, match="per-query file is missing"):
        read_baseline(path)
    with pytest.raises(InputError, match="baseline not found; create one with `rageval promote"):
        read_baseline(tmp_path / "nope.json")


def test_the_committed_baseline_holds_no_machine_paths(tmp_path, monkeypatch):
    from rageval.gate.compare import config_diff

    project = tmp_path / "checkout"
    (project / "golden").mkdir(parents=True)
    monkeypatch.chdir(project)
    r = report()
    r["config"] = {
        "dataset": {"corpus": f"{project}/golden/corpus", "golden": "/data/shared/golden.jsonl"},
        "embedding": {"model": "m", "cache_dir": "/home/someone/.cache/rageval"},
        "cache_dir": "/home/someone/.cache/rageval",
        "extra": [f"{project}/data/a.txt", "en"],
        "chunk": 256,
    }
    r["judgements"] = {"file": f"{project}/golden/judgements.jsonl", "counted": 0}
    path = write_baseline(r, project / "golden" / "baseline.json", {"file": f"{project}/r.json"})
    text = path.read_text()
    assert str(project) not in text and "/home/someone" not in text
    saved = json.loads(text)
    assert saved["config"]["dataset"] == {
        "corpus": "corpus",  # relative to the baseline's folder, golden/
        "golden": "/data/shared/golden.jsonl",  # outside the project: kept, it is the user's data
    }
    assert saved["config"]["extra"] == ["../data/a.txt", "en"]
    assert saved["judgements"]["file"] == "judgements.jsonl"
    assert saved["promoted_from"]["file"] == "../r.json"
    # the checkout moves (a CI machine): the paths read back as the new checkout's
    moved = tmp_path / "ci" / "work"
    moved.parent.mkdir()
    project.rename(moved)
    monkeypatch.chdir(tmp_path)
    back = read_baseline(moved / "golden" / "baseline.json").report
    assert back["config"]["dataset"]["corpus"] == str(moved / "golden" / "corpus")
    assert back["config"]["extra"] == [str(moved / "data" / "a.txt"), "en"]
    assert back["judgements"]["file"] == str(moved / "golden" / "judgements.jsonl")
    here = copy.deepcopy(r["config"])
    here["dataset"]["corpus"] = str(moved / "golden" / "corpus")
    here["extra"][0] = str(moved / "data" / "a.txt")
    assert config_diff(back, {"config": here}) == []
    here["chunk"] = 512
    assert config_diff(back, {"config": here}) == ["chunk: 256 -> 512"]


class Killed(BaseException):
    """A kill -9 at one step of promote: nothing after it runs."""


@pytest.mark.parametrize("kill_at", range(3))
def test_a_promote_killed_at_any_step_leaves_the_old_pair_or_the_new(
    tmp_path, monkeypatch, kill_at
):
    import rageval.formats.atomic as atomic
    import rageval.gate.baseline as baseline_mod

    path = tmp_path / "golden" / "baseline.json"
    path.parent.mkdir()
    old, new = report(), report()
    new["metrics"] = {k: v / 2 for k, v in old["metrics"].items()}
    new["per_query"] = [{**r, "ndcg@5": 0.125} for r in old["per_query"]]
    write_baseline(old, path, {"file": "old"})
    calls = {"n": 0}
    real = os.replace

    def replace(src, dst):  # every rename of the promote: the CSV's, the summary's, the move
        if calls["n"] == kill_at:
            raise Killed
        calls["n"] += 1
        real(src, dst)

    monkeypatch.setattr(atomic.os, "replace", replace)
    monkeypatch.setattr(baseline_mod.os, "replace", replace)
    with pytest.raises(Killed):
        write_baseline(new, path, {"file": "new"})
    monkeypatch.undo()
    back = read_baseline(path).report  # never "does not match ... re-promote"
    assert back["metrics"] in (old["metrics"], new["metrics"])
    want = 0.125 if back["metrics"] == new["metrics"] else old["per_query"][0]["ndcg@5"]
    assert back["per_query"][0]["ndcg@5"] == want
    (path.parent / ".baseline.json.abc123.tmp").write_text("half")  # a killed atomic write
    write_baseline(new, path, {"file": "again"})
    assert sorted(p.name for p in path.parent.iterdir()) == [
        "baseline.json",
        "baseline.per_query.csv",
    ]
    assert read_baseline(path).report["metrics"] == new["metrics"]
