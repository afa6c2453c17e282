"""The labels a run's numbers counted, and the gate's rule on them: it never compares across
label sets (gold, human, llm judgements, ppi).

The rule is written once here (:func:`label_set_change`) and said at each moment it applies:
``rageval promote`` refuses a run judged with another label set than the baseline (unless
``--force``), ``rageval check`` refuses before it re-runs when its config would measure with
another one, and :func:`rageval.gate.compare.compare` makes it the verdict when two reports
differ (:func:`labels_problem`, which also names other judgements, another LLM judge or another
human sample).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

# where the rule is said: each moment names its own fix
Moment = Literal["promote", "check", "compare"]


def label_set(report: Mapping[str, Any]) -> str:
    """The label set a report's (or baseline's) metrics counted; one from before judgements
    existed counted the gold labels."""
    from rageval.inputs.judgements import DEFAULT_LABELS

    return str(report.get("label_set") or DEFAULT_LABELS)


def label_set_change(then: str, now: str, moment: Moment) -> str | None:
    """None when ``now`` is the label set ``then`` (the baseline's) was measured with; else why
    the gate will not compare them, with the fix that fits ``moment``: ``promote`` (``now`` is the
    run to promote), ``check`` (``now`` is the label set the re-run would measure with) or
    ``compare`` (``now`` is the run compared)."""
    if then == now:
        return None
    if moment == "promote":
        return (
            f"the run was judged with the {now!r} label set, the baseline with {then!r}; the gate "
            "never compares across label sets (pass --force to switch the baseline)"
        )
    if moment == "check":
        return (
            f"the baseline was measured with labels={then}, this check would measure with "
            f"labels={now}; the gate never compares across label sets: drop the labels "
            f"override (or pass labels={then}), or promote a run measured with labels={now} "
            "as the baseline (rageval promote RUN --force)"
        )
    return (
        f"label set {then!r} (baseline) != {now!r} (now): the gate never compares across label "
        f"sets; measure with labels={then} (rageval check labels={then}), or promote a run "
        f"measured with labels={now} as the baseline (rageval promote RUN --force)"
    )


def label_info(report: Mapping[str, Any]) -> dict[str, Any]:
    """A report's label set and the judgements it counted; a report or baseline from before
    judgements existed reads as ``gold`` with none."""
    from rageval.inputs.judgements import judgements_digest

    j = report.get("judgements") or {}
    info = {
        "label_set": label_set(report),
        "judgements": int(j.get("counted") or 0),
        "digest": str(
            (report.get("digests") or {}).get("judgements")
            or j.get("digest")
            or judgements_digest([])
        ),
    }
    sample = (report.get("ppi") or {}).get("sample") or {}
    if sample:  # labels=ppi: the LLM judge and the human sample are labels too
        info["judge"] = str(sample.get("judge"))
        info["sample"] = str(sample.get("digest"))
    return info


def labels_text(labels: Mapping[str, Mapping[str, Any]]) -> str:
    """``gold, 12 judgements (digest 1a2b3c4d5e6f)`` for both sides, or once, saying so, when they
    agree."""

    def one(x: Mapping[str, Any]) -> str:
        return f"{x['label_set']}, {x['judgements']} judgements (digest {x['digest'][:12]})"

    b, c = labels.get("baseline") or {}, labels.get("current") or {}
    if b == c:
        return one(b) + ", the same for the baseline and this run"
    return f"{one(b)} (baseline) vs {one(c)} (now)"


def labels_problem(baseline: Mapping[str, Any], current: Mapping[str, Any]) -> str | None:
    """Why two reports' numbers were measured against different labels, with the fix; None when
    they were not."""
    b, c = label_info(baseline), label_info(current)
    changed = label_set_change(b["label_set"], c["label_set"], "compare")
    if changed:
        return changed
    if b.get("judge") != c.get("judge"):
        return (
            f"the LLM judge changed ({b.get('judge')} (baseline) -> {c.get('judge')} (now)): "
            "labels=ppi measures with one fixed judge; promote a baseline measured with this one"
        )
    if b.get("sample") != c.get("sample"):
        return (
            "the human sample changed since the baseline (its queries, seed or strata; digest "
            f"{str(b.get('sample'))[:12]} -> {str(c.get('sample'))[:12]}): the people's labels "
            "cover other queries; promote a baseline measured with this sample"
        )
    if b["digest"] != c["digest"]:
        return (
            f"the {c['label_set']!r} judgements counted changed since the baseline "
            f"({b['judgements']} -> {c['judgements']}, digest {b['digest'][:12]} -> "
            f"{c['digest'][:12]}): the metrics count other labels; review the judgements and "
            "promote a baseline measured with them"
        )
    return None
