"""rageval from Python: ``rageval.evaluate`` and ``rageval.compare``.

::

    import rageval

    report = rageval.evaluate("bm25", "golden/retriever.jsonl")   # corpus/ beside the golden set
    print(report.to_markdown())
    report.save("outputs/bm25")                     # report.json, run.trec, qrels.trec, page...
    verdict = rageval.compare("golden/baseline.json", report)
    assert verdict.exit_code == 0, verdict.console()

The Hydra app (rageval.app.main.run_job), ``rageval check`` and the pytest helper run the same
functions underneath: :func:`rageval.run.evaluation.evaluate` for the measurement,
:func:`rageval.report.run_files.save_run_folder` for the folder and
:func:`rageval.gate.compare.compare` for the verdict.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

from rageval.config_schema import GateConfig, defaults, gate_metrics
from rageval.errors import ConfigError
from rageval.gate.compare import Comparison
from rageval.report.eval_report import EvalReport
from rageval.retrieval.base import Encoder, Retriever
from rageval.types import GoldenSet

LOCAL_MODES = ("vector", "bm25", "hybrid")
# the config schema's defaults (rageval.config_schema), which evaluate's and compare's take
RUN = defaults()


class Report(EvalReport):
    """What a run measured (:class:`~rageval.report.eval_report.EvalReport`): ``metrics`` and
    their 95% bootstrap ``ci``, ``per_query`` rows, ``to_dict()``, ``to_markdown()``, and
    ``save(folder)`` for the run folder the app writes."""

    def save(self, folder: str | Path) -> Path:
        """Write the run folder (report.json last); returns it."""
        from rageval.report.run_files import save_run_folder

        return save_run_folder(self, folder)


def evaluate(
    retriever: Retriever | str,
    golden: str | Path | GoldenSet,
    corpus: str | Path | None = None,
    *,
    k: int = RUN["k"],
    ks: Sequence[int] = tuple(RUN["ks"]),
    chunk: int = RUN["chunk"],
    chunk_overlap: int = RUN["chunk_overlap"],
    encoder: Encoder | None = None,
    model: str = "all-MiniLM-L6-v2",
    cache_dir: str | Path | None = None,
    level: str = RUN["level"],
    budgets: Sequence[int] = tuple(RUN["budgets"]),
    slices: Sequence[str] = tuple(RUN["slices"]),
    judgements: str | Path | None = RUN["judgements"],
    labels: str = RUN["labels"],
    retriever_options: Mapping[str, Any] | None = None,
    **options: Any,
) -> Report:
    """Evaluate ``retriever`` on ``golden``; returns its :class:`Report`.

    ``retriever``: a search function (``search(query, k)`` returning ids, ``(id, score)`` pairs
    or passages), a LangChain retriever (``invoke``), a LlamaIndex retriever (``retrieve``), an
    object with ``index(chunks, encoder)`` and ``search(queries, depth)``
    (rageval.retrieval.base.Retriever), or one of the local modes ``"vector"`` (FAISS),
    ``"bm25"`` (bm25s), ``"hybrid"``; ``retriever_options``: the adapters' settings
    (``doc_id_key``, ``id_key``, ``parallelism``, ``timeout``; docs/your-retriever.md).
    ``golden``: a golden-set JSONL file (or a loaded
    GoldenSet); ``corpus``: a folder of .md/.txt files or a JSONL file, default ``corpus/`` beside
    the golden set. ``encoder``: default the packaged all-MiniLM-L6-v2 (``model``), whose
    tokenizer also counts chunk tokens; embeddings are cached in ``cache_dir`` (default
    $RAGEVAL_CACHE_DIR, else ~/.cache/rageval), so nothing is embedded twice. ``options``: the
    rest of :class:`rageval.run.spec.RunSpec` (depth, split, max_document_mb, ...).
    """
    from rageval.app.config import default_cache_dir
    from rageval.embedding.base import tokenizer_dir_of
    from rageval.inputs.chunking import ChunkingSpec
    from rageval.run.evaluation import evaluate as run
    from rageval.run.spec import RunSpec

    cache = str(cache_dir or default_cache_dir())
    if encoder is None:
        from rageval.embedding import SentenceTransformerEncoder

        encoder = SentenceTransformerEncoder(model=model, cache_dir=cache)
    if isinstance(retriever, str):
        retriever = _local(retriever, cache)
    else:  # a search function, a LangChain or LlamaIndex retriever: the config path's adapters
        from rageval.retrieval.adapters import adapt

        retriever = adapt(retriever, **dict(retriever_options or {}))
    golden_path = golden if isinstance(golden, GoldenSet) else str(Path(golden).expanduser())
    if corpus is None:
        if isinstance(golden, GoldenSet):
            raise ConfigError("name the corpus: evaluate(retriever, golden_set, corpus=PATH)")
        corpus = Path(golden_path).parent / "corpus"
    spec = RunSpec(
        corpus=str(Path(corpus).expanduser()),
        golden=golden_path,
        tokenizer_dir=str(tokenizer_dir_of(encoder)),
        chunking=ChunkingSpec(chunk, chunk_overlap),
        k=k,
        ks=tuple(ks),
        level=level,
        budgets=tuple(budgets),
        slices=tuple(slices),
        judgements=str(judgements) if judgements else None,
        labels=labels,
        **options,
    )
    try:
        report = run(spec, retriever, encoder)
    finally:
        close = getattr(retriever, "close", None)
        if callable(close):
            close()
    return Report(**{f.name: getattr(report, f.name) for f in fields(report)})


def _local(mode: str, cache_dir: str) -> Retriever:
    from rageval.retrieval.local.factory import local_retriever

    if mode not in LOCAL_MODES:
        raise ConfigError(
            f"retriever {mode!r}: give a search function, a LangChain or LlamaIndex retriever, "
            f"an object with index() and search(), or one of {', '.join(LOCAL_MODES)}"
        )
    return local_retriever(mode=mode, cache_dir=cache_dir)


def compare(
    baseline: str | Path | Mapping[str, Any] | EvalReport,
    report: str | Path | Mapping[str, Any] | EvalReport,
    *,
    metrics: Sequence[str] | None = None,
    tolerance: float = GateConfig.tolerance,
    tolerances: Mapping[str, float] | None = None,
    alpha: float = GateConfig.alpha,
    resamples: int = GateConfig.resamples,
    on_inconclusive: str = GateConfig.on_inconclusive,
    on_embedding_drift: str = GateConfig.on_embedding_drift,
) -> Comparison:
    """The gate's verdict on ``report`` against ``baseline`` (a baseline.json, a report.json,
    their dicts, or a :class:`Report`): ``status`` ("pass", "regressed", "inconclusive", ...),
    ``rows`` (each with its interval, the drop it detects and its verdict),
    ``console()``, ``markdown()``, ``exit_code``. ``metrics``: default precision, recall,
    hit_rate, mrr, ndcg and map at the report's k."""
    from rageval.gate.compare import compare as gate

    base, current = _report_dict(baseline), _report_dict(report)
    k = int(current.get("k", RUN["k"]))
    return gate(
        base,
        current,
        metrics=list(metrics or gate_metrics(k)),
        tolerance=tolerance,
        tolerances=dict(tolerances or {}),
        alpha=alpha,
        resamples=resamples,
        on_inconclusive=on_inconclusive,
        on_embedding_drift=on_embedding_drift,
    )


def _report_dict(value) -> dict[str, Any]:
    from rageval.gate.baseline import load_report

    if isinstance(value, EvalReport):
        return value.to_dict()
    if isinstance(value, Mapping):
        return dict(value)
    return load_report(value)
