"""Two tiny help-desk "systems" for ``ragtrace eval --system-callable``: plain functions of the
query, so a real eval run (with real perturbations) feeds a real report."""

from __future__ import annotations

FACTS = {
    "refund": "Refunds are accepted within 30 days of purchase.",
    "shipping": "Shipping takes 3 to 5 business days.",
    "warranty": "The warranty lasts 2 years from delivery.",
    "password": "Reset your password from the login page within 10 days of the email.",
}


def careful(query: str) -> dict[str, object]:
    """Answers from the fact whose keyword the query holds (typos can hide the keyword)."""
    for keyword, fact in FACTS.items():
        if keyword in query.lower():
            return {"answer": fact, "contexts": [fact]}
    return {"answer": "I do not know.", "contexts": []}


def rambling(query: str) -> str:
    """Says the same vague sentence over and over, whatever the question."""
    return "We are looking into it. " * 3 + f"You asked: {query}"
