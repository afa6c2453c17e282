"""``rageval golden generate`` against a local chat-completions stand-in
(tests/support/fakes/chat_server.py)."""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import zlib
from types import SimpleNamespace

import numpy as np
import pytest
from fakes.chat_server import ChatServer, Reply, passage_of, template_questions

from rageval.authoring import chat
from rageval.authoring.generate import Candidate, dedupe, parse_questions
from rageval.cli import golden_generate as generate_cli
from rageval.cli.main import main
from rageval.inputs.corpus import load_corpus
from rageval.inputs.golden import load_golden

KEY = "sk-test-9f8e7d6c5b4a3210"


class FakeEncoder:
    """Bag-of-words vectors (hashed, L2-normalised): the same words give similarity 1."""

    fingerprint, dim = "fake-bow", 512

    def encode_queries(self, texts):
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in re.findall(r"\w+", t.lower()):
                out[i, zlib.crc32(w.encode()) % self.dim] += 1
        return out / np.clip(np.linalg.norm(out, axis=1, keepdims=True), 1e-9, None)

    encode_documents = encode_queries


@pytest.fixture
def work(tmp_path, mini, monkeypatch):
    shutil.copytree(mini, tmp_path / "golden")
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    for name in ("RAGEVAL_LLM_BASE_URL", "OPENAI_BASE_URL", "RAGEVAL_LLM_MODEL"):
        monkeypatch.delenv(name, raising=False)
    sleeps: list[float] = []
    monkeypatch.setattr(chat, "_sleep", sleeps.append)
    monkeypatch.setattr(generate_cli, "build_encoder", lambda *a, **k: FakeEncoder())
    golden = tmp_path / "golden" / "golden.jsonl"
    return SimpleNamespace(
        golden=golden,
        out=golden.parent / "generated.jsonl",
        sleeps=sleeps,
        before=golden.read_bytes(),
        docs={d.id: d for d in load_corpus(golden.parent / "corpus")},
    )


def gen(work, srv, *extra, capsys=None):
    argv = ["golden", "generate", str(work.golden), "--model", "gpt-test", "--no-progress"]
    argv += ["--chunk", "64"] if "--chunk" not in extra else []
    argv += ["--base-url", srv.base_url] if srv is not None else []
    code = main([*argv, *extra])
    if capsys is None:
        return code
    out, err = capsys.readouterr()
    return code, out, err


def entries(path):
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_writes_verified_synthetic_entries_to_their_own_file(work, capsys):
    with ChatServer(key=KEY) as srv:
        code, out, err = gen(work, srv, "--chunks", "4", "--per-chunk", "2", capsys=capsys)
    assert code == 0, err
    assert len(srv.seen) == 4
    for seen in srv.seen:
        assert seen.path == "/v1/chat/completions"
        assert seen.headers["authorization"] == f"Bearer {KEY}"
        assert (
            seen.body["model"] == "gpt-test" and "<passage>" in seen.body["messages"][-1]["content"]
        )
    new = entries(work.out)
    assert len(new) >= 4 and all(e["source"] == "synthetic" for e in new)
    assert [e["id"] for e in new] == [f"syn-{i:04d}" for i in range(1, len(new) + 1)]
    for e in new:
        ev = e["evidence"][0]
        assert ev["quote"] in work.docs[ev["doc"]].text  # stored verbatim
        assert e["origin"]["model"] == "gpt-test"
    assert len(load_golden(work.out).queries) == len(new)
    assert work.golden.read_bytes() == work.before  # the committed set is never touched
    assert f"{len(new)} new questions" in out and "synthetic (limit 40%)" in out


def test_azure_style_url_header_and_no_model_in_body(work, capsys):
    with ChatServer(key=KEY, style="azure") as srv:
        code, _, err = gen(work, srv, "--api-style", "azure", "--chunks", "1", capsys=capsys)
    assert code == 0, err
    (seen,) = srv.seen
    assert seen.path == "/openai/deployments/gpt-test/chat/completions"
    assert seen.query["api-version"] == [chat.AZURE_API_VERSION]
    assert seen.headers["api-key"] == KEY and "authorization" not in seen.headers
    assert "model" not in seen.body
    assert len(entries(work.out)) >= 1


def test_azure_without_a_key_fails_before_any_request(work, monkeypatch, capsys):
    monkeypatch.delenv("OPENAI_API_KEY")
    with ChatServer(style="azure") as srv:
        code, _, err = gen(work, srv, "--api-style", "azure", capsys=capsys)
    assert code == 2 and "$OPENAI_API_KEY" in err and srv.seen == []


