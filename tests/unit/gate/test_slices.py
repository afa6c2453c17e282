"""Per-slice gates on hand-made per-query rows: a slice that collapses fails the gate while the
mean stays within tolerance; tolerances in YAML and override form; baselines carry slice fields."""

from __future__ import annotations

import copy

import pytest

from rageval.app.main import CONF_DIR, GROUPS
from rageval.app.preflight import prepare_overrides
from rageval.errors import ConfigError
from rageval.gate.baseline import read_baseline, sidecar_path, write_baseline
from rageval.gate.compare import INCONCLUSIVE, PASS, REGRESSED, compare
from rageval.gate.slices import normalize_slice_override, parse_tolerances

METRICS = ["recall@5", "mrr@5"]


def report(adversarial_recall: float, n_ticket=90, n_adv=10, golden="g1"):
    """``n_ticket`` ticket queries at recall 1.0, ``n_adv`` adversarial ones: the first
    ``adversarial_recall * n_adv`` at 1.0, the rest 0.0."""
    rows = []
    for i in range(n_ticket + n_adv):
        adv = i >= n_ticket
        r = 0.0 if adv and (i - n_ticket) >= adversarial_recall * n_adv else 1.0
        rows.append(
            {
                "id": f"q{i:03d}",
                "query": f"question {i}",
                "source": "adversarial" if adv else "ticket",
                "tags": ["multi-hop"] if adv else [],
                "recall@5": r,
                "mrr@5": r,
                "hit_rate@5": r,
                "first_relevant_rank": 1 if r else 0,
            }
        )
    n = len(rows)
    means = {m: sum(r[m] for r in rows) / n for m in ("recall@5", "mrr@5", "hit_rate@5")}
    return {"metrics": means, "per_query": rows, "digests": {"golden": golden}, "k": 5}


BASE = report(1.0)
CUR = report(0.5)  # 5 of 10 adversarial queries lost: the mean drops 0.05, the slice 0.5
# (the means are gated at 0.15: their 95% interval, [-0.124, -0.007], is shown within it)


def test_a_slice_only_regression_fails_the_gate_while_the_mean_passes():
    plain = compare(BASE, CUR, METRICS, tolerance=0.15)
    assert plain.status == PASS  # the mean hides it
    cmp = compare(BASE, CUR, METRICS, tolerance=0.15, slices={"source=adversarial": 0.05})
    assert all(r.verdict == "ok" for r in cmp.rows)
    assert cmp.status == REGRESSED and cmp.exit_code == 1
    rows = {(r.slice, r.metric): r for r in cmp.slices}
    r = rows[("source=adversarial", "recall@5")]
    assert (r.n, r.baseline, r.current, r.verdict) == (10, 1.0, 0.5, "regressed")
    assert (r.wins, r.ties, r.losses) == (0, 5, 5)
    assert "recall@5 on source=adversarial" in cmp.console().splitlines()[-1]
    md = cmp.markdown()
    assert md.splitlines()[2] == (
        "**Regressed:** recall@5 on source=adversarial, mrr@5 on source=adversarial (every "
        "headline metric is within tolerance; the slice table below shows the slices that are not)"
    )
    assert "| source=adversarial | 10 | recall@5 | 1.0000 | 0.5000 | -0.5000 |" in md
    assert "Holm-adjusted over the 2 slice tests" in md
    assert cmp.to_dict()["slices"][0]["slice"] == "source=adversarial"


def test_slice_p_values_are_holm_adjusted_over_the_slice_family_only():
    one = compare(BASE, CUR, ["recall@5"], slices={"source=adversarial": {"recall@5": 0.05}})
    two = compare(
        BASE,
        CUR,
        ["recall@5"],
        slices={"source=adversarial": {"recall@5": 0.05}, "tags=multi-hop": {"recall@5": 0.05}},
    )
    p1 = one.slices[0].p_value
    assert [r.p_value for r in two.slices] == pytest.approx([min(1, 2 * p1)] * 2)
    assert one.rows[0].p_value == two.rows[0].p_value  # the headline family is untouched


