"""What a run cost: the ``costs`` block of report.json, one flat mapping of named numbers.

Every cost is lower-is-better and has one name (``latency_p95_ms``, ``tokens_per_query``,
``index_disk_bytes``...), spelled here only: report.json, MLflow (``costs/<name>``), the sweep
table's columns and ``sweep.pareto_cost`` use it. A cost a run could not measure (the index size
of a plug-in retriever, requests of a local backend) is left out rather than written as 0.

Stage times add up to the run's wall time except for the latency sample (single-query searches
after the batch search) and Hydra/MLflow overhead: ``embed_s`` is the time spent inside the
embedding encoder (documents and queries, cache reads included), so ``index_s`` and ``search_s``
exclude it, and ``search_s`` excludes ``rerank_s`` (the cross-encoder's time).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rageval.errors import ConfigError


@dataclass(frozen=True)
class CostSpec:
    """One cost: its name, a short column header, its unit and what it measures."""

    name: str
    header: str
    unit: str  # s | ms | bytes | count | tokens
    meaning: str

    def format(self, value: float) -> str:
        """The value for a table: seconds to 0.01, bytes as kB/MB/GB, counts as integers."""
        if self.unit == "bytes":
            return human_bytes(value)
        if self.unit == "count":
            return f"{int(round(value)):,}"
        if self.unit == "tokens":
            return f"{value:.1f}"
        if self.unit == "ms":
            return f"{value:.2f}" if value < 100 else f"{value:.0f}"
        return f"{value:.2f}"


_SPECS = (
    CostSpec("load_s", "load s", "s", "reading the golden set and the corpus"),
    CostSpec("chunk_s", "chunk s", "s", "chunking the corpus"),
    CostSpec("resolve_s", "resolve s", "s", "resolving labels to this chunking's qrels"),
    CostSpec("embed_s", "embed s", "s", "inside the embedding encoder (cache reads included)"),
    CostSpec("index_s", "index s", "s", "building the index, embedding excluded"),
    CostSpec("search_s", "search s", "s", "searching all queries, embedding and rerank excluded"),
    CostSpec("rerank_s", "rerank s", "s", "the reranker's model over the candidates"),
    CostSpec("score_s", "score s", "s", "scoring (the stages of a staged run included)"),
    CostSpec("total_s", "total s", "s", "the run's wall time, latency sample included"),
    CostSpec("latency_p50_ms", "p50 ms", "ms", "median single-query search latency"),
    CostSpec("latency_p95_ms", "p95 ms", "ms", "95th percentile single-query search latency"),
    CostSpec("texts_embedded", "embedded", "count", "texts that went through the model"),
    CostSpec("texts_cached", "cached", "count", "texts asked of the encoder and not embedded"),
    CostSpec("index_disk_bytes", "index disk", "bytes", "the index's files (see docs)"),
    CostSpec("index_memory_bytes", "index mem", "bytes", "the index's arrays in memory"),
    CostSpec(
        "index_peak_rss_bytes",
        "index peak",
        "bytes",
        "the process's peak resident memory while the index was built (embedding included)",
    ),
    CostSpec("tokens_per_query", "tokens/q", "tokens", "mean tokens of the top k, as tokens@k"),
    CostSpec("requests_index", "req index", "count", "backend calls to build the index"),
    CostSpec("requests_search", "req search", "count", "backend calls to search all queries"),
)
COSTS: dict[str, CostSpec] = {c.name: c for c in _SPECS}
STAGE_TIMES = ("chunk_s", "embed_s", "index_s", "search_s", "rerank_s", "score_s")
DEFAULT_PARETO_COST = "latency_p95_ms"


def cost_spec(name: str, what: str = "sweep.pareto_cost") -> CostSpec:
    """The CostSpec of ``name``; a ConfigError listing the valid names otherwise."""
    word = str(name).strip()
    spec = COSTS.get(word)
    if spec is None:
        from rageval.errors import did_you_mean

        contains = [c for c in COSTS if word and word.lower() in c]  # p95 -> latency_p95_ms
        hint = did_you_mean(word, COSTS, n=2, ignore_case=True, first=contains)
        raise ConfigError(
            f"{what}={name!r} is not a cost{hint}; valid costs: {', '.join(COSTS)} (docs/costs.md)"
        )
    return spec


def human_bytes(n: float) -> str:
    """``1536`` -> ``1.5 kB``; decimal units, as disks are sold."""
    for unit in ("B", "kB", "MB", "GB"):
        if abs(n) < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"


def costs_block(
    *,
    timings: Mapping[str, float],
    latency: Mapping[str, float],
    embed_seconds: tuple[float, float],
    rerank_seconds: float,
    texts: tuple[int, int] | None,
    index_bytes: Mapping[str, int | None] | None,
    tokens_per_query: float | None,
    requests: Mapping[str, int] | None,
) -> dict[str, float]:
    """The costs block from the pipeline's measurements.

    ``timings``: the stage laps (``index_s`` and ``search_s`` still holding their embedding and
    reranking); ``embed_seconds``: encoder time during indexing and during the search;
    ``texts``: (texts asked of the encoder, texts it embedded), None without an encoder;
    ``index_bytes``: ``disk``, ``memory`` and ``peak_rss`` (None: unknown); ``requests``:
    backend calls by ``index`` and ``search`` (None: a backend that does not count them)."""
    embed_docs, embed_queries = embed_seconds
    out: dict[str, float] = {}
    for name in ("load_s", "chunk_s", "resolve_s"):
        if name in timings:
            out[name] = float(timings[name])
    out["embed_s"] = embed_docs + embed_queries
    if "index_s" in timings:
        out["index_s"] = max(0.0, timings["index_s"] - embed_docs)
    if "search_s" in timings:
        out["search_s"] = max(0.0, timings["search_s"] - embed_queries - rerank_seconds)
    out["rerank_s"] = float(rerank_seconds)
    for name in ("score_s", "total_s"):
        if name in timings:
            out[name] = float(timings[name])
    for q in ("p50", "p95"):
        if f"{q}_ms" in latency:
            out[f"latency_{q}_ms"] = float(latency[f"{q}_ms"])
    if texts is not None:
        asked, embedded = texts
        out["texts_embedded"] = int(embedded)
        out["texts_cached"] = max(0, int(asked) - int(embedded))
    for key in ("disk", "memory", "peak_rss"):
        value = (index_bytes or {}).get(key)
        if value is not None:
            out[f"index_{key}_bytes"] = int(value)
    if tokens_per_query is not None and tokens_per_query == tokens_per_query:
        out["tokens_per_query"] = float(tokens_per_query)
    if requests is not None:
        out["requests_index"] = int(requests.get("index", 0))
        out["requests_search"] = int(requests.get("search", 0))
    return out


def costs_summary(costs: Mapping[str, Any], width: int = 120) -> str:
    """Console lines of at most ``width`` columns (unless one part is longer): stage times, then
    latency, embedding, index size, tokens and requests, each part whole on its line."""
    if not costs:
        return ""

    def fmt(name: str) -> str:
        return COSTS[name].format(costs[name])

    stages = [f"{n[:-2]} {fmt(n)}" for n in STAGE_TIMES if costs.get(n)]
    first = f"costs: {fmt('total_s')} s in total" if "total_s" in costs else "costs:"
    if stages:
        first += f" ({', '.join(stages)} s)"
    rest = []
    if "latency_p50_ms" in costs:
        rest.append(f"latency p50 {fmt('latency_p50_ms')} ms, p95 {fmt('latency_p95_ms')} ms")
    if "texts_embedded" in costs:
        rest.append(f"{fmt('texts_embedded')} texts embedded, {fmt('texts_cached')} from cache")
    if "index_disk_bytes" in costs or "index_memory_bytes" in costs:
        size = [
            f"{fmt(f'index_{k}_bytes')} {where}"
            for k, where in (("disk", "on disk"), ("memory", "in memory"))
            if f"index_{k}_bytes" in costs
        ]
        if "index_peak_rss_bytes" in costs:
            size.append(f"built at a peak of {fmt('index_peak_rss_bytes')} RSS")
        rest.append("index " + ", ".join(size))
    if "tokens_per_query" in costs:
        rest.append(f"{fmt('tokens_per_query')} tokens per query")
    if "requests_search" in costs:
        rest.append(f"{fmt('requests_index')} + {fmt('requests_search')} requests (index + search)")
    lines = [first]
    indent = " " * len("costs: ")
    for i, part in enumerate(rest):  # room kept for the ";" that ends a full line
        if i and len(lines[-1]) + len(f"; {part};") <= width:
            lines[-1] += f"; {part}"
        else:
            lines[-1] += ";" if i else ""
            lines.append(indent + part)
    return "\n".join(lines)