def test_429_and_5xx_are_retried_honouring_retry_after_then_backoff(work, capsys):
    with ChatServer(key=KEY) as srv:
        srv.then(
            Reply(429, body=b"{}", headers={"Retry-After": "7"}),
            Reply(503, body=b"{}"),
            Reply(429, body=b"{}", headers={"retry-after-ms": "1500"}),
        )
        code, out, err = gen(work, srv, "--chunks", "1", "--backoff", "0.5", capsys=capsys)
    assert code == 0, err
    assert work.sleeps == [7.0, 1.0, 1.5]  # Retry-After, 0.5 * 2**1, retry-after-ms
    assert len(srv.seen) == 4 and "spent 4 of 100 requests" in out
    assert len(entries(work.out)) >= 1


def test_when_retries_are_spent_what_was_made_is_saved_and_exit_is_2(work, capsys):
    def first_then_throttled(body):
        srv.then(*[Reply(429, body=b"{}")] * 10)
        return template_questions(body)

    with ChatServer(key=KEY, responder=first_then_throttled) as srv:
        code, _, err = gen(work, srv, "--chunks", "3", "--retries", "2", capsys=capsys)
    assert code == 2
    assert "still failing after 3 attempts (HTTP 429)" in err and "saved in" in err
    assert len(srv.seen) == 4 and work.sleeps == [1.0, 2.0]
    assert len(entries(work.out)) >= 1


def test_malformed_answers_are_skipped_and_counted(work, capsys):
    with ChatServer(key=KEY) as srv:
        srv.then(
            Reply(body=b"<html>bad gateway</html>"),
            Reply(body=b'{"choices": []}'),
            Reply(content="Sure! Here are some questions: 1. What is leave?"),
            Reply(content='{"questions": [{"question": "no quote here?"}, "junk"]}'),
            Reply(content='{"answer": 42}'),
        )
        code, out, err = gen(work, srv, "--chunks", "6", "--per-chunk", "1", capsys=capsys)
    assert code == 0, err
    assert re.search(r"dropped +4 +malformed answer", out)
    assert re.search(r"dropped +2 +item without question or quote", out)
    assert len(entries(work.out)) == 1  # only the sixth, well-formed answer


def test_a_prompt_refused_by_a_content_filter_is_skipped(work, capsys):
    refused = {"error": {"code": "content_filter", "message": "The response was filtered"}}
    with ChatServer(key=KEY) as srv:
        srv.then(Reply(400, body=json.dumps(refused).encode()))
        code, out, err = gen(work, srv, "--chunks", "2", capsys=capsys)
    assert code == 0, err
    assert re.search(r"dropped +1 +prompt rejected by the endpoint", out) and len(srv.seen) == 2
    assert {e["origin"]["chunk"] for e in entries(work.out)}  # the second chunk still counted


def test_only_malformed_answers_is_an_error_and_writes_nothing(work, capsys):
    with ChatServer(key=KEY) as srv:
        srv.then(Reply(body=b"not json"), Reply(body=b"not json"))
        code, _, err = gen(work, srv, "--chunks", "2", capsys=capsys)
    assert code == 2 and "no usable answer" in err and "2 malformed" in err
    assert not work.out.exists()


def test_quotes_not_verbatim_in_the_document_are_dropped(work, capsys):
    def answers(body):
        s = [x for x in re.split(r"(?<=[.!?])\s+|\n+", passage_of(body)) if len(x.split()) > 5][0]
        return json.dumps(
            {
                "questions": [
                    {
                        "question": "What is made up?",
                        "quote": "This sentence appears in no document at all.",
                    },
                    {"question": "Too short?", "quote": s.split()[0]},
                    {
                        "question": f"Loosely: {s[:25]}?",
                        "quote": "  " + s.upper().replace("`", "") + " ",
                    },
                ]
            }
        )

    with ChatServer(key=KEY, responder=answers) as srv:
        code, out, err = gen(work, srv, "--chunks", "3", "--per-chunk", "3", capsys=capsys)
    assert code == 0, err
    assert re.search(r"dropped +3 +quote not in the document", out)
    assert re.search(r"dropped +3 +quote too short", out)
    new = entries(work.out)
    assert len(new) == 3 and all(e["query"].startswith("Loosely") for e in new)
    for e in new:  # the loose quote is stored as the document's own text
        ev = e["evidence"][0]
        assert ev["quote"] in work.docs[ev["doc"]].text and not ev["quote"].isupper()


