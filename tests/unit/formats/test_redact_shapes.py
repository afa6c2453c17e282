"""Secret shapes found by structure: URL userinfo of any form, signed-URL and fragment
parameters, and secrets inside swept, dict- and list-valued overrides."""

from __future__ import annotations

import pytest

from rageval.formats.redact import mask_url, override_secrets, redact_override


@pytest.mark.parametrize(
    "url, masked",
    [
        ("https://TOKEN1234@github.com/a", "https://***@github.com/a"),
        ("https://user:pa55word@h/x", "https://user:***@h/x"),
        ("https://user%40corp:p%3Ass@h/x", "https://user%40corp:***@h/x"),
        (
            "https://h/x?X-Amz-Signature=abc123&X-Amz-Date=1",
            "https://h/x?X-Amz-Signature=***&X-Amz-Date=1",
        ),
        ("https://h/x?X-Goog-Signature=abc123", "https://h/x?X-Goog-Signature=***"),
        ("https://h/x?sv=1&sig=abc123", "https://h/x?sv=1&sig=***"),
        ("https://h/cb#access_token=abc123&state=s", "https://h/cb#access_token=***&state=s"),
        ("https://h/x?client_secret=abc123&page=2", "https://h/x?client_secret=***&page=2"),
        ("https://h/x?page=2&q=token", "https://h/x?page=2&q=token"),
        ("git@github.com:acme/x.git", "git@github.com:acme/x.git"),  # no scheme: no userinfo
        ("mailto:bob@example.com", "mailto:bob@example.com"),
    ],
)
def test_url_masking_by_structure(url, masked):
    assert mask_url(url) == masked


def test_overrides_are_scanned_recursively():
    o = "+a.b={x: [1, {secret_value: s3cr3t-deep}], url: 'https://u:pw-in-url@h'}"
    assert {"s3cr3t-deep", "pw-in-url"} <= override_secrets([o])
    red = redact_override(o)
    assert "s3cr3t-deep" not in red and "pw-in-url" not in red and "x: [1," in red
    assert override_secrets(["+x.password=aaaa1,bbbb2"]) >= {"aaaa1", "bbbb2"}


@pytest.mark.parametrize(
    "override, secret, kept",
    [
        # as typed, and as Hydra records it (no space after the colons)
        ("+extra.creds={user: bobuser, password: pw-77x}", "pw-77x", "user: bobuser"),
        ("+extra.creds={user:bobuser, password:pw-77x}", "pw-77x", "user: bobuser"),
        ("+extra.hooks=[{name:slack, token:xoxb-5566}]", "xoxb-5566", "name: slack"),
        ("+a={url:'https://u:pw-in-url@h', x:[1,{token:abcd1234}]}", "abcd1234", "https://u:***@h"),
        ("x.password=choice(aaaa1,bbbb2)", "bbbb2", "x.password=***"),
    ],
)
def test_structured_overrides_are_masked_where_the_secret_stands(override, secret, kept):
    assert secret in override_secrets([override])
    red = redact_override(override)
    assert secret not in red and kept in red
