"""Integration: the same chunks and embeddings give the same metrics on every backend, chosen by
config alone (`backend=qdrant`, `backend=azure`), for exact vector search."""

import pytest
from fakes.azure_search import FakeAzureSearch
from mini_runs import run_mini

pytestmark = pytest.mark.integration
KEY = "parity-test-key-0123456789"


def test_faiss_qdrant_and_azure_agree_on_exact_vector_search(
    mini, shared_cache, tmp_path, monkeypatch
):
    monkeypatch.setenv("AZURE_SEARCH_API_KEY", KEY)
    faiss = run_mini(mini, shared_cache, tmp_path, "faiss", "backend=faiss", "search=vector")
    qdrant = run_mini(mini, shared_cache, tmp_path, "qdrant", "backend=qdrant", "search=vector")
    with FakeAzureSearch(api_key=KEY) as fake:
        azure = run_mini(
            mini,
            shared_cache,
            tmp_path,
            "azure",
            "backend=azure",
            "search=vector",
            f"backend.endpoint={fake.endpoint}",
            "backend.run_key=parity",
        )
        assert not fake.indexes  # the throwaway index was deleted at the end
    for other in (qdrant, azure):
        assert other["digests"] == faiss["digests"]
        for name, value in faiss["metrics"].items():
            assert other["metrics"][name] == pytest.approx(value, abs=1e-12), name
        # same chunk ids in the same order for every query
        assert [r["retrieved"] for r in other["per_query"]] == [
            r["retrieved"] for r in faiss["per_query"]
        ]
    rankings = {
        name: (tmp_path / name / "run.trec").read_text().split("\n")
        for name in ("faiss", "qdrant", "azure")
    }
    order = {name: [line.split()[:3] for line in lines if line] for name, lines in rankings.items()}
    assert order["qdrant"] == order["faiss"] == order["azure"]