def test_near_duplicates_of_the_golden_set_and_each_other_are_dropped(work, capsys):
    def answers(body):
        s = [x for x in re.split(r"(?<=[.!?])\s+|\n+", passage_of(body)) if len(x.split()) > 5][0]
        return json.dumps(
            {
                "questions": [
                    {
                        "question": "How many weeks of paid parental leave do I get?",
                        "quote": s,
                    },  # q01
                    {"question": "How many weeks of paid parental leave do we get", "quote": s},
                    {"question": f"Where does it say {s[:30]}?", "quote": s},
                    {"question": f"where does it say {s[:30].upper()}", "quote": s},
                ]
            }
        )

    with ChatServer(key=KEY, responder=answers) as srv:
        code, out, err = gen(work, srv, "--chunks", "2", "--per-chunk", "4", capsys=capsys)
        assert code == 0, err
        assert len(entries(work.out)) == 2  # one "Where does it say" per chunk
        assert re.search(r"dropped +6 +near-duplicate question", out)
        assert "~ 'How many weeks of paid parental leave do I get?'" in out
        work.out.unlink()
        code, _, _ = gen(
            work,
            srv,
            "--chunks",
            "2",
            "--per-chunk",
            "4",
            "--dedupe-threshold",
            "0.95",
            capsys=capsys,
        )
    assert code == 0
    # "...do we get" (similarity 0.9 to q01) now stays, once: the second chunk's repeats it
    assert [e["query"] for e in entries(work.out)].count(
        "How many weeks of paid parental leave do we get"
    ) == 1
    assert len(entries(work.out)) == 3


def test_request_budget_counts_every_attempt(work, capsys):
    with ChatServer(key=KEY) as srv:
        srv.then(Reply(503, body=b"{}"))
        code, out, err = gen(work, srv, "--chunks", "5", "--max-requests", "3", capsys=capsys)
    assert code == 0 and len(srv.seen) == 3
    assert "stopped early: request budget of 3 spent" in err
    assert (
        "spent 3 of 3 requests" in out
        and len({e["origin"]["chunk"] for e in entries(work.out)}) == 2
    )


@pytest.mark.parametrize("usage, limit, requests", [(100, 2000, 5), (None, 1, 0)])
def test_token_budget_uses_reported_usage_else_an_estimate(work, capsys, usage, limit, requests):
    with ChatServer(key=KEY, usage=usage) as srv:
        code, _, err = gen(
            work,
            srv,
            "--chunks",
            "5",
            "--max-tokens",
            str(limit),
            "--max-answer-tokens",
            "100",
            capsys=capsys,
        )
    assert len(srv.seen) == requests
    assert ("token budget" in err) == (requests < 5)


@pytest.mark.parametrize("usage", [None, 150])
def test_the_budget_is_checked_before_sending_so_it_is_never_overshot(work, capsys, usage):
    """Before: each request was sent while anything was left, and the last one overshot by its
    own size (2.5x with small budgets). Now each request's worst case must fit what is left."""
    with ChatServer(key=KEY, usage=usage) as srv:
        _, out, err = gen(
            work,
            srv,
            "--chunks",
            "20",
            "--max-tokens",
            "800",
            "--max-answer-tokens",
            "100",
            capsys=capsys,
        )
    spent, limit = (
        int(x.replace(",", "")) for x in re.search(r"([\d,]+) of ([\d,]+) tokens", out).groups()
    )
    assert 0 < len(srv.seen) < 5 and "token budget" in err
    assert spent <= limit == 800


def test_refuses_to_write_into_the_golden_set(work, capsys):
    sneaky = work.golden.parent / ".." / "golden" / "golden.jsonl"
    with ChatServer(key=KEY) as srv:
        link = work.golden.parent / "link.jsonl"
        link.symlink_to(work.golden)
        for out in (sneaky, link):
            code, _, err = gen(work, srv, "--out", str(out), capsys=capsys)
            assert code == 2 and "refusing to write generated questions into the golden set" in err
        other = work.golden.parent / "copy.jsonl"
        shutil.copy(work.golden, other)
        code, _, err = gen(work, srv, "--out", str(other), capsys=capsys)
        assert code == 2 and "not source synthetic" in err
        assert srv.seen == []
    assert work.golden.read_bytes() == work.before and other.read_bytes() == work.before


def test_the_key_is_never_printed_even_when_the_endpoint_echoes_it(work, capsys):
    echo = json.dumps({"error": {"message": f"bad request from key {KEY}"}}).encode()
    with ChatServer(key=KEY) as srv:
        srv.then(Reply(400, body=echo))
        code, out, err = gen(work, srv, capsys=capsys)
    assert code == 2 and "HTTP 400" in err and "***" in err
    assert KEY not in out + err
    with ChatServer(key="another-key") as srv:
        code, out, err = gen(work, srv, capsys=capsys)
    assert code == 2 and "refused the credentials (HTTP 401)" in err and "$OPENAI_API_KEY" in err
    assert KEY not in out + err


