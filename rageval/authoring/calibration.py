"""Calibrating an LLM judge against labels people wrote, before any of its judgements is used.

The sample is passages whose answer is known:

- relevant: the golden set's evidence quotes, each shown inside a passage of the pool's typical
  length around it (as a retriever would return it), documents the golden set labels relevant
  (document-level labels, as BEIR qrels: the whole document, when it is at most twice that
  length, since a label on a longer one does not say which part answers), and passages people
  judged 1-3;
- not relevant: passages people judged 0, documents labelled 0 (same length rule), and pooled
  passages of queries whose evidence is complete (``--complete``: a passage that holds none of
  the evidence then answers nothing; one that holds part of a quote or a relevant document is
  left out).

Agreement is measured on the binary question (relevant = grade >= 1, rageval's rule): Cohen's
kappa, the confusion matrix, and the judge's precision and recall against the known labels.
Below ``min_kappa`` the judge's labels are rejected.
"""

from __future__ import annotations

import math
import random
import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rageval.authoring.llm_grader import Grade, Item
from rageval.authoring.pool import select_ids
from rageval.errors import ConfigError
from rageval.inputs.judgements import Judgement
from rageval.report.table import Column, Table
from rageval.scoring.relevance import pick_occurrence, quote_occurrences
from rageval.types import Document, GoldenQuery

MIN_PER_CLASS = 2  # a sample with fewer known positives or negatives cannot measure agreement


def complete_queries(queries: Sequence[GoldenQuery], selector: str) -> set[str]:
    """Query ids whose evidence is complete: ``all``, ``none``, ``tag:NAME``, ``source:NAME`` or
    ids separated by commas."""
    return select_ids(((q.id, q.tags, q.source) for q in queries), selector, "--complete")


