"""Presentation marks and announcements in an answer: what the claim splitter reads past.

Marks of these shapes are blanked: numbered and bulleted list markers, bold text and headings,
citation markers (``[1]``, ``[^2]``, ``【3†source】``), a leading ``Answer:`` label, a source line
(``Sources: ...``, ``(Source: help centre)``) and attributions to the material the assistant was
given ("According to the context, ..."): read as text, ``[1]`` is a number the passages lack and
"help centre" words they may not hold.

``blank_markup`` returns the answer with each such mark replaced by spaces, so every other
character keeps its offset (labelled spans of the training data still line up), and the marks
it blanked; ``blank_announcements`` does the same for a line that only announces what follows.
A number inside a sentence, a bracket holding words, or an attribution to a named source
("According to NASA") stays, because that is something the passages must support. Every
pattern is anchored or bounded, so the pass is linear in the answer's length.
"""

from __future__ import annotations

import re

# Citation markers: [1], [1, 2], [2-4], [^3], 【4†source】, [doc 2], [source 1].
_CITATION = re.compile(
    r"\[\^?\d{1,4}(?:\s{0,2}[,;\-\u2013]\s{0,2}\d{1,4}){0,20}\]"
    r"|\u3010[^\u3011\n]{0,80}\u3011"
    r"|\[(?:source|doc|document|ref|reference|passage|chunk)\s{0,2}#?\d{1,4}\]",
    re.IGNORECASE,
)
# A list marker opening a line: "1.", "2)", "-", "*", "•", "+"; a heading's "###".
_LIST_MARK = re.compile(r"(?m)^[ \t]{0,8}(?:\d{1,3}[.)]|[-*\u2022+])(?=[ \t])")
_HEADING = re.compile(r"(?m)^[ \t]{0,8}#{1,6}(?=[ \t])")
_EMPHASIS = re.compile(r"\*\*|__")
# "Answer:" or "Response:" opening the answer (after whitespace or marks blanked before it).
_LABEL = re.compile(r"\A\s{0,64}(?:answer|response|short answer|final answer)\s{0,2}:", re.I)
# "(Source: ...)", and a line that opens with "Sources:" or "References:" (the whole line).
_SOURCE = re.compile(
    r"\((?:sources?|refs?|references?|citations?)\s{0,2}:[^()\n]{0,200}\)"
    r"|^[ \t]{0,8}(?:sources?|references?|citations?)[ \t]{0,2}:[^\n]{0,2000}$",
    re.IGNORECASE | re.MULTILINE,
)
_MATERIAL = (
    r"context|passages?|documents?|sources?|articles?|text|information|documentation|docs"
    r"|knowledge base|faqs?|manual|help (?:cent(?:er|re)|pages?)|pages?|guide|policy|excerpts?"
    r"|search results?|retrieved (?:documents?|passages?)"
)
# "According to the context," "Based on the information provided," "As stated in the manual,".
_ATTRIBUTION = re.compile(
    r"\b(?:according to|based on|as (?:stated|mentioned|described|noted|explained) in|per)"
    rf"\s(?:the|your|our|this|these)\s(?:(?:provided|given|retrieved|above|available)\s)?"
    rf"(?:{_MATERIAL})(?:\s(?:provided|given|above|retrieved|available))?\s{{0,2}},?",
    re.IGNORECASE,
)
_PATTERNS = (_SOURCE, _CITATION, _HEADING, _EMPHASIS, _LABEL, _ATTRIBUTION)
# A line that announces what follows and ends with a colon: "Here is a summary of the article
# in 82 words:", "Here's an overview of Finch & Fork based on the provided data:", "Below are
# the steps:". It opens a line or follows a sentence ("Sure! Here's ...:").
_ANNOUNCEMENT = re.compile(
    r"(?:^|(?<=[.!?][ \t]))[ \t]{0,8}"
    r"(?:here(?:'s|\u2019s|[ \t]+is|[ \t]+are)|below[ \t]+(?:is|are)"
    r"|the[ \t]+following[ \t]+(?:is|are))\b[^\n.!?:]{0,200}:[ \t]*$",
    re.IGNORECASE | re.MULTILINE,
)


def _blanked(text: str | None, patterns: tuple[re.Pattern[str], ...]) -> tuple[str, list[str]]:
    """``text`` with every match of ``patterns`` (in order) replaced by spaces, and the matches
    (stripped). None gives ``("", [])``; any other non-string is read as its ``str``."""
    if not text:
        return "", []
    if not isinstance(text, str):
        text = str(text)
    found: list[str] = []

    def blank(match: re.Match[str]) -> str:
        found.append(match.group(0).strip())
        return " " * len(match.group(0))

    for pattern in patterns:
        text = pattern.sub(blank, text)
    return text, found


def blank_markup(text: str | None, *, lists: bool = True) -> tuple[str, list[str]]:
    """``text`` with its presentation marks replaced by spaces (same length, same offsets for
    everything else), and the marks blanked, in the order they were found per kind; list
    markers too unless ``lists`` is False. None gives ``("", [])``."""
    return _blanked(text, (_LIST_MARK, *_PATTERNS) if lists else _PATTERNS)


def blank_announcements(text: str | None) -> tuple[str, list[str]]:
    """``text`` with each line that only announces what follows ("Here is a summary of the
    article in 82 words:") replaced by spaces, and those lines. Such a line says something
    about the answer, not about the sources, so it is no claim to check; the other sentences
    are left exactly as they were. None gives ``("", [])``."""
    return _blanked(text, (_ANNOUNCEMENT,))
