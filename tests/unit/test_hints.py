"""The package's one "did you mean", one install hint and one reading of a command line's
secrets."""

from __future__ import annotations

from rageval.errors import did_you_mean, install_hint
from rageval.formats.redact import command_line_secrets


def test_did_you_mean_in_each_form_messages_use():
    assert did_you_mean("chunks", ["chunk", "k"], n=3, clause=True) == "; did you mean chunk?"
    assert did_you_mean("d1", ["d1x", "zz"], quoted=True) == " (did you mean 'd1x'?)"
    assert did_you_mean("SOURCE", ["source", "tags"], n=2, ignore_case=True, prefix="x.") == (
        " (did you mean x.source?)"
    )
    assert did_you_mean("p95", ["latency_p95_ms"], first=["latency_p95_ms"]) == (
        " (did you mean latency_p95_ms?)"
    )
    assert did_you_mean("qqqq", ["chunk"]) == ""


def test_install_hint():
    assert install_hint("qdrant") == "pip install 'rageval[qdrant]'"
    assert install_hint(package="PyStemmer") == "pip install PyStemmer"


def test_a_command_line_s_secrets_and_the_environment_s():
    found = command_line_secrets(
        ["-m", "+llm.api_key=sk-one", "chunk=5"], environ={"MY_TOKEN": "tok-123456"}
    )
    assert found == {"sk-one", "tok-123456"}
