"""Every option of every config group under conf/ composes and builds (no backend is contacted,
no model is loaded), and the schema refuses values of the wrong type at compose time."""

from __future__ import annotations

from pathlib import Path

import pytest
from beir_fixture import make_beir
from hydra.utils import get_class, get_method

from rageval.app.build import Components, build
from rageval.app.config import CONF_DIR, GROUPS, compose
from rageval.app.preflight import check_overrides
from rageval.errors import ConfigError
from rageval.retrieval.fusion import HybridRetriever
from rageval.retrieval.local.dense import FaissRetriever
from rageval.retrieval.local.lexical import BM25Retriever
from rageval.retrieval.retry import RetryingRetriever

LOCAL = {"vector": FaissRetriever, "bm25": BM25Retriever, "hybrid": HybridRetriever}

OPTIONS = sorted((group, f.stem) for group in GROUPS for f in (CONF_DIR / group).glob("*.yaml"))


def required(group: str, option: str, mini: Path, tmp_path: Path) -> list[str]:
    """The overrides an option cannot run without (data paths, an endpoint, a model folder)."""
    azure = ["backend=azure", "backend.endpoint=https://rageval-test.invalid"]
    return {
        ("dataset", "custom"): [
            f"dataset.corpus={mini / 'corpus'}",
            f"dataset.golden={mini / 'golden.jsonl'}",
        ],
        ("dataset", "beir"): [f"dataset.path={make_beir(tmp_path / 'beir')}"],
        ("backend", "azure"): azure,
        # Azure's semantic ranker exists only on Azure AI Search
        ("search", "semantic"): azure,
        # any local folder: the CrossEncoder is loaded on the first search, not when built
        ("rerank", "cross_encoder"): [f"rerank.model={tmp_path}"],
        # a team's deployed retriever: a function, a LangChain or LlamaIndex factory
        ("backend", "function"): ["backend.function=fakes.plugin_retrievers:search_passages"],
        ("backend", "langchain"): ["backend.factory=fakes.frameworks:langchain_retriever"],
        ("backend", "llamaindex"): ["backend.factory=fakes.frameworks:llamaindex_retriever"],
    }.get((group, option), [])


def test_every_group_has_options_and_the_defaults_list_names_existing_ones():
    assert {g for g, _ in OPTIONS} == set(GROUPS)
    cfg = compose([])
    for group in ("dataset", "embedding", "backend", "search"):
        assert cfg[group], f"{group} is empty by default"
    assert cfg.rerank is None  # no reranking unless asked for


@pytest.mark.filterwarnings("ignore:BEIR beir/test. skipped")  # the fixture skips on purpose
@pytest.mark.parametrize(("group", "option"), OPTIONS, ids=[f"{g}={o}" for g, o in OPTIONS])
def test_every_option_composes_and_builds(group, option, mini, tmp_path, monkeypatch):
    monkeypatch.delenv("AZURE_SEARCH_API_KEY", raising=False)
    overrides = [
        f"cache_dir={tmp_path / 'cache'}",
        *required(group, option, mini, tmp_path),
        f"{group}={option}",
    ]
    cfg = compose(overrides)
    parts = build(cfg)
    try:
        assert isinstance(parts, Components)
        retriever = parts.retriever
        if cfg.rerank:
            assert isinstance(retriever, get_class(cfg.rerank._target_))
            retriever = retriever.base
        assert isinstance(retriever, RetryingRetriever)
        backend_target = cfg.backend._target_
        built = retriever.inner
        if backend_target.endswith("local_retriever"):
            assert isinstance(built, LOCAL[cfg.search.mode])
        elif backend_target.endswith("pgvector_retriever"):
            from rageval.retrieval.pgvector.retriever import PgVectorRetriever

            assert isinstance(built, PgVectorRetriever)
        else:
            assert isinstance(built, get_class(backend_target))
        assert isinstance(parts.encoder, get_class(cfg.embedding._target_))
        assert parts.query_encoder is None
        assert parts.spec.k == cfg.k and parts.spec.chunking.size == cfg.chunk
        dataset = get_method(cfg.dataset._target_)
        assert dataset.__module__ == "rageval.inputs.dataset"
        assert parts.spec.corpus and parts.spec.golden
    finally:
        parts.close()


