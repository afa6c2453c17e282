"""``rageval judge``: judge a pool (``rageval pool``) by people or by a calibrated LLM.

- ``rageval judge pool.jsonl --review review.html``: a self-contained page to grade the pooled
  passages in a browser; its Save button downloads the grades as JSONL.
- ``rageval judge --import FILE [--judge human:NAME]``: validate those grades and append them to
  the judgements (deduplicated, the judge recorded); prints what was added and skipped.
- ``rageval judge pool.jsonl --llm --model M --base-url URL``: calibrate the LLM on passages whose
  answer is known (Cohen's kappa, confusion matrix, precision and recall), then grade the pool;
  below ``--min-kappa`` its judgements go to ``judgements.rejected.jsonl``, not the judgements.
- ``rageval judge pool.jsonl --review review.html --sample N --model M``: draw a random human sample
  for ``labels=ppi`` (rageval.authoring.sample), record it, and put only its queries on the page.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Any

from rageval.cli.golden_generate import OPTIONS, add_endpoint_arguments
from rageval.errors import ConfigError, RagevalError


class CalibrationFailed(RagevalError):
    """The LLM judge did not agree enough with the known labels (or was not measured): its
    judgements are not used. Exit code 1, like a failed gate."""

    exit_code = 1


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add the options of ``judge`` to ``p``."""
    p.add_argument("pool", nargs="?", help="a pool file written by `rageval pool`")
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--review", metavar="HTML", help="write the review page for people")
    mode.add_argument(
        "--import",
        dest="import_file",
        metavar="FILE",
        help="append the grades a review page saved (JSONL) to the judgements",
    )
    mode.add_argument("--llm", action="store_true", help="grade the pool with a calibrated LLM")
    p.add_argument(
        "--judge", help="who judged the imported grades: human:NAME (fills records without one)"
    )
    w = p.add_argument_group("where (default: what the pool file names)")
    w.add_argument("--golden", help="the golden set")
    w.add_argument("--corpus", help="the corpus")
    w.add_argument(
        "--judgements",
        help="the judgements file (default: the pool's, else judgements.jsonl beside the golden "
        "set)",
    )
    w.add_argument("--title", default="rageval review", help="the review page's title")
    add_sample_arguments(p)
    p.add_argument(
        "--config",
        help="YAML file with endpoint settings: the option names below in snake_case",
    )
    add_endpoint_arguments(p)
    c = p.add_argument_group("calibration (--llm)")
    c.add_argument(
        "--min-kappa",
        type=float,
        default=0.6,
        help="accept the LLM's judgements from this Cohen's kappa (binary) (default 0.6)",
    )
    c.add_argument(
        "--calibration-size",
        type=int,
        default=40,
        help="passages with a known answer to grade first, half relevant (default 40)",
    )
    c.add_argument(
        "--min-calibration",
        type=int,
        default=20,
        help="fewest graded calibration passages for a verdict (default 20)",
    )
    c.add_argument(
        "--complete",
        default="tag:complete",
        help="queries whose evidence is complete, so their other pooled passages are known not "
        "relevant: all, none, tag:NAME or ids,... (default tag:complete)",
    )
    c.add_argument("--seed", type=int, default=0, help="draws the calibration sample")
    c.add_argument(
        "--malformed-retries",
        type=int,
        default=1,
        help="ask again this often when an answer is not the JSON asked for (default 1)",
    )
    c.add_argument(
        "--report",
        help="calibration report path without suffix (.json and .md are written; default "
        "beside the judgements: judgements.calibration.<model>)",
    )
    c.add_argument("--no-progress", action="store_true")


def add_sample_arguments(p: argparse.ArgumentParser) -> None:
    """The options of the random human sample (``--review --sample N --model M``)."""
    s = p.add_argument_group("a random human sample for labels=ppi (with --review and --model)")
    s.add_argument(
        "--sample",
        type=int,
        metavar="N",
        help="draw N of the golden set's queries at random (--seed), record them beside the "
        "judgements with the judge --model, and put only them on the review page",
    )
    s.add_argument(
        "--strata",
        default="auto",
        help="stratify the sample by this slice field (auto: source when the queries have "
        "several; none: no strata)",
    )


