"""The ranking side of the Azure AI Search stand-in (tests/support/fakes/azure_search.py).

BM25 text search, exact vector kNN, RRF fusion for hybrid, a deterministic fake semantic reranker
and the checks on an index definition. No analyzers (one lower-case word tokenizer), no HNSW
approximation and no real semantic model.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from typing import Any

import numpy as np

RRF_K = 60  # Azure's RRF constant
SEMANTIC_WINDOW = 50  # the semantic ranker rescores this many L1 results


def tokens(text: str) -> list[str]:
    """Lower-case word tokens, the stand-in's only analyzer."""
    return re.findall(r"\w+", text.lower())


def fake_reranker_score(query: str, text: str) -> float:
    """Deterministic stand-in for the semantic ranker: 0..4 from query-term coverage and density."""
    q, d = set(tokens(query)), tokens(text)
    if not q or not d:
        return 0.0
    coverage = len(q & set(d)) / len(q)
    density = sum(t in q for t in d) / len(d)
    return round(4.0 * (0.8 * coverage + 0.2 * density), 6)


def check_definition(body: dict[str, Any]) -> str | None:
    """What Azure would reject in an index definition (key, vector fields, semantic
    configurations), or None when it is fine."""
    fields = body.get("fields") or []
    keys = [f for f in fields if f.get("key")]
    if len(keys) != 1 or keys[0].get("type") != "Edm.String":
        return "an index needs exactly one key field of type Edm.String"
    vs = body.get("vectorSearch") or {}
    algorithms = {a["name"] for a in vs.get("algorithms") or []}
    profiles = {p["name"]: p.get("algorithm") for p in vs.get("profiles") or []}
    for f in fields:
        if f.get("type") == "Collection(Edm.Single)":
            if not isinstance(f.get("dimensions"), int) or not 2 <= f["dimensions"] <= 4096:
                return f"vector field {f['name']!r} needs dimensions between 2 and 4096"
            if profiles.get(f.get("vectorSearchProfile")) not in algorithms:
                return f"vector field {f['name']!r} names no valid vector search profile"
    names = {f["name"] for f in fields}
    for config in (body.get("semantic") or {}).get("configurations") or []:
        prioritized = config.get("prioritizedFields") or {}
        used = [c["fieldName"] for c in prioritized.get("prioritizedContentFields") or []]
        if not used or any(n not in names for n in used):
            return f"semantic configuration {config.get('name')!r} needs existing content fields"
    return None


def bm25(
    index: dict[str, Any],
    docs: dict[str, dict[str, Any]],
    text: str,
    k1: float = 1.2,
    b: float = 0.75,
) -> list[tuple[float, str]]:
    """(score, key) of every document sharing a term with ``text``, by BM25 over the searchable
    text fields, best first (equal scores by key)."""
    searchable = [
        f["name"] for f in index["fields"] if f.get("searchable") and f["type"] == "Edm.String"
    ]
    toks = {k: tokens(" ".join(str(d.get(f) or "") for f in searchable)) for k, d in docs.items()}
    avg = (sum(map(len, toks.values())) / len(toks) or 1.0) if toks else 1.0
    df = Counter(t for ts in toks.values() for t in set(ts))
    ranked = []
    for key, ts in toks.items():
        tf, score = Counter(ts), 0.0
        for term in set(tokens(text)):
            if tf[term]:
                idf = math.log(1 + (len(toks) - df[term] + 0.5) / (df[term] + 0.5))
                score += idf * tf[term] * (k1 + 1) / (tf[term] + k1 * (1 - b + b * len(ts) / avg))
        if score > 0:
            ranked.append((score, key))
    return sorted(ranked, key=lambda sk: (-sk[0], sk[1]))


def knn(
    index: dict[str, Any],
    spec: dict[str, Any] | None,
    docs: dict[str, dict[str, Any]],
    vq: dict[str, Any],
) -> list[tuple[float, str]] | str:
    """The exact ``k`` nearest documents to the vector query ``vq`` on field ``spec`` with
    Azure's similarity scores, best first; or an error message for a query Azure would reject."""
    if vq.get("kind") != "vector" or spec is None or not spec.get("dimensions"):
        return "only kind 'vector' queries on one existing vector field are supported"
    query = np.asarray(vq.get("vector") or [], dtype=np.float64)
    if query.shape != (spec["dimensions"],):
        return f"the query vector needs {spec['dimensions']} dimensions, got {query.shape}"
    vs = index.get("vectorSearch") or {}
    algo_name = {p["name"]: p["algorithm"] for p in vs["profiles"]}[spec["vectorSearchProfile"]]
    algo = next(a for a in vs["algorithms"] if a["name"] == algo_name)
    params = algo.get("exhaustiveKnnParameters") or algo.get("hnswParameters") or {}
    keys = [k for k, d in docs.items() if d.get(spec["name"]) is not None]
    if not keys:
        return []
    mat = np.asarray([docs[k][spec["name"]] for k in keys], dtype=np.float64)
    metric = params.get("metric", "cosine")
    if metric == "cosine":  # Azure: 1 / (1 + cosine distance)
        cos = mat @ query / (np.linalg.norm(mat, axis=1) * np.linalg.norm(query))
        scores = 1.0 / (2.0 - cos)
    elif metric == "euclidean":
        scores = 1.0 / (1.0 + np.linalg.norm(mat - query, axis=1))
    else:
        return f"the stand-in does not support metric {metric!r}"
    ranked = sorted(zip(scores.tolist(), keys, strict=True), key=lambda sk: (-sk[0], sk[1]))
    return ranked[: int(vq.get("k") or 50)]


def rrf(lists: list[list[tuple[float, str]]]) -> list[tuple[float, str]]:
    """Azure's reciprocal rank fusion of (score, key) lists: 1 / (RRF_K + rank) summed."""
    fused: dict[str, float] = defaultdict(float)
    for ranked in lists:
        for rank, (_, key) in enumerate(ranked, start=1):
            fused[key] += 1.0 / (RRF_K + rank)
    return sorted(((s, k) for k, s in fused.items()), key=lambda sk: (-sk[0], sk[1]))


def semantic_rerank(
    index: dict[str, Any],
    docs: dict[str, dict[str, Any]],
    body: dict[str, Any],
    ranking: list[tuple[float, str]],
    out: dict[str, float],
) -> list | str:
    """``ranking`` with its first SEMANTIC_WINDOW results reordered by the fake reranker, whose
    scores go into ``out``; or an error message for a query Azure would reject."""
    semantic = index.get("semantic") or {}
    name = body.get("semanticConfiguration") or semantic.get("defaultConfiguration")
    config = next((c for c in semantic.get("configurations") or [] if c["name"] == name), None)
    text = body.get("search")
    if config is None:
        return f"semantic configuration {name!r} not found in the index"
    if not text or text.strip() == "*":
        return "semantic queries need search text"
    fields = [c["fieldName"] for c in config["prioritizedFields"]["prioritizedContentFields"]]
    window = ranking[:SEMANTIC_WINDOW]
    for _, key in window:
        out[key] = fake_reranker_score(text, " ".join(str(docs[key].get(f) or "") for f in fields))
    order = sorted(range(len(window)), key=lambda i: (-out[window[i][1]], i))
    return [window[i] for i in order] + ranking[SEMANTIC_WINDOW:]
