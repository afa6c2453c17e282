"""The baseline's typed document (rageval.gate.baseline: BaselineDocument, read_baseline) and
secrets by declaration (rageval.config_schema.SECRET_NAMES, a project's ``secrets`` list): what
a baseline may hold, what it may not, and what is stored verbatim so a replay is exact."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from rageval.errors import InputError
from rageval.formats.redact import MASK, Secret, redact, redact_override, scrub, secret_values
from rageval.gate.baseline import Baseline, read_baseline, validate_baseline

DEMO = Path(__file__).resolve().parents[3] / "golden" / "baseline.json"


def demo() -> dict:
    return json.loads(DEMO.read_text())


def test_the_demo_baseline_is_a_typed_document_and_an_old_schema_2_one_still_reads(tmp_path):
    assert demo()["schema"] == 3 and "_target_" not in json.dumps(demo())
    read = read_baseline(DEMO)
    assert isinstance(read, Baseline) and read.path == DEMO
    assert read.report["metrics"] == demo()["metrics"] and read.label_set == "gold"
    assert read.choices == demo()["choices"] and len(read.per_query) == demo()["n_queries"]
    old = {**demo(), "schema": 2}
    old["config"]["dataset"]["_target_"] = "rageval.inputs.dataset.files"  # recorded, data only
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps(old))
    shutil.copy(DEMO.with_name("baseline.per_query.csv"), tmp_path)
    assert "_target_" not in read_baseline(path).config["dataset"]  # never replayed
    old["config"]["backend"]["factory"] = "subprocess:getoutput"  # code: refused in any schema
    path.write_text(json.dumps(old))
    with pytest.raises(InputError, match="backend.factory names code"):
        read_baseline(path)


def test_provenance_and_canary_are_plain_data():
    doc = {**demo(), "provenance": {"corpus": {"a.md": "ab12"}, "env": {"torch": "2.13"}}}
    doc["canary"] = {"file": "baseline.canary.npy", "sha256": "0" * 64, "fingerprint": "f"}
    validate_baseline(doc, DEMO)
    for block, bad in (
        ("provenance", {"env": {"x": "${oc.env:GH_PAT}"}}),
        ("canary", {"loader": {"_target_": "os.system"}}),
    ):
        with pytest.raises(InputError, match=f"{block}"):
            validate_baseline({**demo(), block: bad}, DEMO)


@pytest.mark.parametrize(
    ("change", "key"),
    [
        ({"promoted_from": {"run_id": 1}}, "promoted_from.run_id"),
        ({"overrides": ["backend.factory=os:system"]}, "overrides"),
        ({"choices": {"retriever": "faiss"}}, "choices"),
        ({"project": {"root": "/", "extra": 1}}, "project.extra"),
        ({"per_query_sha256": "nope"}, "per_query_sha256"),
    ],
)
def test_anything_else_is_refused_naming_the_key(change, key):
    with pytest.raises(InputError, match=rf"baseline.json: not a valid baseline: {key}"):
        validate_baseline({**demo(), **change}, DEMO)


def test_secrets_are_declared_not_guessed_from_a_name():
    config = {
        "backend": {"doc_id_key": "source", "min_token_length": 2, "id_key": "id"},
        "embedding": {"api_key": "sk-live-aaaa", "api_key_env": "OPENAI_API_KEY"},
        "extra": {"db_password": "pw-1234", "conninfo": "host=h password=pw-5678", "mine": "m-9"},
        "secrets": ["extra.mine"],
    }
    red = redact(config)
    assert red["backend"] == config["backend"]  # stored verbatim: a replay is exact
    assert red["embedding"] == {"api_key": MASK, "api_key_env": "OPENAI_API_KEY"}
    assert red["extra"] == {"db_password": MASK, "conninfo": MASK, "mine": MASK}
    # by form, under any key: a keyword DSN's password, an @ in a URL's password
    assert redact({"x": "host=h port=5 password='p w'"})["x"] == "host=h port=5 password=***"
    found = secret_values(None, {"RAGEVAL_PG_DSN": "postgresql://u:p@ssword@db/x"})
    line = 'could not translate host name "ssword@db" to address'
    assert scrub(line, found) == 'could not translate host name "***@db" to address'
    assert redact_override("+extra.mine=m-9", ["extra.mine"]) == "+extra.mine=***"


def test_a_secret_prints_masked_and_is_unwrapped_on_purpose():
    s = Secret("sk-live-zzzz")
    assert str(s) == MASK and "sk-live" not in f"{s} {s!r} {[s]}" and s.reveal() == "sk-live-zzzz"


def test_a_mask_is_never_stored_nor_replayed_at_any_depth():
    from omegaconf import open_dict

    from rageval.app.config import compose
    from rageval.app.replay import replay_values
    from rageval.gate.baseline import stored_config

    config = {
        "chunk": 64,
        "extra": {"tokens": [MASK, MASK], "url": f"https://u:{MASK}@h", "n": 2},
        "backend": {"api_key": MASK, "doc_id_key": "source"},
    }
    assert stored_config(config) == {
        "chunk": 64,
        "extra": {"n": 2},
        "backend": {"doc_id_key": "source"},
    }
    cfg = compose(["+extra.tokens=[a,b]"])
    with open_dict(cfg):
        replay_values(cfg, {"extra": {"tokens": [MASK, MASK]}, "chunk": 64})
    assert list(cfg.extra.tokens) == ["a", "b"] and cfg.chunk == 64