def locate(args: argparse.Namespace, pool: list[dict[str, Any]] | None):
    """Where the command works: the options, else the pool file's ``source``, else the golden-set
    defaults (rageval.authoring.judging.locate)."""
    from rageval.authoring.judging import locate as locate_files
    from rageval.authoring.judging import pool_source
    from rageval.cli.paths import golden_and_corpus

    source = pool_source(pool)
    golden, corpus = golden_and_corpus(
        args.golden or source.get("golden"), args.corpus or source.get("corpus")
    )
    return locate_files(
        golden,
        corpus,
        source,
        args.judgements,
        golden_given=bool(args.golden),
        corpus_given=bool(args.corpus),
    )


def handle(args: argparse.Namespace) -> int:
    """Write the review page, import grades, or grade the pool with an LLM."""
    if args.import_file:
        return import_grades(args)
    if not args.pool:
        raise ConfigError("name the pool file: rageval judge pool.jsonl --review review.html")
    from rageval.authoring.pool import read_pool

    pool = read_pool(args.pool)
    if args.review:
        return write_review(args, pool)
    return judge_with_llm(args, pool)


def write_review(args: argparse.Namespace, pool: list[dict[str, Any]]) -> int:
    from rageval.authoring.review import import_command, render_review
    from rageval.formats.atomic import atomic_write_text

    out = Path(args.review)
    out.parent.mkdir(parents=True, exist_ok=True)
    if getattr(args, "sample", None) is not None:
        pool = sampled_pool(args, pool)
    atomic_write_text(out, render_review(pool, args.title, str(args.pool)))
    n = sum(len(q["passages"]) for q in pool)
    print(
        f"review page: {out} ({n} passages for {len(pool)} queries). Open it in a browser, "
        "enter your name, grade, click Save, then: "
        + import_command(str(args.pool), "judgements-<name>-<time>.jsonl")
    )
    return 0


