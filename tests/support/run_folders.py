"""Run folders as ``rageval.app.main.run_job`` writes them (report.json, run.trec, qrels.trec,
chunks.jsonl), made in-process from BM25 runs on the fixture corpus: no model, no Hydra, no
MLflow. For the pooling and judging tests."""

from __future__ import annotations

from pathlib import Path

from rageval.formats.trec import write_qrels, write_run
from rageval.inputs.chunking import ChunkingSpec, write_chunks_jsonl
from rageval.retrieval.local.lexical import BM25Retriever
from rageval.run.evaluation import evaluate
from rageval.run.spec import RunSpec


def make_run(
    mini: Path,
    model_dir: str,
    out: Path,
    chunk: int = 32,
    overlap: int = 0,
    golden: Path | None = None,
    corpus: Path | None = None,
    overrides: list[str] | None = None,
    retriever=None,
    judgements: str | None = None,
    labels: str = "gold",
    level: str = "auto",
) -> Path:
    """Evaluate the fixture golden set with BM25 (or ``retriever``) and write its run folder."""
    corpus = corpus or mini / "corpus"
    golden = golden or mini / "golden.jsonl"
    spec = RunSpec(
        str(corpus),
        str(golden),
        model_dir,
        ChunkingSpec(chunk, overlap),
        latency_sample=0,
        budgets=(),
        level=level,
        judgements=judgements,
        labels=labels,
        judged_warn_below=0.0,  # the fixture's runs are mostly unjudged, as pooling wants
    )
    config = {"dataset": {"corpus": str(corpus), "golden": str(golden)}, "chunk": chunk}
    if judgements:
        config["judgements"] = judgements
        config["labels"] = labels
    report = evaluate(spec, retriever or BM25Retriever(), None, config=config)
    report.overrides = list(overrides if overrides is not None else [f"chunk={chunk}"])
    out.mkdir(parents=True, exist_ok=True)
    write_run(out / "run.trec", [r["id"] for r in report.per_query], report.rankings)
    write_qrels(out / "qrels.trec", report.qrels)
    write_chunks_jsonl(out / "chunks.jsonl", report.chunks)
    report.write_json(out / "report.json")
    return out


def make_beir_run(root: Path, model_dir: str, out: Path, split: str = "test") -> Path:
    """A BM25 run folder over the BEIR dataset at ``root`` (document-level labels from its
    qrels), its config naming the folder as ``dataset=beir`` runs do."""
    import warnings

    from rageval.inputs.beir import beir_dataset

    with warnings.catch_warnings():  # the fixture's skipped queries, counted by the BEIR tests
        warnings.simplefilter("ignore")
        docs, golden = beir_dataset(root, split)
    spec = RunSpec(
        docs,
        golden,
        model_dir,
        ChunkingSpec(256, 0),
        latency_sample=0,
        budgets=(),
        judged_warn_below=0.0,
    )
    config = {"dataset": {"path": str(root), "split": split}, "chunk": 256}
    report = evaluate(spec, BM25Retriever(), None, config=config)
    report.overrides = ["dataset=beir"]
    out.mkdir(parents=True, exist_ok=True)
    write_run(out / "run.trec", [r["id"] for r in report.per_query], report.rankings)
    write_qrels(out / "qrels.trec", report.qrels)
    write_chunks_jsonl(out / "chunks.jsonl", report.chunks)
    report.write_json(out / "report.json")
    return out
