"""Exact replay, a property of the config schema: for every packaged option of every group and
the adapters (function, langchain, llamaindex, named by the project's own conf/ as code must be),
with every measured value changed from its default, what ``rageval check`` composes from the
promoted baseline resolves to the config that was promoted, setting by setting.

promote -> check runs here without the retrieval (compose, resolve, redact as a run does, write
the baseline, read it back, compose the check); tests/integration/test_hostile_pr.py runs a
project's check end to end and asserts an interval of exactly 0."""

from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from rageval.app.config import CONF_DIR, GROUPS
from rageval.config_schema import CODE_KEYS, measures

ADAPTERS = {  # options of the project's conf/backend/: the code they name is the project's
    "my_function": ("function", "function: myapp.search:search"),
    "my_langchain": ("langchain", "factory: myapp.rag:build_retriever"),
    "my_llamaindex": ("llamaindex", "factory: myapp.rag:build_index\nkwargs: {top: 3}"),
}
REQUIRED = {  # mandatory values of packaged options (data, inside the project)
    ("dataset", "custom"): ["dataset.corpus=corpus", "dataset.golden=golden/g.jsonl"],
    ("dataset", "beir"): ["dataset.path=beir/scifact"],
    ("backend", "azure"): ["backend.endpoint=https://acme.search.windows.net"],
    # packaged adapters name no code: the run and the check name it on the command line
    ("backend", "function"): ["backend.function=myapp.search:search"],
    ("backend", "langchain"): ["backend.factory=myapp.rag:build_retriever"],
    ("backend", "llamaindex"): ["backend.factory=myapp.rag:build_index"],
}


def configurations() -> list[list[str]]:
    runs = []
    for group in GROUPS:
        for option in sorted(p.stem for p in (CONF_DIR / group).glob("*.yaml")):
            runs.append([f"{group}={option}", *REQUIRED.get((group, option), [])])
    return runs + [[f"backend={name}"] for name in ADAPTERS]


@pytest.fixture
def project(tmp_path, monkeypatch):
    from rageval.project import find_project, using

    (tmp_path / "rageval.yaml").write_text("config_dir: conf\n")
    (tmp_path / "conf" / "backend").mkdir(parents=True)
    (tmp_path / "golden").mkdir()
    for name, (base, code) in ADAPTERS.items():
        text = f"defaults: [{base}]\n{code}\ndoc_id_key: source\nid_key: id\n"
        (tmp_path / "conf" / "backend" / f"{name}.yaml").write_text(text)
    monkeypatch.chdir(tmp_path)
    with using(find_project()):
        yield tmp_path


def changed(value):
    """Another value of the same type (the property: any value replays, not only defaults)."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 3
    if isinstance(value, float):
        return round(value * 0.5 + 0.125, 6)
    if isinstance(value, str):
        return f"{value}-x" if value else "x"
    return value


def mutate(cfg, node=None, at: str = "") -> list[str]:
    """Change every measured, non-interpolated, non-code leaf of ``cfg`` in place; the keys."""
    from omegaconf import DictConfig, ListConfig

    node = cfg if node is None else node
    done = []
    for key in list(node.keys()):
        path = f"{at}{key}"
        if key in CODE_KEYS or not measures(path) or path in ("dataset.corpus", "dataset.golden"):
            continue
        child = node._get_node(key)
        if child._is_interpolation() or OmegaConf.is_missing(node, key):
            continue
        value = node[key]
        if isinstance(value, DictConfig):
            done += mutate(cfg, value, f"{path}.")
        elif isinstance(value, ListConfig):
            if len(value) and all(isinstance(v, int | float) for v in value):
                node[key] = [changed(v) for v in value]
                done.append(path)
        elif value is not None:  # null: typed by its option, left as it is
            node[key] = changed(value)
            done.append(path)
    return done


def measured(config: dict) -> dict:
    """The resolved config's measured, non-code keys, flat."""
    out = {}

    def walk(v, at=""):
        if isinstance(v, dict):
            for k, x in v.items():
                if k not in CODE_KEYS and measures(f"{at}{k}"):
                    walk(x, f"{at}{k}.")
        else:
            out[at.rstrip(".")] = v

    walk(config)
    return out


@pytest.mark.parametrize("overrides", configurations(), ids=lambda o: o[0])
def test_every_configuration_replays_exactly(project, overrides):
    from omegaconf import open_dict

    from rageval.app.config import absolute_paths, compose
    from rageval.app.replay import compose_from_baseline
    from rageval.formats.redact import redact
    from rageval.gate.baseline import read_baseline, write_baseline

    cfg = compose(overrides)
    with open_dict(cfg):
        keys = mutate(cfg)
        absolute_paths(cfg)
    assert keys, "nothing to vary"
    promoted = OmegaConf.to_container(cfg, resolve=True)
    choices = {g: o.split("=")[-1] for o in overrides for g in GROUPS if o.startswith(g + "=")}
    report = {
        "k": 5,
        "level": "chunk",
        "metrics": {"ndcg@5": 0.5},
        "per_query": [{"id": "q1", "query": "x", "ndcg@5": 0.5}],
        "digests": {"golden": "g"},
        "choices": choices,
        "overrides": overrides,
        "config": redact(promoted),  # what a run's report holds
    }
    path = write_baseline(report, project / "golden" / "baseline.json", {"run_id": None})
    code = [o for o in overrides if o.split("=")[0].rsplit(".", 1)[-1] in CODE_KEYS]
    given = [overrides[0], *code] if code else []  # the check names the same code
    check = compose_from_baseline(read_baseline(path), given)
    replayed = OmegaConf.to_container(check, resolve=True)
    want, got = measured(promoted), measured(replayed)
    assert {k: got.get(k) for k in want} == want
    # the code the check runs is the project's config's, never the baseline's
    assert "myapp" not in path.read_text()
    if overrides[0].startswith(("backend=my_", "backend=function", "backend=l")):
        code = "function" if "function" in promoted["backend"] else "factory"
        assert replayed["backend"][code] == promoted["backend"][code]


def test_the_promoted_values_differ_from_the_defaults(project):
    """The property is not vacuous: a check without the baseline's values differs."""
    from omegaconf import open_dict

    from rageval.app.config import compose

    cfg = compose(["backend=my_function"])
    with open_dict(cfg):
        keys = mutate(cfg)
    assert {"backend.doc_id_key", "backend.parallelism", "chunk_overlap", "search.rrf_k"} <= set(
        keys
    )
    assert Path("conf/backend/my_function.yaml").is_file()
