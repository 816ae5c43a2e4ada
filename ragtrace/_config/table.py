"""The tables of options and variables, made from the declarations.

``options_table()`` has one row per ``Config`` option: the ``init`` keyword, its ``RAGTRACE_*``
variable, its settings-file key, its default and what it does (with the rule its values
follow). ``variables_table()`` lists the other ``RAGTRACE_*`` variables. docs/configuration.md
holds both between ``<!-- options-table -->`` markers; ``ragtrace config table`` prints them
and ``tests/config/test_config.py`` checks the page is up to date.
"""

from __future__ import annotations

from ragtrace._config.declared import Config
from ragtrace._config.options import Option, options
from ragtrace._config.variables import VARIABLES

UNSET: dict[str, str] = {
    "evaluators": "unset: the default suite",
    "model_cpu_share": "unset: 0.25 with the default suite",
}
"""What an option left unset (None) stands for, where that is not "none"."""

START = "<!-- options-table: made by `ragtrace config table`; do not edit by hand -->"
END = "<!-- options-table end -->"


def show(value: object) -> str:
    """A value as the table and ``ragtrace config show`` write it."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, tuple):
        return ", ".join(show(getattr(v, "name", v)) for v in value) or "(none)"
    return str(getattr(value, "name", value))


def _row(opt: Option) -> str:
    meaning = opt.help + (f" ({opt.check})" if opt.check is not None else "")
    cells = (
        f"`{opt.name}`",
        f"`{opt.env}`" if opt.env else "-",
        f"`{opt.file}`" if opt.file else "-",
        f"`{show(opt.default)}`" if opt.default is not None else UNSET.get(opt.name, "none"),
        meaning.replace("|", "\\|"),
    )
    return "| " + " | ".join(cells) + " |"


def options_table() -> str:
    """The Markdown table of every option, then the one of the other variables."""
    lines = [
        "| option | variable | settings key | default | meaning |",
        "|---|---|---|---|---|",
        *(_row(o) for o in options(Config)),
        "",
        "Other variables, read where they are used (by every process that uses them):",
        "",
        "| variable | meaning |",
        "|---|---|",
        *(f"| `{name}` | {text} |" for name, text in VARIABLES.items()),
    ]
    return "\n".join(lines)


def readme_section(readme: str) -> str:
    """The part of ``readme`` between the markers (raises ``ValueError`` without them)."""
    start = readme.index(START) + len(START)
    return readme[start : readme.index(END, start)].strip("\n")


def with_table(readme: str) -> str:
    """``readme`` with the part between the markers replaced by the current tables."""
    start = readme.index(START) + len(START)
    end = readme.index(END, start)
    return readme[:start] + "\n" + options_table() + "\n" + readme[end:]