def sampled_pool(args: argparse.Namespace, pool: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``--sample N``: draw and record the human sample, and keep the pool to its queries."""
    from rageval.authoring.judging import load_inputs
    from rageval.authoring.sample import draw_for_pool
    from rageval.inputs.judgements import now

    where = locate(args, pool)
    golden = load_inputs(where)[1]
    sample, written = draw_for_pool(
        pool, golden, where.judgements, args.sample, args.seed, args.model, args.strata, now()
    )
    how = f", stratified by {sample.strata}" if sample.strata else ""
    print(
        f"human sample: {len(sample.queries)} of {sample.population} queries (seed "
        f"{sample.seed}{how}), judge {sample.judge}: {sample.path} "
        f"({'written' if written else 'unchanged'}). Grade every passage of these queries; let "
        f"{sample.judge} judge the whole pool (rageval judge POOL --llm --model ...); then run "
        "with labels=ppi"
    )
    chosen = set(sample.queries)
    return [q for q in pool if q["query_id"] in chosen]


def import_grades(args: argparse.Namespace) -> int:
    """Append the grades a review page saved to the judgements, and say what was added and
    skipped (rageval.authoring.judging.import_grades)."""
    from rageval.authoring.judging import import_grades as append_grades

    pool = None
    if args.pool:
        from rageval.authoring.pool import read_pool

        pool = read_pool(args.pool)
    done = append_grades(locate(args, pool), Path(args.import_file), args.judge)
    print(done.summary())
    return 0


def _endpoint(args: argparse.Namespace):
    from rageval.authoring.chat import endpoint_settings, read_settings_file

    given = {key: getattr(args, dest, None) for dest, key in OPTIONS.items()}
    cfg, budget = endpoint_settings(given, args.config)
    from_file = read_settings_file(args.config) if args.config else {}
    if args.temperature is None and "temperature" not in from_file:
        cfg = dataclasses.replace(cfg, temperature=0.0)  # a judge should answer the same twice
    return cfg, budget


def judge_with_llm(args: argparse.Namespace, pool: list[dict[str, Any]]) -> int:
    from rageval.authoring.judging import load_inputs
    from rageval.authoring.llm_judging import LlmJudgeSettings, calibrate, grade_pool

    settings = LlmJudgeSettings(
        pool=str(args.pool),
        min_kappa=args.min_kappa,
        calibration_size=args.calibration_size,
        min_calibration=args.min_calibration,
        complete=args.complete,
        seed=args.seed,
        malformed_retries=args.malformed_retries,
        report=args.report,
        progress=not args.no_progress,
    )
    settings.check()
    where = locate(args, pool)
    cfg, budget = _endpoint(args)
    by_id, golden = load_inputs(where)
    cal = calibrate(settings, pool, by_id, golden, where.judgements, cfg, budget, where.golden)
    _print_calibration(cal)
    if cal.graded.error is not None:
        raise cal.graded.error
    if cal.incomplete:
        _spent(budget)
        raise CalibrationFailed(
            f"{cal.report['why']}; no LLM judgement was written. Raise --max-requests/--max-tokens "
            f"or fix the endpoint, and run again{_malformed_hint(cal.malformed())}"
        )
    done = grade_pool(cal, settings, pool, by_id, golden, where.judgements)
    _print_grading(done, cal, budget)
    if done.graded.error is not None:
        err = done.graded.error
        raise type(err)(f"{err}; the {done.added} judgements made before it are saved")
    if not done.accepted:
        raise CalibrationFailed(
            f"the LLM judge's labels are not used: {cal.report['why']} (see {cal.prefix}.md); try "
            "another model or prompt settings, or judge the pool by people (--review)"
        )
    return 0


def _print_calibration(cal) -> None:
    print(_calibration_line(cal.report))
    print(f"  calibration report: {cal.prefix}.json, {cal.prefix}.md")
    for why, n in cal.graded.skipped.items():
        print(f"  skipped {n:>4}  {why}")
    if cal.graded.malformed_example:
        print(f"  e.g. {cal.graded.malformed_example}")


def _malformed_hint(malformed: int) -> str:
    if not malformed:
        return ""
    return (
        f"; {malformed} of its answers stayed malformed (not the JSON object the prompt "
        "asks for, e.g. above): a model that does not follow the format wastes any budget, "
        "try another model"
    )


def _print_grading(done, cal, budget) -> None:
    second, judge = done.graded, cal.judge
    print(
        f"graded {len(second.grades)} of {done.items} pooled passages "
        f"({_grade_counts(second.grades)}); "
        + (
            f"added {done.added} judgements by {judge} to {done.target}"
            if done.accepted
            else f"NOT used: {done.added} judgements by {judge} written to {done.target} for "
            "inspection"
        )
    )
    for why, n in second.skipped.items():
        print(f"  skipped {n:>4}  {why}")
    if second.malformed_example or cal.graded.malformed_example:
        print(f"  e.g. {second.malformed_example or cal.graded.malformed_example}")
    _spent(budget)
    if second.stopped:
        print(
            f"warning: stopped early: {second.stopped}; {done.items - len(second.grades)} "
            "passages left ungraded (run again to grade them: judged ones are skipped by the "
            "next pool)",
            file=sys.stderr,
        )


def _grade_counts(grades) -> str:
    from collections import Counter

    c = Counter(g.grade for g in grades)
    return ", ".join(f"{c[g]} x {g}" for g in sorted(c)) or "none"


def _calibration_line(rep: dict[str, Any]) -> str:
    def f(x):
        return "n/a" if x is None else f"{x:.3f}"

    rel, non = rep["confusion"]["known_relevant"], rep["confusion"]["known_not_relevant"]
    return (
        f"calibration of {rep['judge']} on {rep['sample']['graded']} passages with a known "
        f"answer: kappa {f(rep['kappa'])} (binary, relevant = grade >= 1), precision "
        f"{f(rep['precision'])}, recall {f(rep['recall'])}\n"
        f"  confusion: known relevant {rel['judged_relevant']} judged relevant, "
        f"{rel['judged_not_relevant']} not; known not relevant {non['judged_relevant']} judged "
        f"relevant, {non['judged_not_relevant']} not -> {rep['verdict'].upper()}: {rep['why']}"
    )


def _spent(budget) -> None:
    print(
        f"  spent {budget.requests} of {budget.max_requests} requests, "
        f"{budget.tokens:,} of {budget.max_tokens:,} tokens"
    )
