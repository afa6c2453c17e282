"""Grading passages with an LLM through the OpenAI-compatible client (``authoring/chat.py``: its
endpoint settings, budget, retries and secret masking).

One request per (query, passage), with the prompt documented in docs/judging.md. The answer is
parsed strictly: a JSON object ``{"grade": 0|1|2|3, "reason": "..."}`` (inside a code fence or
after a ``<think>`` block is fine); anything else is asked again (``malformed_retries`` times) and
then skipped and counted. A grade is never guessed from free text.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rageval.authoring.chat import BudgetExhausted, ChatClient, MalformedAnswer, Rejected
from rageval.authoring.review import GRADES
from rageval.errors import RagevalError
from rageval.inputs.judgements import MAX_RATIONALE

SYSTEM = (
    "You judge the results of a company's internal search engine: for a question and one "
    "passage, how well the passage answers the question. Answer with JSON only."
)
PROMPT = """Question:
<question>
{query}
</question>

A passage the search engine returned, from the document "{doc}":
<passage>
{text}
</passage>

Grade the passage on this scale:
{scale}
Judge the passage on its own: use only what it says, not what you know from elsewhere.
Answer with JSON only, in this shape:
{{"grade": <0, 1, 2 or 3>, "reason": "<one short sentence>"}}"""
SCALE = "\n".join(f"{g} = {name}: {what}" for g, (name, what) in GRADES.items())
# What a judgement record's ``judge`` says about the prompt: a change of wording is another judge.
PROMPT_VERSION = hashlib.sha256((SYSTEM + PROMPT + SCALE).encode()).hexdigest()[:12]

_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.S | re.I)
_THINK = re.compile(r"^\s*<think>.*?</think>", re.S | re.I)


@dataclass(frozen=True)
class Item:
    """One passage to grade for one query. ``gold`` is the known answer (calibration items only):
    a grade, 0 for a known non-relevant passage."""

    query_id: str
    query: str
    doc: str
    start: int
    text: str
    gold: int | None = None
    origin: str = "pool"

    @property
    def key(self) -> tuple[str, str, int, str]:
        return (self.query_id, self.doc, self.start, self.text)


@dataclass(frozen=True)
class Grade:
    """The judge's answer for one item."""

    item: Item
    grade: int
    reason: str


@dataclass
class Graded:
    """What a grading pass got: answers, and what it skipped or why it stopped."""

    grades: list[Grade] = field(default_factory=list)
    skipped: Counter = field(default_factory=Counter)
    asked: int = 0
    stopped: str | None = None
    error: RagevalError | None = None
    malformed_example: str | None = None


# the prompt's own delimiters, as a passage or question could spell them to close its block
_DELIMITER = re.compile(r"<(\s*/?\s*(?:passage|question)\b)", re.I)


def fenced(text: str) -> str:
    """``text`` as data inside the prompt's blocks: a ``</passage>`` (or ``<question>``...) it
    holds is written ``&lt;/passage>``, so the text cannot end its block and speak as the
    prompt; the document name loses its quotes the same way."""
    return _DELIMITER.sub(r"&lt;\1", text)


def build_messages(item: Item) -> list[dict[str, str]]:
    """The chat messages asking for ``item``'s grade (its texts fenced: :func:`fenced`)."""
    user = PROMPT.format(
        query=fenced(item.query),
        doc=fenced(item.doc).replace('"', "'"),
        text=fenced(item.text),
        scale=SCALE,
    )
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def parse_grade(content: str) -> tuple[int, str]:
    """(grade, reason) from an answer, or MalformedAnswer: the whole answer (a ``<think>`` block
    and one code fence around it aside) must be a JSON object whose ``grade`` is the integer 0, 1,
    2 or 3."""
    text = _THINK.sub("", content).strip()
    fenced = _FENCE.match(text)
    text = fenced.group(1) if fenced else text
    try:
        obj = json.loads(text)
    except ValueError:
        raise MalformedAnswer(f"not a JSON object: {_short(content)!r}") from None
    if not isinstance(obj, dict) or "grade" not in obj:
        raise MalformedAnswer(f'no "grade" key: {_short(content)!r}')
    grade = obj["grade"]
    if isinstance(grade, bool) or not isinstance(grade, int) or grade not in GRADES:
        raise MalformedAnswer(f"grade must be the integer 0, 1, 2 or 3, got {grade!r}")
    reason = obj.get("reason")
    return grade, " ".join(reason.split())[:500] if isinstance(reason, str) else ""


def grade_items(
    client: ChatClient,
    items: Sequence[Item],
    malformed_retries: int = 1,
    progress: bool = True,
    desc: str = "judging",
    known: dict[tuple, Grade] | None = None,
) -> Graded:
    """Grade ``items`` one request each until done, the budget is spent or the endpoint fails for
    good; what was graded is kept either way. ``known`` holds answers already given (an item
    graded during calibration is not asked twice) and gains the new ones."""
    from tqdm.auto import tqdm

    out = Graded()
    known = {} if known is None else known
    for item in tqdm(items, desc=desc, unit="passage", disable=not progress):
        if item.key in known:
            out.grades.append(Grade(item, known[item.key].grade, known[item.key].reason))
            continue
        out.asked += 1
        answer = None
        for _ in range(malformed_retries + 1):
            try:
                answer = parse_grade(client.complete(build_messages(item)))
                break
            except MalformedAnswer as err:
                out.malformed_example = out.malformed_example or client.scrub(str(err))
            except (BudgetExhausted, Rejected, RagevalError) as err:
                answer = err
                break
        if isinstance(answer, BudgetExhausted):
            out.asked -= 1
            out.stopped = str(answer)
            break
        if isinstance(answer, Rejected):
            out.skipped["prompt rejected by the endpoint"] += 1
            continue
        if isinstance(answer, RagevalError):  # retries spent, or the endpoint refused the settings
            out.error = answer
            break
        if answer is None:
            out.skipped[f"malformed answer ({malformed_retries + 1} tries)"] += 1
            continue
        grade = Grade(item, *answer)
        known[item.key] = grade
        out.grades.append(grade)
    return out


def judgement_records(grades: Iterable[Grade], judge: str, at: str) -> list[dict[str, Any]]:
    """Judgement records (the judgements file's shape) for ``grades`` by ``judge``."""
    return [
        {
            "query_id": g.item.query_id,
            "doc": g.item.doc,
            "quote": g.item.text,
            "start": g.item.start,
            "grade": g.grade,
            "judge": judge,
            "at": at,
            **({"rationale": g.reason[:MAX_RATIONALE]} if g.reason else {}),
        }
        for g in grades
    ]


def _short(s: str, n: int = 80) -> str:
    s = " ".join(s.split())
    return s if len(s) <= n else s[: n - 3] + "..."
