"""The costs block from the pipeline's measurements: embedding and reranking taken out of the
stages that asked for them, unknown costs left out, and how costs read in tables."""

from __future__ import annotations

import pytest

from rageval.errors import ConfigError
from rageval.report.costs import COSTS, cost_spec, costs_block, costs_summary, human_bytes


def test_embedding_and_reranking_are_counted_once():
    costs = costs_block(
        timings={"chunk_s": 0.5, "index_s": 10.0, "search_s": 4.0, "score_s": 1.0, "total_s": 16.0},
        latency={"p50_ms": 2.0, "p95_ms": 3.0, "queries_sampled": 100},
        embed_seconds=(9.0, 1.0),
        rerank_seconds=2.5,
        texts=(120, 100),
        index_bytes={"disk": 2048, "memory": None},
        tokens_per_query=512.0,
        requests=None,
    )
    assert costs["embed_s"] == 10.0 and costs["index_s"] == 1.0
    assert costs["search_s"] == pytest.approx(0.5) and costs["rerank_s"] == 2.5
    assert costs["texts_embedded"] == 100 and costs["texts_cached"] == 20
    assert costs["index_disk_bytes"] == 2048 and "index_memory_bytes" not in costs
    assert "requests_search" not in costs and costs["latency_p95_ms"] == 3.0
    assert set(costs) <= set(COSTS)
    text = costs_summary(costs)
    assert text.startswith("costs: 16.00 s in total (chunk 0.50, embed 10.00, index 1.00")
    assert "100 texts embedded, 20 from cache" in text and "index 2.0 kB on disk" in text


def test_cost_names_and_formats():
    assert human_bytes(999) == "999 B" and human_bytes(1536) == "1.5 kB"
    assert human_bytes(2.5e9) == "2.5 GB"
    assert COSTS["texts_embedded"].format(12345) == "12,345"
    assert cost_spec(" tokens_per_query ").name == "tokens_per_query"
    with pytest.raises(ConfigError, match="sweep.pareto_cost='p95'.*valid costs: load_s"):
        cost_spec("p95")


def test_costs_summary_fits_the_console_with_every_part_whole():
    costs = {
        "total_s": 4.75,
        "chunk_s": 0.75,
        "embed_s": 0.01,
        "search_s": 0.2,
        "latency_p50_ms": 0.93,
        "latency_p95_ms": 1.16,
        "texts_embedded": 0,
        "texts_cached": 446,
        "index_disk_bytes": 839_270,
        "index_memory_bytes": 1_150_000,
        "tokens_per_query": 2496.9,
        "requests_index": 12,
        "requests_search": 2,
    }
    for width in (120, 80):
        lines = costs_summary(costs, width=width).splitlines()
        assert len(lines) >= 3 and max(map(len, lines)) <= width
        assert all(x.startswith(" " * 7) and not x.startswith(" " * 8) for x in lines[1:])
        parts = " ".join(x.strip() for x in lines[1:]).split("; ")
        assert parts[0] == "latency p50 0.93 ms, p95 1.16 ms"
        assert parts[-1] == "12 + 2 requests (index + search)"
        assert "index 839.3 kB on disk, 1.1 MB in memory" in parts
