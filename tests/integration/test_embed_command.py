"""Integration: `rageval embed` fills the cache for every run of a sweep's overrides, and the
sweep's runs then embed nothing (the packaged model, the mini fixture, this process)."""

import json
import shutil

import pytest

from rageval.cli.main import main

pytestmark = pytest.mark.integration


def data_args(mini, cache):
    return [
        "dataset=custom",
        f"dataset.corpus={mini / 'corpus'}",
        f"dataset.golden={mini / 'golden.jsonl'}",
        f"cache_dir={cache}",
    ]


def test_embed_fills_the_cache_a_sweep_then_reads(mini, shared_cache, tmp_path, capsys):
    cache = tmp_path / "cache"
    # the model's files, no vectors; nor what other tests write into the shared cache while this
    # one copies it (a running PostgreSQL's data folder, indexes being published)
    live = shutil.ignore_patterns("embeddings", "pgvector", "indexes", "mlflow-template.db*")
    shutil.copytree(shared_cache, cache, ignore=live, dirs_exist_ok=True)
    args = [*data_args(mini, cache), "chunk=32,64", "search=vector,bm25"]
    assert main(["embed", "-m", *args]) == 0
    out = capsys.readouterr().out
    assert "4 runs, 1 embedding model (2 without vector search skipped)" in out
    line = next(ln for ln in out.splitlines() if "chunk texts and" in ln)
    asked = int(line.split(" chunk texts")[0].split()[-1].replace(",", "")) + 8  # + queries
    assert f"{asked:,} embedded, 0 already cached" in line
    assert main(["embed", *args]) == 0  # again: everything is there
    assert "0 embedded" in capsys.readouterr().out
    assert canary_missing(mini, cache) == []  # a run's embedding canary is there too

    for chunk in (32, 64):
        run = tmp_path / f"run{chunk}"
        code = main(
            [
                *data_args(mini, cache),
                f"chunk={chunk}",
                f"hydra.run.dir={run}",
                "mlflow.enabled=false",
                "latency_sample=0",
            ]
        )
        assert code == 0
        report = json.loads((run / "report.json").read_text())
        assert report["costs"]["texts_embedded"] == 0 and report["costs"]["texts_cached"] > 0


def test_a_bad_override_is_one_line_and_exit_2(mini, tmp_path, capsys):
    assert main(["embed", *data_args(mini, tmp_path), "chunk=32", "serch=vector"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "serch" in err[0] and "search" in err[0]
    with pytest.raises(SystemExit) as stop:  # argparse: not an override
        main(["embed", "--cfg", "job"])
    assert stop.value.code == 2


def canary_missing(mini, cache):
    """The embedding canary's texts (rageval.embedding.canary) not in ``cache``."""
    from rageval.embedding import SentenceTransformerEncoder
    from rageval.embedding.cache import text_key
    from rageval.embedding.canary import choose
    from rageval.inputs.corpus import load_corpus
    from rageval.inputs.golden import load_golden

    enc = SentenceTransformerEncoder(cache_dir=str(cache), progress=False)
    texts = choose(
        load_golden(str(mini / "golden.jsonl")).queries, load_corpus(str(mini / "corpus"))
    )
    keys = [
        text_key(t.text, enc.query_prompt if t.is_query else enc.document_prompt) for t in texts
    ]
    return [texts[i].id for i in enc.cache.missing(keys)]
