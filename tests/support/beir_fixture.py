"""A small BEIR-format dataset built by the tests: 39 documents, 33 queries, graded qrels.

Twelve topics with three documents each (a definition, causes, effects); a copy of one document
under another id (identical text: exactly tied scores, only one of them judged relevant); a
document with an empty title, one with no text at all (judged, so it is dropped with a count);
two queries without judgements and one whose judgements are all 0 (both skipped with a count);
and a ``train`` split beside ``test``.
"""

from __future__ import annotations

import json
from pathlib import Path

TOPICS = {
    "volcano": (
        "A volcano is an opening in the crust through which molten rock, ash and gases escape.",
        "Volcanoes form where tectonic plates diverge or converge and magma rises to the surface.",
        "Eruptions bury towns under ash, cool the climate for a year and make soils fertile.",
    ),
    "glacier": (
        "A glacier is a persistent body of dense ice that moves slowly under its own weight.",
        "Glaciers grow where snow accumulates faster than it melts, year after year.",
        "Retreating glaciers raise sea levels and cut U-shaped valleys and fjords.",
    ),
    "coral reef": (
        "Coral reefs are underwater structures built from the calcium carbonate of coral polyps.",
        "Reefs grow in warm, shallow, clear tropical water where sunlight feeds symbiotic algae.",
        "Bleaching from marine heatwaves kills reefs and the fisheries that depend on them.",
    ),
    "honeybee": (
        "The honeybee is a social insect that lives in colonies led by a single queen.",
        "Colonies swarm in spring when the hive gets crowded and a new queen is raised.",
        "Bees pollinate a third of the crops we eat; colony collapse threatens harvests.",
    ),
    "inflation": (
        "Inflation is the general rise of prices that lowers the purchasing power of money.",
        "Prices rise when demand outgrows supply or when central banks print too much money.",
        "High inflation erodes savings, hurts people on fixed incomes and raises interest rates.",
    ),
    "vaccine": (
        "A vaccine trains the immune system to recognise a pathogen without causing disease.",
        "Vaccines are made from weakened viruses, inactivated toxins or messenger RNA.",
        "Mass vaccination eradicated smallpox and makes measles outbreaks rare.",
    ),
    "black hole": (
        "A black hole is a region of spacetime whose gravity lets nothing, not even light, escape.",
        "Black holes form when massive stars collapse at the end of their lives.",
        "Matter falling into a black hole heats up and shines as a quasar across the universe.",
    ),
    "photosynthesis": (
        "Photosynthesis is how plants turn light, water and carbon dioxide into sugar.",
        "Chlorophyll in the chloroplasts absorbs red and blue light to drive the reaction.",
        "Photosynthesis releases the oxygen we breathe and feeds almost every food chain.",
    ),
    "earthquake": (
        "An earthquake is the sudden shaking of the ground as energy is released in the crust.",
        "Earthquakes happen when stress built up along a fault makes the rocks slip.",
        "Strong earthquakes collapse buildings and can trigger tsunamis and landslides.",
    ),
    "antibiotic": (
        "An antibiotic is a medicine that kills bacteria or stops them from multiplying.",
        "Penicillin, the first antibiotic, was discovered in a mould by Alexander Fleming.",
        "Overuse of antibiotics breeds resistant bacteria that no drug can treat.",
    ),
    "blockchain": (
        "A blockchain is a ledger of records linked by cryptographic hashes and shared by peers.",
        "Miners or validators agree on each new block through proof of work or proof of stake.",
        "Blockchains let strangers transfer value without a bank, at a large energy cost.",
    ),
    "monsoon": (
        "A monsoon is a seasonal reversal of winds that brings a long rainy season.",
        "Monsoons arise because land heats faster than the ocean in summer, drawing in moist air.",
        "The monsoon rains water the crops of a billion people and also cause deadly floods.",
    ),
}
ASPECTS = ("what", "cause", "effect")
QUESTIONS = {
    "what": "What is a {t}?",
    "cause": "How does a {t} form and why?",
    "effect": "What are the consequences of a {t}?",
}


def doc_id(topic: str, aspect: str) -> str:
    return f"{topic.replace(' ', '-')}-{aspect}"


def make_beir(root: Path) -> Path:
    """Write the dataset under ``root`` and return ``root``."""
    corpus, queries, test, train = [], [], [], []
    for i, (topic, facts) in enumerate(TOPICS.items()):
        title = topic.capitalize()
        for aspect, fact in zip(ASPECTS, facts, strict=True):
            text = fact
            if aspect == "effect":  # long enough to make several chunks at chunk=32
                text = " ".join([fact, *facts[:2], f"{title}s are studied by many scientists."])
            corpus.append({"_id": doc_id(topic, aspect), "title": title, "text": text})
        for j, aspect in enumerate(ASPECTS[: 2 + i % 2]):
            qid = f"q{i:02d}{j}"
            queries.append({"_id": qid, "text": QUESTIONS[aspect].format(t=topic)})
            test.append((qid, doc_id(topic, aspect), 2))
            test += [(qid, doc_id(topic, a), 1) for a in ASPECTS if a != aspect and i % 3 == 0]
            other = list(TOPICS)[(i + 1) % len(TOPICS)]
            test.append((qid, doc_id(other, aspect), 0))
        train.append((f"q{i:02d}0", doc_id(topic, "what"), 1))
    corpus.append({**corpus[0], "_id": "volcano-what-copy"})  # identical text, not judged
    corpus.append({"_id": "untitled", "title": "", "text": "Lava flows glow red at night."})
    corpus.append({"_id": "blank", "title": "", "text": ""})
    test.append(("q000", "blank", 1))
    queries += [
        {"_id": "unjudged-1", "text": "Who won the world cup?"},
        {"_id": "unjudged-2", "text": "How tall is Mount Everest?"},
        {"_id": "zeros", "text": "Where does lava come from?", "metadata": {}},
    ]
    test.append(("zeros", "untitled", 0))
    (root / "qrels").mkdir(parents=True, exist_ok=True)
    write_jsonl(root / "corpus.jsonl", corpus)
    write_jsonl(root / "queries.jsonl", queries)
    write_qrels(root / "qrels" / "test.tsv", test)
    write_qrels(root / "qrels" / "train.tsv", train)
    return root


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def write_qrels(path: Path, rows: list[tuple[str, str, int]]) -> None:
    lines = ["query-id\tcorpus-id\tscore", *(f"{q}\t{d}\t{g}" for q, d, g in rows)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def read_run_lines(path: Path) -> list[tuple[str, str, float]]:
    rows = [line.split() for line in path.read_text().splitlines()]
    return [(q, d, float(s)) for q, _, d, _, s, _ in rows]


def beir_qrels(root: Path, query_ids) -> dict[str, dict[str, int]]:
    """The test split's qrels for ``query_ids``, read independently, without the empty document."""
    qrels: dict[str, dict[str, int]] = {}
    for line in (root / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        q, d, g = line.split("\t")
        if q in query_ids and d != "blank":
            qrels.setdefault(q, {})[d] = int(g)
    return qrels
