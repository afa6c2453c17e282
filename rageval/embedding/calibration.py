"""The fixed calibration texts of static int8 quantization (``embedding.backend=openvino
embedding.quantize=int8``).

Static quantization fixes each activation's int8 range once, from the activations these texts
produce, so the export depends on the model alone, never on a user's corpus, and every export of a
model is the same. The set is written for this purpose and is neither the demo corpus nor the
probe set (rageval.embedding.backends.PROBE_TEXTS, which measures the export's distance to torch
afterwards): questions, keywords, prose, code, logs, tables, other languages, and passages long
enough to fill the model's 256 word pieces, since a range seen only on short texts would clip the
activations of long ones. Changing it changes the int8 export's format number (its vectors would
differ).
"""

from __future__ import annotations

_LONG_PROSE = (
    "Sourdough starts with a culture of wild yeast and lactic acid bacteria kept alive in a jar "
    "of flour and water. Each feeding dilutes the acids and gives the yeast fresh sugars, and "
    "within a few hours the starter doubles, smells sharp and slightly fruity, and is ready to "
    "leaven a dough. Bakers mix the flour and water first and let them rest, so the flour "
    "hydrates and gluten begins to form without kneading; salt and starter follow. Over the next "
    "four hours the dough is folded every half hour, which strengthens it and evens out its "
    "temperature. It is then shaped, placed seam side up in a floured basket and left in the "
    "refrigerator overnight, where slow fermentation develops flavour and makes the loaf easier "
    "to score. In the morning the oven is heated with a heavy pot inside; the loaf bakes covered "
    "for twenty minutes, trapping steam so the crust stays soft while the bread expands, and "
    "uncovered for another twenty-five, until the crust is deep brown and the loaf sounds "
    "hollow when tapped underneath. Cutting it before it has cooled for an hour lets steam "
    "escape and leaves the crumb gummy."
)
_LONG_TECH = (
    "The service exposes a REST API behind a load balancer that terminates TLS and forwards "
    "requests to a pool of stateless workers. Each worker validates the bearer token against the "
    "identity provider's public keys, which it caches for ten minutes, then reads the tenant's "
    "settings from a key-value store and writes an audit record before touching any data. Write "
    "requests are idempotent: the client sends an Idempotency-Key header, and a retry with the "
    "same key returns the stored response instead of creating a second order. Background jobs "
    "run from a queue with at-least-once delivery, so every handler checks whether its work was "
    "already done. Deployments roll out one availability zone at a time; a canary receives five "
    "percent of the traffic for fifteen minutes, and the rollout halts automatically if the error "
    "rate or the 99th percentile latency rises above the previous release's by more than a fixed "
    "margin. Database migrations are backwards compatible for one release, adding columns before "
    "code uses them and removing them only after no running version reads them, so that a "
    "rollback never needs a schema change. Metrics, traces and structured logs share one request "
    "identifier, which support engineers ask customers for first."
)
_LONG_LEGAL = (
    "This agreement begins on the effective date and continues for an initial term of twelve "
    "months, after which it renews automatically for successive periods of the same length "
    "unless either party gives written notice of non-renewal at least sixty days before the end "
    "of the current term. The supplier shall provide the services with reasonable skill and care "
    "and in accordance with the service levels in the schedule; where a service level is missed "
    "in two consecutive months, the customer may claim the service credits set out there, which "
    "are its sole remedy for that failure. Fees are invoiced monthly in advance and payable "
    "within thirty days of the invoice date; late payments bear interest at the statutory rate. "
    "Either party may terminate for material breach if the breach is not remedied within thirty "
    "days of notice describing it in reasonable detail. Neither party's liability for any claim "
    "shall exceed the fees paid in the twelve months preceding the event giving rise to it, "
    "except for liability that cannot be limited by law. Confidential information remains the "
    "property of the disclosing party and shall be returned or destroyed on request."
)
_LONG_SCIENCE = (
    "Photosynthesis converts light energy into chemical energy in two linked stages. In the "
    "light-dependent reactions, which take place in the thylakoid membranes of the chloroplast, "
    "chlorophyll absorbs photons and passes excited electrons along a transport chain; water is "
    "split to replace them, releasing oxygen, and the flow of electrons pumps protons across the "
    "membrane, driving ATP synthase. The electrons finally reduce NADP+ to NADPH. In the Calvin "
    "cycle, in the stroma, the enzyme RuBisCO fixes carbon dioxide onto a five-carbon sugar, and "
    "the products are reduced with the ATP and NADPH from the first stage into "
    "glyceraldehyde-3-phosphate, some of which leaves the cycle to build glucose and other "
    "molecules while the rest regenerates the acceptor. RuBisCO also reacts with oxygen, a "
    "wasteful process called photorespiration that increases with temperature; C4 and CAM plants "
    "concentrate carbon dioxide around the enzyme, separating the steps in space or in time, "
    "which is why maize and sugarcane thrive in hot climates and cacti can keep their stomata "
    "closed during the day. Overall, six molecules of carbon dioxide and six of water yield one "
    "of glucose and six of oxygen."
)

CALIBRATION_TEXTS: tuple[str, ...] = (
    "what time does the pharmacy close on sundays",
    "best way to remove red wine stain from a carpet",
    "Can I change the delivery address after the order has shipped?",
    "Why does my laptop battery drain so fast when it is asleep?",
    "python read csv skip first two rows",
    "symptoms of vitamin D deficiency in adults",
    "How do I reset two-factor authentication if I lost my phone?",
    "capital gains tax on selling inherited house",
    "The museum reopens in March after a two-year renovation of its east wing, with a new "
    "gallery for textiles and a rooftop café overlooking the river.",
    "Heavy rain is expected across the northern valleys overnight; drivers should allow extra "
    "time, and the mountain pass may close if the snow line drops below 1,200 metres.",
    "To update the firmware, hold the power button for ten seconds until the light blinks "
    "amber, then connect the device to the charger and wait until the light turns solid green.",
    "Refunds are issued to the original payment method within five to seven business days once "
    "the returned item has been inspected at our warehouse.",
    "def retry(fn, attempts=3, delay=0.5):\n    for i in range(attempts):\n        try:\n"
    "            return fn()\n        except TimeoutError:\n"
    "            time.sleep(delay * 2 ** i)\n"
    "    raise RuntimeError('gave up')",
    "2024-06-03T14:22:07Z ERROR worker-7 request_id=9f2c1a timeout after 30000 ms calling "
    "GET /v2/accounts/8812/balance (upstream=ledger, attempt=3/3)",
    "| region | orders | revenue |\n|---|---:|---:|\n| north | 1,204 | 98,310.50 |\n| south | "
    "877 | 71,022.00 |\n| west | 1,530 | 130,447.25 |",
    "docker compose up -d --build && docker compose logs -f api | grep -i 'listening'",
    "La réunion du conseil municipal est reportée à jeudi prochain en raison des travaux.",
    "El tren de alta velocidad conecta ambas ciudades en menos de tres horas.",
    "Die Lieferung verzögert sich um zwei Wochen, weil ein Bauteil fehlt.",
    "東京の天気は明日晴れの予報です。",
    "ok thanks!! 👍 will try that tomorrow and let u know",
    "ISBN 978-0-262-03384-8, pp. 212-245, DOI 10.1145/3292500.3330701",
    _LONG_PROSE,
    _LONG_TECH,
    _LONG_LEGAL,
    _LONG_SCIENCE,
    _LONG_PROSE[:700] + " " + _LONG_SCIENCE[:500],
    _LONG_TECH[:600] + " " + _LONG_LEGAL[:600],
)