def test_a_slice_within_tolerance_passes_and_an_unconfirmed_drop_is_inconclusive():
    # 5 of 10 queries lost: the slice's 95% interval, [-0.877, -0.123], lies within 0.9, not 0.6
    assert compare(BASE, CUR, METRICS, 0.15, slices={"source=adversarial": 0.9}).status == PASS
    assert compare(BASE, CUR, METRICS, 0.15, slices={"source=adversarial": 0.6}).status == (
        INCONCLUSIVE
    )
    small = report(0.9, n_adv=10)  # one query lost: beyond 0.05, but no test can confirm it
    cmp = compare(BASE, small, METRICS, slices={"source=adversarial": {"recall@5": 0.05}})
    (row,) = cmp.slices
    assert row.verdict == INCONCLUSIVE and cmp.status == INCONCLUSIVE and cmp.exit_code == 0
    assert row.low < row.delta < -0.05 < 0 < row.high and row.detects > 0.05
    assert row.line().startswith("recall@5 -0.100 [") and row.line().endswith(
        "on source=adversarial (10 queries)"
    )
    assert "INCONCLUSIVE: recall@5 -0.100" in cmp.console()
    strict = compare(
        BASE, small, METRICS, slices={"source=adversarial": 0.05}, on_inconclusive="fail"
    )
    assert strict.status == INCONCLUSIVE and strict.exit_code == 1


def test_a_bare_field_gates_each_of_its_slices_with_pooling():
    cmp = compare(BASE, CUR, ["recall@5"], slices={"source": 0.05}, min_slice_size=20)
    assert [(r.slice, r.pooled, r.verdict) for r in cmp.slices] == [
        ("source=ticket", None, "ok"),
        ("source=other", ["adversarial"], "regressed"),
    ]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"source=synthetic": 0.05}, "slices of source: adversarial, ticket"),
        ({"source=adversarial": {"recal@5": 0.05}}, "unknown metric 'recal'"),
        ({"source=adversarial": -1}, r"number >= 0"),
        ({"difficulty": 0.05}, "no query of the golden set has"),
        ({"adversarial": 0.05}, "no query of the golden set has"),
    ],
)
def test_bad_slice_tolerances_are_one_clear_error(spec, message):
    with pytest.raises(ConfigError, match=message):
        compare(BASE, CUR, METRICS, slices=spec)


def test_tolerances_take_both_spellings_and_a_number_means_every_gate_metric():
    got = parse_tolerances({"source=a": {"recall_at_5": 0.1}, "tags=x": 0.2}, METRICS)
    assert got == [("source=a", {"recall@5": 0.1}), ("tags=x", {"recall@5": 0.2, "mrr@5": 0.2})]


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        (
            "gate.slices.source=adversarial.recall@5=0.05",
            {"source=adversarial": {"recall_at_5": 0.05}},
        ),
        ("gate.slices.source=adversarial=0.05", {"source=adversarial": 0.05}),
        ("gate.slices.source=0.1", {"source": 0.1}),
        (
            "gate.slices.difficulty=v1.2 (hard).ndcg_at_10=0.1",
            {"difficulty=v1.2 (hard)": {"ndcg_at_10": 0.1}},
        ),
    ],
)
def test_slice_overrides_compose_into_gate_slices(override, expected):
    from hydra import compose, initialize_config_dir

    from rageval.app.config import register_resolvers

    out = prepare_overrides([override, "gate.slices.tags=x.mrr@5=0.2"], CONF_DIR, GROUPS)
    register_resolvers()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose("config", overrides=out)
    assert dict(cfg.gate.slices) == {**expected, "tags=x": {"mrr_at_5": 0.2}}


def test_a_slice_override_without_a_number_is_refused():
    with pytest.raises(ConfigError, match="a slice tolerance is a number"):
        normalize_slice_override("gate.slices.source=adversarial.recall@5=high")


def test_the_baseline_carries_slice_fields_and_old_csvs_still_gate(tmp_path):
    rep = copy.deepcopy(BASE)
    rep["per_query"][0]["meta"] = {"difficulty": "hard", "hops": [1, 2]}
    path = write_baseline(rep, tmp_path / "baseline.json", {"run_id": "r1"})
    back = read_baseline(path).report
    assert back["per_query"][0]["meta"] == {"difficulty": "hard", "hops": [1, 2]}
    assert back["per_query"][-1]["source"] == "adversarial"
    assert back["per_query"][-1]["tags"] == ["multi-hop"] and back["per_query"][1]["tags"] == []
    assert compare(back, CUR, METRICS, slices={"tags=multi-hop": 0.05}).status == REGRESSED
    # a baseline written before slice columns: membership comes from the current run's rows
    old = copy.deepcopy(BASE)
    for r in old["per_query"]:
        del r["source"], r["tags"]
    old_path = write_baseline(old, tmp_path / "old.json", {"run_id": "r0"})
    assert "source" not in sidecar_path(old_path).read_text().splitlines()[0]
    cmp = compare(read_baseline(old_path).report, CUR, METRICS, slices={"source=adversarial": 0.05})
    assert cmp.status == REGRESSED


