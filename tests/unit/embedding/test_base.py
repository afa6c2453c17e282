"""The Encoder contract: where it lives, and what chunking needs from an encoder."""

from __future__ import annotations

import pytest
from fakes.encoders import BareEncoder as _Bare

from rageval.embedding.base import Encoder, tokenizer_dir_of
from rageval.errors import ConfigError


def test_encoder_is_still_importable_from_retrieval_base():
    from rageval.retrieval import Encoder as FromPackage
    from rageval.retrieval.base import Encoder as FromBase

    assert FromBase is Encoder and FromPackage is Encoder
    assert isinstance(_Bare(), Encoder)


def test_an_encoder_without_a_tokenizer_is_refused_with_the_fix():
    with pytest.raises(ConfigError, match="gives no tokenizer.*tokenizer_dir"):
        tokenizer_dir_of(_Bare())


def test_tokenizer_dir_wins_over_model_path(tmp_path):
    enc = _Bare()
    enc.model_path = tmp_path / "model"
    assert tokenizer_dir_of(enc) == str(tmp_path / "model")
    enc.tokenizer_dir = tmp_path / "tok"
    assert tokenizer_dir_of(enc) == str(tmp_path / "tok")


def test_the_app_refuses_to_chunk_with_an_encoder_that_gives_no_tokenizer(tmp_path):
    from hydra import compose, initialize_config_dir

    from rageval.app.main import CONF_DIR, build, register_resolvers

    register_resolvers()
    with initialize_config_dir(str(CONF_DIR), version_base=None):
        cfg = compose(
            "config",
            overrides=[
                f"cache_dir={tmp_path}",
                "embedding._target_=fakes.encoders.BareEncoder",
                "mlflow.enabled=false",
            ],
        )
    with pytest.raises(ConfigError, match="gives no tokenizer"):
        build(cfg)
