"""Leakage: personal data and secrets in the answer and in the retrieved context.

This docstring is the one place that explains the family; each module's own says only what it
does. Measured alarm rates, costs and the option tables: docs/evaluators-online.md
(``pii_leakage``, ``sensitive_data``).

**What it measures.** Two evaluators, after H2O Eval Studio's "PII Leakage Evaluator" and
"Sensitive Data Leakage Evaluator", each checking the actual answer and the retrieved context:

- ``pii_leakage`` (``pii.PiiLeakage``): personal data. A regex suite that "quickly and
  reliably" detects formatted PII (``ragtrace._redaction.pii_patterns``: e-mail addresses,
  phone numbers, credit cards with the Luhn check, US SSNs with the SSA's validity rules,
  IBANs with mod-97, IPv4/IPv6), each candidate checked by rule; names and places by
  Presidio's NER over the packaged spaCy model (``ragtrace._backends.ner``) are opt-in
  (``ner=True``).
- ``sensitive_data`` (``sensitive_data.SensitiveDataLeakage``): secrets, the catalogue's
  formatted security data ("certificates in SSL/TLS PEM format, API keys ... and activation
  keys for Windows"), by a regex suite (``ragtrace._redaction.secret_patterns``: keys, tokens,
  JWTs, passwords, PEM blocks, credentials in URLs).

The same detectors redact text before it is stored or sent (``ragtrace._redaction``: the
``secrets`` policy masks what ``find_secrets`` finds, ``pii`` also what ``find_pii`` finds).

**Scores** (``base.LeakageEvaluator``; a subclass only says how to find things in a batch of
texts, ``detect(texts) -> list[list[Finding]]``), one per checked target (``targets=``):

- ``<name>.answer``: the response (the catalogue's generation leakages);
- ``<name>.context``: the retrieved chunks together (its retrieval leakages), emitted only when
  the record has chunks.

Each value is 1.0 when nothing was found and 0.0 when something was: higher is better, default
threshold 0.5, so ``passed`` is the catalogue's "no leakage" boolean ("No PII leakages (pass)",
"No sensitive data leakages (pass)") and the mean over records is its pass rate (the primary
metric); one minus it is the leakage rate. A target whose threshold is None is information,
not an alarm: ``passed`` is None (never a ``fail`` in ``ragtrace_evaluations_total``) and the
label ``found`` or ``none``.

**Operating points** (``threshold=``). ``sensitive_data`` has one, ``default``: both targets
are alarms (a found/not-found score has no threshold to trade). For ``pii_leakage``,
``"default"`` and ``"lenient"``: the answer fails on any finding (a structured identifier
reached a user) and the context is information, whose one minus its mean over records is the
share of retrievals that carried PII (the quality dashboard's "PII in the knowledge base"
panel). A knowledge base that holds a support phone number or names people is normal; an
answer that repeats them is the leak, and the answer's finding says so (``in_context``).
``"strict"`` (or a number) makes the context an alarm too.

**Details.** Found values are never echoed: labels and explanations name types and counts
only, and each finding in ``details["findings"]`` carries its type, offsets, detector, chunk
index (context) and a ``masked`` preview in which every letter and digit is replaced by ``*``
(separators kept, so ``a.b@c.com`` reads ``*.*@*.***``). An answer finding also says whether
the same value occurs in the retrieved context (letters and digits compared
case-insensitively, among the context's findings or, for values of 4+ such characters,
anywhere in its text): ``in_context`` true means the answer repeated what retrieval handed it
(leaked from retrieval), false that the model produced it.

**Allowed values** (``allow.AllowList``). ``allow=`` names values that are not leaks for this
application: its product names (which a small NER model reads as people: "Aurora" is a PERSON
to spaCy's small English model), its public support address, the example key of its
documentation. An entry matches a finding whose text is the same once case, spacing and
punctuation are ignored and a leading "the"/"a"/"an" is dropped; an entry starting with
``REGEXP:`` must match the whole finding text, with or without that article
(case-insensitive). Allowed findings are left out of the value but counted in
``details["allowed"]``, so nothing is dropped silently.

**Bad input and bounds.** None becomes empty text, bytes are decoded as UTF-8 with
replacement, other objects go through ``str()``, lone surrogates become ``?`` (offsets
unchanged: ``ragtrace.evaluators._text.clean_text``). Each text is scanned up to ``max_chars``
characters (50,000 for ``pii_leakage``, NER included, which bounds a record's cost at a few
seconds; 200,000 for ``sensitive_data``); ``details["truncated"]`` says when a text was cut.
At most ``max_chunks`` chunks are scanned (``details["chunks_skipped"]`` counts the rest) and
``MAX_FINDINGS_LISTED`` (50) findings listed; ``counts`` covers them all. The query is not
checked: it is the user's own text.

**Why NER is opt-in.** Measured on answers known to be fine (``benchmarks/alarms.py``), NER's
PERSON and LOCATION failed 76% of RAGTruth's faithful answers and 37% over all data sets: every
news summary names people and places, and a names-are-PII policy fails them all. The
catalogue defines PII leakage by structured patterns; those are the default. Turn NER on
where any name in an answer is a leak (a patient portal, an HR assistant), and expect it to
fire on ordinary text that names anyone: every personal name and place is flagged, public
figures and cities included ("Marie Curie was born in Warsaw" fails the check). Narrow
``entities`` where answers legitimately name some kinds; any other Presidio entity type
(``US_DRIVER_LICENSE``, ``UK_NHS``, ``URL``, ...) may be listed there too, and Presidio's own
recognisers find those. NER results below ``ner_min_score`` (0.5; spaCy's are all 0.85) are
dropped.

**Overlaps.** Where two findings overlap, one is kept
(``ragtrace._redaction.findings.resolve_overlaps``): for PII the validated regex type wins over
NER (an e-mail's local part is not also a PERSON) and, among regexes, the more specific type
(``ragtrace._redaction.pii_patterns.PRIORITY``: an SSN is not also a phone number); for
secrets the more specific type (a JWT after ``Bearer`` is a JWT).

**NER on candidate sentences** (``candidates``). ``ner_candidates_only`` (off by default) lets
NER read only the sentences that show a sign of a proper noun (a capital past the first word,
a digit, ...), for PERSON, LOCATION and ORGANIZATION only. It is cheaper where most sentences
name no one, but not lossless: a name read without its neighbouring sentences is sometimes
missed (18 of 1,461 NER findings lost and 7 gained on the PII dev rows,
``docs/decisions/cold-record-options.md``), so the accurate path, whole texts, is the default.

Modules: ``base`` (records in, answer and context Scores out), ``allow`` (the allow list),
``candidates`` (the sentences NER reads), ``pii`` and ``sensitive_data`` (the two evaluators).
The detectors themselves sit below capture, in ``ragtrace._redaction``, because the redaction
policy uses them too: ``findings`` (``Finding``, overlaps, how values compare),
``pii_patterns`` and ``secret_patterns`` (the two regex suites) and ``surroundings`` (how both
read a value's surroundings: word boundaries beside CJK text, URL and JSON escapes decoded).
"""

# The family's evaluators are built by name (``ragtrace.evaluators.create("pii_leakage")``).
__all__: list[str] = []