def test_a_query_model_builds_a_second_encoder_from_the_same_node(model_dir, tmp_path):
    cfg = compose([f"cache_dir={tmp_path}", f"embedding.query_model={model_dir}"])
    parts = build(cfg)
    assert parts.query_encoder is not None and parts.query_encoder is not parts.encoder
    assert parts.query_encoder.model_name == model_dir
    assert parts.encoder.model_name == "all-MiniLM-L6-v2"


def test_the_ray_cluster_launcher_option_composes():
    pytest.importorskip("hydra_plugins.hydra_ray_launcher")
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    from rageval.app.config import register_resolvers

    register_resolvers()  # the schema conf/config.yaml extends: run first, nothing else did it
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = hydra_compose("config", ["hydra/launcher=ray_cluster"], return_hydra_config=True)
    assert cfg.hydra.launcher.ray.remote.num_cpus == 1


@pytest.mark.parametrize(
    ("override", "says"),
    [
        ("chunk=abc", "could not be converted to Integer (key chunk)"),
        ("k=1.5", "(key k)"),
        ("allow_model_mismatch=perhaps", "(key allow_model_mismatch)"),
        ("mlflow.enabled=sometimes", "(key mlflow.enabled)"),
        ("search=nope", "Could not find 'search/nope'"),
        ("chunks=256", "Key 'chunks' not in"),
    ],
)
def test_the_schema_refuses_bad_values_at_compose_time_in_one_line(override, says):
    with pytest.raises(ConfigError) as refused:
        compose([override])
    msg = str(refused.value)
    assert says in msg and "\n" not in msg and msg.startswith(f"bad override ({override}): ")


def test_every_job_of_a_sweep_is_checked_before_any_runs():
    check_overrides(["-m", "chunk=32,64", "search=vector,bm25"])
    with pytest.raises(ConfigError, match=r"^bad override \(chunk=abc\): .*Integer \(key chunk\)$"):
        check_overrides(["-m", "chunk=32,abc", "search=vector,bm25"])
    with pytest.raises(ConfigError, match="search/nope"):
        check_overrides(["-m", "chunk=32,64", "search=vector,nope"])
    check_overrides(["--cfg", "job", "chunk=abc"])  # Hydra's own flags: left to Hydra


def test_a_misspelt_pareto_cost_stops_the_sweep_before_any_job():
    # Hydra only warns when a callback raises: the check before Hydra starts is what stops it
    check_overrides(["-m", "search=vector,bm25", "sweep.pareto_cost=tokens_per_query"])
    for argv in (
        ["-m", "search=vector,bm25", "sweep.pareto_cost=p95"],
        ["-m", "sweep.pareto_cost=p95"],  # a sweep of one job
        ["-m", "search=vector,bm25", "sweep.pareto_cost=index_s,p95"],
    ):
        with pytest.raises(
            ConfigError,
            match=r"sweep.pareto_cost='p95' is not a cost \(did you "
            r"mean latency_p95_ms\?\); valid costs: load_s",
        ):
            check_overrides(argv)


def test_the_custom_dataset_points_at_a_doc_that_exists():
    text = (CONF_DIR / "dataset" / "custom.yaml").read_text()
    docs = [w.strip("().,") for w in text.split() if w.strip("().,").startswith("docs/")]
    assert docs and all((CONF_DIR.parent / d).is_file() for d in docs)


def test_keys_added_to_the_dataset_node_are_kept_in_the_config_not_passed_on(mini, tmp_path):
    # as before the dataset group had a _target_: extra keys (a description, an owner) are fine
    cfg = compose(
        [
            f"cache_dir={tmp_path}",
            "dataset=custom",
            "+dataset.owner=search-team",
            f"dataset.corpus={mini / 'corpus'}",
            f"dataset.golden={mini / 'golden.jsonl'}",
        ]
    )
    parts = build(cfg)
    assert parts.spec.golden == str(mini / "golden.jsonl") and cfg.dataset.owner == "search-team"


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["chunk=abc"], "could not be converted to Integer (key chunk)"),
        (["-m", "chunk=32,abc"], "bad override (chunk=abc): "),
        (["-m", "chunk=32", "k=5,1.5"], "bad override (k=1.5): "),
        (["search=nope"], "search has no option 'nope'"),
    ],
)
def test_a_bad_override_on_the_command_line_is_one_line_and_exit_2(argv, says, capsys):
    from rageval.cli.main import main

    assert main([*argv, "mlflow.enabled=false"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("rageval: error: ") and says in err[0], err
