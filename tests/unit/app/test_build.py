"""``rageval.app.build``: a job's config resolved once, a missing value named."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from rageval.app.build import resolve
from rageval.errors import ConfigError


def test_resolve_gives_plain_data_and_names_a_missing_key():
    cfg = OmegaConf.create({"chunk": 64, "search": {"depth": "${chunk}"}, "backend": {"x": 1}})
    plain = resolve(cfg)
    assert plain == {"chunk": 64, "search": {"depth": 64}, "backend": {"x": 1}}
    assert type(plain["search"]) is dict
    with pytest.raises(ConfigError, match=r"MissingMandatoryValue: .*\(key backend.x\)"):
        resolve(OmegaConf.create({"backend": {"x": "???"}}))
