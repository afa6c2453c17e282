"""Redaction rules: secrets in config values, nested credentials, URLs, overrides and log
records."""

from __future__ import annotations

import json
import logging

from rageval.formats.redact import (
    ScrubbingFilter,
    override_secrets,
    redact,
    redact_override,
    secret_values,
)

TOKEN, PASSWORD, SIG, ENV_KEY, URL_PW = (
    "sk-cfg-7a6b5c4d",
    "pw-nested-1f2e3d",
    "sig-9z8y7x6w",
    "env-5e4d3c2b1a",
    "url-pw-0q9w8e",
)
ENDPOINT = f"https://search.example.com/indexes?api-version=2024&api-key={SIG}"
ALL = (TOKEN, PASSWORD, SIG, ENV_KEY, URL_PW)


def test_redaction_rules():
    config = {
        "backend": {
            "api_token": TOKEN,
            "api_key_env": "MY_KEY",
            "endpoint": ENDPOINT,
            "credentials": {"user": "bob", "pass": PASSWORD},
            "timeout": 60,
        },
        "mlflow": {"tracking_uri": f"https://bob:{URL_PW}@mlflow.example.com/?sv=2024&sig={SIG}"},
    }
    red = redact(config)
    assert red["backend"]["api_token"] == "***" and red["backend"]["api_key_env"] == "MY_KEY"
    assert red["backend"]["credentials"] == {"user": "***", "pass": "***"}  # all below a secret key
    assert (
        red["backend"]["endpoint"]
        == "https://search.example.com/indexes?api-version=2024&api-key=***"
    )
    assert red["mlflow"]["tracking_uri"] == "https://bob:***@mlflow.example.com/?sv=2024&sig=***"
    assert {TOKEN, PASSWORD, SIG, URL_PW, ENV_KEY} <= secret_values(
        config, {"SEARCH_API_KEY": ENV_KEY}
    )
    assert not any(s in json.dumps(red) for s in ALL)
    overrides = [f"+backend.credentials.pass={PASSWORD}", f"backend.api_key={TOKEN}", "chunk=256"]
    assert override_secrets(overrides) == {PASSWORD, TOKEN}
    assert [redact_override(o) for o in overrides] == [
        "+backend.credentials.pass=***",
        "backend.api_key=***",
        "chunk=256",
    ]
    record = logging.LogRecord(
        "x", logging.WARNING, __file__, 1, "GET %s with %s", (ENDPOINT, TOKEN), None
    )
    ScrubbingFilter({TOKEN}).filter(record)
    assert (
        record.getMessage()
        == "GET https://search.example.com/indexes?api-version=2024&api-key=*** with ***"
    )