def test_redirects_are_not_followed_and_404_names_the_likely_fix(work, capsys):
    with ChatServer(key=KEY) as srv, ChatServer() as elsewhere:
        srv.then(
            Reply(302, body=b"", headers={"Location": elsewhere.base_url + "/chat/completions"})
        )
        code, _, err = gen(work, srv, capsys=capsys)
        assert code == 2 and "redirected (HTTP 302)" in err
        assert len(srv.seen) == 1 and elsewhere.seen == []  # the key never went to another host
        code = main(
            [
                "golden",
                "generate",
                str(work.golden),
                "--model",
                "m",
                "--no-progress",
                "--base-url",
                srv.root,
            ]
        )
    err = capsys.readouterr().err
    assert code == 2 and "HTTP 404" in err and "/v1" in err


def test_a_second_run_appends_with_unique_ids_and_dedupes_against_the_first(work, capsys):
    with ChatServer(key=KEY) as srv:
        assert gen(work, srv, "--chunks", "3") == 0
        first = work.out.read_text()
        assert gen(work, srv, "--chunks", "3") == 0  # same seed: the same questions again
        assert work.out.read_text() == first
        assert gen(work, srv, "--chunks", "3", "--seed", "7") == 0
    text = work.out.read_text()
    ids = [e["id"] for e in entries(work.out)]
    assert (
        text.startswith(first) and len(ids) > len(first.splitlines()) and len(set(ids)) == len(ids)
    )
    assert "near-duplicate question" in capsys.readouterr().out


def test_synthetic_share_is_printed_and_stats_warn_on_golden_plus_generated(work, capsys):
    with ChatServer(key=KEY) as srv:
        code, out, err = gen(work, srv, "--chunks", "6", "--per-chunk", "2", capsys=capsys)
    assert code == 0
    n = len(entries(work.out))
    share = (2 + n) / (8 + n)  # the mini golden set: 8 queries, 2 synthetic
    assert share > 0.4 and f"{8 + n} queries, {share:.0%} synthetic" in out
    assert "above 40%" in err
    assert main(["golden", "stats", str(work.golden)]) == 0
    assert "synthetic" not in capsys.readouterr().err  # 25% alone
    assert main(["golden", "stats", str(work.golden), "--with", str(work.out)]) == 0
    out, err = capsys.readouterr()
    assert f"{8 + n} queries" in out and f"{share:.0%} of the queries are synthetic" in err
    copy = shutil.copy(work.golden, work.golden.with_name("copy.jsonl"))
    assert main(["golden", "stats", str(work.golden), "--with", str(copy)]) == 0
    assert f"8 ids of {copy} are also used earlier, e.g. 'q01'" in capsys.readouterr().err


def test_settings_from_a_config_file_and_the_environment(work, monkeypatch, capsys, tmp_path):
    with ChatServer(key=KEY) as srv:
        cfg = tmp_path / "llm.yaml"
        cfg.write_text(f"base_url: {srv.base_url}\nmodel: from-file\nmax_requests: 1\n")
        code = main(["golden", "generate", str(work.golden), "--config", str(cfg), "--no-progress"])
        assert code == 0 and srv.seen[-1].body["model"] == "from-file" and len(srv.seen) == 1
        monkeypatch.setenv("RAGEVAL_LLM_BASE_URL", srv.base_url)
        monkeypatch.setenv("RAGEVAL_LLM_MODEL", "from-env")
        assert main(["golden", "generate", str(work.golden), "--no-progress", "--chunks", "1"]) == 0
        assert srv.seen[-1].body["model"] == "from-env"
    monkeypatch.delenv("RAGEVAL_LLM_MODEL")
    capsys.readouterr()
    bad = {
        "model: m\nbase_url: http://x\napi_key: sk-123456\n": (
            f"{cfg}:3: 'api_key': never put an API key"
        ),
        "model: m\nbase_urls: http://x\n": f"{cfg}:2: unknown key 'base_urls'; valid keys:",
        "model: m\ntimeout: soon\n": f"{cfg}:2: 'timeout' must be float",
        "- a list\n": "expected a mapping",
        "base_url: http://x\n": "no model for the chat endpoint: pass --model",
    }
    for text, message in bad.items():
        cfg.write_text(text)
        assert main(["golden", "generate", str(work.golden), "--config", str(cfg)]) == 2
        assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    "content, pairs",
    [
        ('{"questions": [{"question": "A?", "quote": "a b"}]}', [("A?", "a b")]),
        ('```json\n[{"question": " A\\n? ", "quote": "a"}]\n```', [("A ?", "a")]),
        (
            '<think>{"x": 1}</think>Here: {"questions": [{"question": "B?", "quote": "b"}]} ok',
            [("B?", "b")],
        ),
    ],
)
def test_parse_questions_accepts_common_wrappings(content, pairs):
    assert parse_questions(content) == (pairs, 0)