def test_a_named_slice_overrides_its_fields_tolerance_and_is_tested_once():
    cmp = compare(
        BASE,
        CUR,
        ["recall@5"],
        tolerance=0.15,
        slices={"source=adversarial": 0.9, "source": 0.05},
        min_slice_size=5,
    )
    assert [(r.slice, r.tolerance) for r in cmp.slices] == [
        ("source=ticket", 0.05),
        ("source=adversarial", 0.9),
    ]
    assert cmp.status == PASS


def test_the_gate_page_shows_the_gated_slices_above_the_queries():
    from dataclasses import asdict

    from rageval.report.html import render_diff

    cmp = compare(BASE, CUR, METRICS, 0.15, slices={"source=adversarial": {"recall@5": 0.05}})
    page = render_diff(BASE, {}, CUR, {}, slice_rows=[asdict(r) for r in cmp.slices])
    table = page.split("<h2>Slices</h2>")[1].split("<h2>Queries</h2>")[0]
    assert "Holm-adjusted over the 1 slice tests" in table
    cells = [c.rsplit(">", 1)[1] for c in table.split("</td>")[:-1]]
    assert cells[:6] == ["source=adversarial", "10", "recall@5", "1.000", "0.500", "-0.500"]
    assert cells[-1] == "regressed"
    assert "<h2>Slices</h2>" not in render_diff(BASE, {}, CUR, {})


def test_a_bad_gate_slices_is_refused_before_the_rerun_from_the_baselines_rows():
    from rageval.gate.slices import check_spec

    rows = BASE["per_query"]
    check_spec({"source=adversarial": {"recall@5": 0.05}}, METRICS, rows)
    with pytest.raises(ConfigError, match="slices of source: adversarial, ticket"):
        check_spec({"source=adversrial": 0.05}, METRICS, rows)
    with pytest.raises(ConfigError, match="unknown metric"):
        check_spec({"source=adversarial": {"recal@5": 0.05}}, METRICS, [])
    old = [{k: v for k, v in r.items() if k not in ("source", "tags")} for r in rows]
    check_spec({"source=adversrial": 0.05}, METRICS, old)  # no fields yet: checked after the run


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        # what a misspelt value, field, metric after a slice or unmeasured metric composes into
        (
            {"source=adversrial": 0.05},
            r"gate.slices: no query is in slice 'source=adversrial' "
            r"\(did you mean source=adversarial\?\); the slices of source: adversarial, ticket",
        ),
        (
            {"sorce": 0.05},
            r"field 'sorce', which no query of the golden set has \(did you mean source\?\).*"
            r"a field the queries have: source, tags",
        ),
        ({"sorce=ticket": 0.05}, r"no query has the field 'sorce' \(did you mean source\?\)"),
        (
            {"source=adversarial.recal@5": 0.05},
            r"'recal@5' after the slice 'source=adversarial' is no metric "
            r"\(did you mean recall@5[ ?]",
        ),
        (
            {"source=adversarial": {"mrr_at_50": 0.05}},
            r"per-query rows have no 'mrr@50' \(did you mean mrr@5\?\)",
        ),
    ],
)
def test_a_misspelt_gate_slice_says_what_it_meant(spec, message):
    from rageval.gate.slices import check_spec

    with pytest.raises(ConfigError, match=message):
        check_spec(spec, METRICS, BASE["per_query"])


def test_a_misspelt_metric_after_a_slice_reaches_the_check_as_part_of_the_slice_name():
    out = normalize_slice_override("gate.slices.source=adversarial.recal@5=0.05")
    assert out == "++gate.slices={source\\=adversarial.recal@5:0.05}"


def test_every_documented_spelling_fails_the_slice_only_regression():
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from rageval.app.config import register_resolvers

    register_resolvers()
    spellings = [
        ("gate.slices.source=adversarial.recall@5=0.05", "source=adversarial"),
        ("gate.slices.source=adversarial.recall_at_5=0.05", "source=adversarial"),
        ("gate.slices.source=adversarial=0.05", "source=adversarial"),
        ("gate.slices.source=0.05", "source=adversarial"),
        ("gate.slices.tags=multi-hop=0.05", "tags=multi-hop"),
    ]
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        for override, gated in spellings:
            cfg = compose("config", overrides=prepare_overrides([override], CONF_DIR, GROUPS))
            spec = OmegaConf.to_container(cfg.gate.slices)
            cmp = compare(BASE, CUR, METRICS, tolerance=0.15, slices=spec)
            assert all(r.verdict == "ok" for r in cmp.rows) and cmp.exit_code == 1, override
            failed = {(r.slice, r.metric) for r in cmp.slices if r.verdict == "regressed"}
            assert (gated, "recall@5") in failed, override
            assert cmp.console().splitlines()[-1].startswith("FAIL: recall@5 on " + gated)