def evidence_window(doc: Document, start: int, end: int, width: int) -> tuple[int, str]:
    """(start, text) of a passage of about ``width`` characters (at least the quote) around
    characters [start, end) of ``doc``, cut at whitespace."""
    text = doc.text
    extra = max(0, width - (end - start))
    lo, hi = max(0, start - extra // 2), min(len(text), end + extra - extra // 2)
    while lo > 0 and not text[lo - 1].isspace() and lo < start:
        lo -= 1
    while hi < len(text) and not text[hi].isspace() and hi > end:
        hi += 1
    return lo, text[lo:hi]


def candidates(
    pool: Sequence[Mapping[str, Any]],
    queries: Sequence[GoldenQuery],
    docs: Mapping[str, Document],
    human: Sequence[Judgement],
    complete: set[str],
) -> tuple[list[Item], list[Item]]:
    """(known relevant, known not relevant) items; see the module docstring."""
    widths = [len(p["text"]) for q in pool for p in q["passages"]]
    width = int(statistics.median(widths)) if widths else 1000
    text_of = {q.id: q.query for q in queries}
    pos: list[Item] = []
    neg: list[Item] = []
    cache: dict = {}
    spans: dict[str, list[tuple[str, int, int]]] = {}  # query id -> its evidence, located
    for q in queries:
        for i, ev in enumerate(q.evidence):
            doc = docs.get(ev.doc)
            matches = quote_occurrences(doc.text, ev.quote, cache) if doc else []
            found, _ = pick_occurrence(matches, ev, f"evidence[{i}]") if matches else (None, "")
            if found is None:
                continue
            spans.setdefault(q.id, []).append((ev.doc, found[0], found[1]))
            if ev.grade < 1:
                continue
            start, text = evidence_window(doc, found[0], found[1], width)
            pos.append(Item(q.id, q.query, ev.doc, start, text, ev.grade, "gold evidence"))
        for doc_id, grade in q.relevant_docs.items():
            doc = docs.get(doc_id)
            if doc is None:
                continue
            if grade >= 1:  # a relevant document holds no known negative, whatever its length
                spans.setdefault(q.id, []).append((doc_id, 0, len(doc.text)))
            if doc.text.strip() and len(doc.text) <= 2 * width:
                item = Item(q.id, q.query, doc_id, 0, doc.text, grade, "gold document label")
                (pos if grade >= 1 else neg).append(item)
    for j in human:
        if j.query_id not in text_of:
            continue
        item = Item(
            j.query_id, text_of[j.query_id], j.doc, j.span[0], j.quote, j.grade, "human judgement"
        )
        (pos if item.gold >= 1 else neg).append(item)
    for q in pool:
        if q["query_id"] in complete:
            for p in q["passages"]:
                end = p.get("end", p["start"] + len(p["text"]))
                if any(  # a passage holding any of the evidence is not a known negative
                    d == p["doc"] and s < end and p["start"] < e
                    for d, s, e in spans.get(q["query_id"], ())
                ):
                    continue
                neg.append(
                    Item(
                        q["query_id"],
                        q["query"],
                        p["doc"],
                        p["start"],
                        p["text"],
                        0,
                        "retrieved, query's evidence complete",
                    )
                )
    return _unique(pos), _unique(neg)


def _unique(items: list[Item]) -> list[Item]:
    return list({i.key: i for i in items}.values())


def sample(pos: list[Item], neg: list[Item], size: int, seed: int) -> list[Item]:
    """Up to ``size`` items, half known relevant and half not (the other side fills in when one
    is short), drawn with ``seed``; refused when either side has fewer than MIN_PER_CLASS."""
    if len(pos) < MIN_PER_CLASS or len(neg) < MIN_PER_CLASS:
        raise ConfigError(
            f"calibration needs at least {MIN_PER_CLASS} passages known relevant and "
            f"{MIN_PER_CLASS} known not relevant; found {len(pos)} and {len(neg)}. Known "
            "relevant: the golden set's evidence quotes and passages people graded 1-3; known "
            "not relevant: passages people graded 0 (rageval judge --review) and pooled "
            "passages of queries whose evidence is complete (--complete all | tag:NAME | ids)"
        )
    rng = random.Random(seed)
    half = size // 2
    n_pos = min(len(pos), max(half, size - len(neg)))
    n_neg = min(len(neg), size - n_pos)
    picked = rng.sample(pos, n_pos) + rng.sample(neg, n_neg)
    rng.shuffle(picked)
    return picked


@dataclass
class Agreement:
    """Binary agreement (relevant = grade >= 1) of a judge with the known labels."""

    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0
    by_origin: dict[str, Counter] = field(default_factory=dict)

    @classmethod
    def of(cls, grades: Sequence[Grade]) -> Agreement:
        a = cls()
        for g in grades:
            known, said = (g.item.gold or 0) >= 1, g.grade >= 1
            cell = ("tp" if said else "fn") if known else ("fp" if said else "tn")
            setattr(a, cell, getattr(a, cell) + 1)
            a.by_origin.setdefault(g.item.origin, Counter())[cell] += 1
        return a

    @property
    def n(self) -> int:
        return self.tp + self.fp + self.fn + self.tn

    @property
    def kappa(self) -> float:
        """Cohen's kappa: (p_o - p_e) / (1 - p_e); NaN when p_e = 1 (one class only)."""
        n = self.n
        if not n:
            return math.nan
        p_o = (self.tp + self.tn) / n
        p_e = (
            (self.tp + self.fp) * (self.tp + self.fn) + (self.tn + self.fn) * (self.tn + self.fp)
        ) / n**2
        return math.nan if p_e >= 1 else (p_o - p_e) / (1 - p_e)

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else math.nan

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else math.nan

    @property
    def accuracy(self) -> float:
        return (self.tp + self.tn) / self.n if self.n else math.nan


def _num(x: float) -> float | None:
    return None if math.isnan(x) else round(x, 4)


def verdict(
    agreement: Agreement, min_kappa: float, min_answered: int, stopped: str | None
) -> tuple[str, str]:
    """("accepted" | "rejected" | "incomplete", why)."""
    if stopped:
        return "incomplete", f"calibration stopped before it finished: {stopped}"
    if agreement.n < min_answered:
        return "incomplete", (
            f"only {agreement.n} calibration passages were graded, fewer than the "
            f"{min_answered} required (--min-calibration): give more known answers (grade "
            "pooled passages on the review page, mark complete queries with --complete) or "
            "raise --calibration-size"
        )
    k = agreement.kappa
    if math.isnan(k):
        return "rejected", "kappa is undefined: the judge (and the sample) used one class only"
    if k < min_kappa:
        return "rejected", f"kappa {k:.3f} is below --min-kappa {min_kappa:g}"
    return "accepted", f"kappa {k:.3f} >= --min-kappa {min_kappa:g}"


def report(
    grades: Sequence[Grade],
    sampled: Sequence[Item],
    meta: Mapping[str, Any],
    min_kappa: float,
    min_answered: int,
    stopped: str | None,
    skipped: Mapping[str, int],
) -> dict[str, Any]:
    """The calibration report (report.json-like dict): agreement, verdict and every item."""
    a = Agreement.of(grades)
    state, why = verdict(a, min_kappa, min_answered, stopped)
    return {
        **meta,
        "verdict": state,
        "why": why,
        "min_kappa": min_kappa,
        "relevant_if": "grade >= 1 (binary agreement)",
        "sample": {
            "size": len(sampled),
            "graded": a.n,
            "skipped": dict(skipped),
            "by_origin": dict(Counter(i.origin for i in sampled)),
        },
        "kappa": _num(a.kappa),
        "precision": _num(a.precision),
        "recall": _num(a.recall),
        "accuracy": _num(a.accuracy),
        "confusion": {
            "known_relevant": {"judged_relevant": a.tp, "judged_not_relevant": a.fn},
            "known_not_relevant": {"judged_relevant": a.fp, "judged_not_relevant": a.tn},
        },
        "by_origin": {k: dict(v) for k, v in sorted(a.by_origin.items())},
        "items": [
            {
                "query_id": g.item.query_id,
                "doc": g.item.doc,
                "start": g.item.start,
                "origin": g.item.origin,
                "known_grade": g.item.gold,
                "judge_grade": g.grade,
                "reason": g.reason,
            }
            for g in grades
        ],
    }


def markdown(r: Mapping[str, Any]) -> str:
    """The calibration report as markdown (for a pull request or a reviewer)."""

    def f(x):
        return "n/a" if x is None else f"{x:.3f}"

    c = r["confusion"]
    confusion = Table([Column(""), Column("judged relevant"), Column("judged not relevant")])
    for known in ("known_relevant", "known_not_relevant"):
        confusion.add_row(
            known.replace("_", " "), c[known]["judged_relevant"], c[known]["judged_not_relevant"]
        )
    lines = [
        f"# LLM judge calibration: {r.get('judge', '')}",
        "",
        f"**{r['verdict'].upper()}**: {r['why']}.",
        "",
        f"Sample: {r['sample']['size']} passages with a known answer ("
        + ", ".join(f"{n} {o}" for o, n in sorted(r["sample"]["by_origin"].items()))
        + f"); {r['sample']['graded']} graded"
        + "".join(f", {n} skipped ({why})" for why, n in r["sample"]["skipped"].items())
        + ".",
        "",
        "Agreement on relevant (grade >= 1) vs not relevant:",
        "",
        confusion.markdown().rstrip("\n"),
        "",
        f"- Cohen's kappa (binary): {f(r['kappa'])} (accepted from {r['min_kappa']:g})",
        f"- precision of the judge's 'relevant': {f(r['precision'])}",
        f"- recall of the known relevant passages: {f(r['recall'])}",
        f"- accuracy: {f(r['accuracy'])}",
        "",
        f"Prompt version {r.get('prompt_version', '')} (docs/judging.md); endpoint "
        f"{r.get('endpoint', '')}.",
        "",
    ]
    return "\n".join(lines)