def test_parse_questions_rejects_answers_without_json():
    with pytest.raises(chat.MalformedAnswer, match="not JSON"):
        parse_questions("I cannot help with that.")


def test_dedupe_keeps_the_first_of_each_near_duplicate_group():
    cands = [Candidate(q, "d", "quote", "d:0") for q in ("a b c", "A B C", "d e f", "a b c d")]
    kept, dups = dedupe(cands, ["x y z"], FakeEncoder(), 0.9)
    assert [c.question for c in kept] == ["a b c", "d e f", "a b c d"]  # cos("abc","abcd") = .87
    assert dups == [("A B C", "a b c")]


def test_control_and_bidi_characters_are_stripped_and_listed_for_review(work, capsys):
    """A hostile endpoint's escapes must not reach the golden file or a reviewer's terminal."""

    def hostile(body):
        items = json.loads(template_questions(body))["questions"]
        for it in items:
            it["question"] = "\x1b[31mWhat\x1b[0m does \u202eit\u202c say\x07 about\u200b this?"
            it["quote"] = "\u2066" + it["quote"] + "\u2069"
        return json.dumps({"questions": items})

    with ChatServer(key=KEY, responder=hostile) as srv:
        code, out, _ = gen(work, srv, "--chunks", "2", "--per-chunk", "1", capsys=capsys)
    got = entries(work.out)
    assert code == 0 and got
    raw = work.out.read_text()
    for bad in ("\x1b", "\u202e", "\u202c", "\x07", "\u200b", "\u2066", "\u2069"):
        assert bad not in raw and bad not in out
    assert got[0]["query"] == "What does it say about this?"
    removed = got[0]["origin"]["removed_characters"]
    assert removed["ANSI escape sequence"] == 2
    assert (
        removed["U+202E RIGHT-TO-LEFT OVERRIDE"] == 1
        and removed["U+2066 LEFT-TO-RIGHT ISOLATE"] == 1
    )
    assert "removed" in out and "origin.removed_characters" in out
    assert load_golden(work.out).queries  # still a valid golden file


def _raw_server(handler):
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class H(BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            handler(self)

        def log_message(self, *a):
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    return srv


def _client(srv, **cfg):
    host, port = srv.server_address[:2]
    config = chat.EndpointConfig(f"http://{host}:{port}/v1", "m", max_retries=0, **cfg)
    return chat.ChatClient(config, environ={})


MESSAGES = [{"role": "user", "content": "hi"}]
COMPLETION = json.dumps({"choices": [{"message": {"content": "ok"}}]}).encode()


def test_a_drip_feeding_endpoint_hits_the_total_deadline():
    """One byte every 50 ms resets a socket timeout forever; the request's deadline does not."""
    sent = []

    def drip(h):
        body = COMPLETION + b" " * 200  # ~12 s at this pace: a valid answer, if one waited
        h.send_response(200)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        for i in range(len(body)):
            try:
                h.wfile.write(body[i : i + 1])
                h.wfile.flush()
            except OSError:
                return
            sent.append(i)
            time.sleep(0.05)

    import time

    srv = _raw_server(drip)
    try:
        with pytest.raises(chat.EndpointError, match=r"no complete answer within 1 s"):
            _client(srv, timeout=1.0).complete(MESSAGES)
    finally:
        srv.shutdown()
    assert len(sent) < len(COMPLETION) + 200


@pytest.mark.parametrize("declared", [True, False])
def test_a_huge_answer_is_refused_without_reading_it_whole(declared):
    size = 3_000_000

    def huge(h):
        h.send_response(200)
        if declared:
            h.send_header("Content-Length", str(size))
        h.send_header("Connection", "close")
        h.end_headers()
        with contextlib.suppress(OSError):
            for _ in range(size // 65536 + 1):
                h.wfile.write(b"x" * 65536)

    srv = _raw_server(huge)
    budget = chat.Budget(max_tokens=10_000)
    try:
        client = _client(srv, max_response_bytes=1_000_000)
        client.budget = budget
        with pytest.raises(chat.MalformedAnswer, match=r"1,000,000"):
            client.complete(MESSAGES)
    finally:
        srv.shutdown()
    assert budget.tokens > 0  # counted at its worst case: it may have cost that much
