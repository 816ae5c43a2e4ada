"""``ragtrace models``: check the installed model files, write their docs page, record new ones.

    ragtrace models check                   # every installed model against its sha256; exit 1
    ragtrace models table [--write docs/models.md]
    ragtrace models record                  # after retraining one of ragtrace's own models
    ragtrace models prepare                 # derive the default embedder's int8 copy now

The docs page (docs/models.md) lists each model's origin, license and the sha256 of each file,
from ``ragtrace/_backends/data/model_files.json``; ``tests/test_model_files.py`` checks it is up
to date.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, TextIO

from ragtrace._backends._loading import MissingExtraError
from ragtrace._backends.model_files import ModelFileError, models, record_own, verified

HEAD = """# Model files

Every model file ragtrace loads by itself is checked against the sha256 recorded here before
it is read, imported or unpickled (`ragtrace._backends.model_files`); a file that differs, is
missing or, for a package marked *exact*, is not in this list stops the model from loading with
an error naming the file, both digests and the reinstall command. `ragtrace models check` checks
every installed one. Models you point an evaluator at yourself (a Hugging Face id or folder, a
GGUF file) are loaded as given.

This page is made by `ragtrace models table --write docs/models.md` from
`ragtrace/_backends/data/model_files.json`; after retraining one of ragtrace's own models, run
`ragtrace models record` and that command.
"""


def models_page() -> str:
    """docs/models.md."""
    parts = [HEAD]
    for model in models().values():
        package = f"`{model.distribution}=={model.version}`"
        checked = (
            "by `ragtrace._judges.local`, on the file it loads"
            if model.module is None
            else f"in the folder of `{model.module}`" + (", exact" if model.exact else "")
        )
        parts.append(
            f"## {model.name}\n\n"
            f"| | |\n|---|---|\n| package | {package} |\n| origin | {model.origin} |\n"
            f"| license | {model.license} |\n| used by | {model.used_by} |\n"
            f"| checked | {checked} |\n\n"
            "| file | sha256 |\n|---|---|\n"
            + "".join(f"| `{rel}` | `{sha}` |\n" for rel, sha in model.files.items())
        )
    return "\n".join(parts)


def add_parser(subparsers: Any) -> None:
    """Add ``models`` to the ``ragtrace`` command line."""
    p = subparsers.add_parser("models", help="check model files against their recorded sha256")
    actions = p.add_subparsers(dest="models_command", required=True)
    actions.add_parser("check", help="check every installed model's files")
    table = actions.add_parser("table", help="the docs page of the model files (Markdown)")
    table.add_argument("--write", metavar="FILE", help="write it to this file")
    actions.add_parser("record", help="record the digests of ragtrace's own model files")
    actions.add_parser(
        "prepare",
        help="derive the default embedder's int8 model copy now (at an image's build time: the "
        "first evaluation then finds it, and a read-only deployment needs no writable cache)",
    )


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Run one ``ragtrace models`` action; returns the exit status."""
    out = out or sys.stdout
    if args.models_command == "table":
        if args.write:
            Path(args.write).write_text(models_page(), encoding="utf-8")
        else:
            print(models_page(), file=out, end="")
        return 0
    if args.models_command == "prepare":
        return _prepare(out)
    if args.models_command == "record":
        for rel, sha in record_own().items():
            print(f"{sha}  {rel}", file=out)
        return 0
    failed = 0
    for model in models().values():
        if model.module is None:
            print(f"-     {model.key}: checked by its loader when used", file=out)
            continue
        try:
            folder = verified(model.key)
        except MissingExtraError:
            print(f"-     {model.key}: not installed", file=out)
        except ModelFileError as exc:
            failed += 1
            print(f"FAIL  {model.key}: {exc}", file=out)
        else:
            print(f"ok    {model.key}: {len(model.files)} files in {folder}", file=out)
    return 1 if failed else 0


def _prepare(out: TextIO) -> int:
    from ragtrace._backends.embeddings import INT8_MODEL_ID, int8_model

    try:
        path = int8_model()
    except (MissingExtraError, ModelFileError, OSError) as exc:
        print(f"ragtrace models prepare: {exc}", file=sys.stderr)
        return 1
    print(f"ok    {INT8_MODEL_ID}: {path}", file=out)
    return 0
