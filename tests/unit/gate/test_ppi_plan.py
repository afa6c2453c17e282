"""``rageval plan RUN --width W`` on a labels=ppi report: the widths of the interval the run used
(Student-t by default, z when the run says so), or ``--interval``'s."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rageval.cli.main import main
from rageval.gate.ppi_plan import ppi_plan
from rageval.scoring.ppi import Moments, human_queries_needed, ppi_width

N, SAMPLE = 300, 30


def write_report(tmp_path, interval=None):
    rng = np.random.default_rng(1)
    llm = rng.uniform(0.2, 0.9, N)
    human = np.clip(llm[:SAMPLE] + rng.normal(0.05, 0.1, SAMPLE), 0, 1)
    rows = []
    for i, v in enumerate(llm):
        row = {"id": f"q{i:03d}", "ndcg@5": float(v), "recall@5": float(v)}
        if i < SAMPLE:
            row |= {"human:ndcg@5": float(human[i]), "human:recall@5": float(human[i])}
        rows.append(row)
    ppi = {"metrics": {"ndcg@5": {}, "recall@5": {}}, "sample": {"size": SAMPLE}}
    if interval:
        ppi["interval"] = interval
    report = {
        "metrics": {"ndcg@5": float(llm.mean()), "recall@5": float(llm.mean())},
        "per_query": rows,
        "digests": {"golden": "g"},
        "k": 5,
        "ppi": ppi,
    }
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report))
    return path, Moments.of(human, llm[:SAMPLE], llm)


@pytest.mark.parametrize(
    ("recorded", "asked", "used"), [(None, None, "t"), ("z", None, "z"), ("z", "t", "t")]
)
def test_the_plan_uses_the_runs_interval_unless_asked(tmp_path, recorded, asked, used):
    path, moments = write_report(tmp_path, recorded)
    plan = ppi_plan(path, ["ndcg@5"], 0.05, interval=asked)
    row = plan.rows[0]
    assert plan.interval == used
    assert row.width_now == pytest.approx(ppi_width(moments, SAMPLE, N, 0.05, used), rel=1e-12)
    assert (row.needed, row.needed_human_only) == human_queries_needed(moments, 0.05, N, 0.05, used)
    assert ("Student-t" if used == "t" else "normal (z)") in plan.text()


def test_t_needs_more_graded_queries_than_z_for_the_same_width(tmp_path):
    path, _ = write_report(tmp_path)
    t, z = (ppi_plan(path, ["ndcg@5"], 0.08, interval=i).rows[0] for i in ("t", "z"))
    assert t.width_now > z.width_now
    assert t.needed_human_only > z.needed_human_only and t.needed >= z.needed


def test_the_command_line_option(tmp_path, capsys):
    path, _ = write_report(tmp_path)
    assert main(["plan", str(path), "--width", "0.05", "--interval", "z", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["interval"] == "z"
    assert main(["plan", str(path), "--width", "0.05", "--interval", "normal"]) == 2
    assert "one of t, z" in capsys.readouterr().err
    assert main(["plan", str(path), "--interval", "z"]) == 2
    assert "add --width" in capsys.readouterr().err
