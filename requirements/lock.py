"""Regenerate the locks `make venv` and `make bench-env` install from (so CI does too).

``torch.lock`` holds torch alone (the local CPU wheel, installed first), ``dev.lock`` the rest
of the development environment, ``peers.lock`` the peers' benchmark environment,
``phoenix.lock`` Arize Phoenix's own environment (its live test and ``phoenix_check.py``).

    make lock          # runs: python3 requirements/lock.py --no-deps <the judge's weight packages>

Resolves, without installing anything (``pip install --dry-run --report`` in a throw-away
virtual environment), what the development environment holds: ``torch==2.13.0`` (the local
CPU wheel), ragtrace's ``dev`` extra and everything it pulls, setuptools for the editable
install and pip itself; then the judge's weight packages named on the command line, without
their declared dependencies (as the Makefile installs them); and, apart, the peers' environment
of ``requirements/peers.txt``. Each package is written pinned to the version pip
chose, with the sha256 of the very file it chose, so that ``pip install --require-hashes
--no-deps -r requirements/dev.lock`` installs exactly that set or fails. The resolution is for
this interpreter and platform (CPython 3.11, manylinux x86-64: the machines CI runs on).

``--keep`` (the default) hands pip the versions the current locks pin (names and versions, not
hashes) as constraints (``-c``), so a re-lock only adds what is new (a new requirement and what
it pulls) and leaves every locked package, hash and all, as it was; a requirement that needs
another version of a locked package then fails to resolve. ``--no-keep`` resolves everything
afresh, to the newest versions the requirements allow:

    python3 requirements/lock.py --no-keep --no-deps <the judge's weight packages>
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
import tempfile
import tomllib
import venv
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import unquote, urlsplit

ROOT = Path(__file__).resolve().parent.parent
HEADER = (
    "# Made by `make lock` (requirements/lock.py) for CPython {python} on {platform}; do not\n"
    "# edit. Installed with: pip install --require-hashes --no-deps -r {name}\n"
)
TORCH = "torch==2.13.0"
PHOENIX = "arize-phoenix==20.26.1"
_SELF = re.compile(r"^ragtrace\[([^\]]+)\]$")
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)")


def dev_requirements() -> list[str]:
    """ragtrace's dependencies and its ``dev`` extra, with its own extras expanded."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    wanted, seen = list(project["dependencies"]), set()
    pending = ["dev"]
    while pending:
        extra = pending.pop()
        if extra in seen:
            continue
        seen.add(extra)
        for requirement in extras[extra]:
            inner = _SELF.match(requirement.replace(" ", ""))
            if inner:
                pending.extend(inner.group(1).split(","))
            else:
                wanted.append(requirement)
    return sorted(set(wanted))


def pins(*locks: Path) -> list[str]:
    """``name==version`` of every package the given locks hold (those that exist)."""
    found = []
    for lock in locks:
        if lock.exists():
            for line in lock.read_text().splitlines():
                pin = _PIN.match(line)
                if pin:
                    found.append(f"{pin.group(1)}=={pin.group(2)}")
    return sorted(set(found))


def resolve(
    python: Path, requirements: list[str], *, no_deps: bool = False, keep: Sequence[str] = ()
) -> list[str]:
    """``name==version --hash=sha256:...`` of every package pip would install.

    ``keep``: ``name==version`` pins handed to pip as constraints (the current lock's).
    """
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        command = [str(python), "-m", "pip", "install", "--quiet", "--dry-run",
                   "--ignore-installed", "--report", str(report)]  # fmt: skip
        if no_deps:
            command.append("--no-deps")
        if keep:
            constraints = Path(tmp) / "constraints.txt"
            constraints.write_text("".join(f"{pin}\n" for pin in keep))
            command += ["-c", str(constraints)]
        subprocess.run([*command, *requirements], check=True, cwd=tmp)
        chosen = json.loads(report.read_text())["install"]
    lines = []
    for item in chosen:
        name, version = item["metadata"]["name"].lower(), item["metadata"]["version"]
        lines.append(f"{name}=={version} \\\n    --hash=sha256:{_sha256(item['download_info'])}")
    return lines


def _sha256(download: dict[str, object]) -> str:
    info = download.get("archive_info")
    hashes = info.get("hashes", {}) if isinstance(info, dict) else {}
    if isinstance(hashes, dict) and "sha256" in hashes:
        return str(hashes["sha256"])
    url = str(download["url"])
    if not url.startswith("file:"):
        raise SystemExit(f"no sha256 for {url}")
    return hashlib.sha256(Path(unquote(urlsplit(url).path)).read_bytes()).hexdigest()


def write(path: Path, lines: list[str]) -> None:
    header = HEADER.format(
        python=".".join(map(str, sys.version_info[:2])),
        platform=sys.platform,
        name=path.relative_to(ROOT),
    )
    path.write_text(header + "".join(f"{line}\n" for line in sorted(set(lines))))
    print(f"{path.relative_to(ROOT)}: {len(set(lines))} packages")


def main() -> None:
    parser = argparse.ArgumentParser(description="Regenerate requirements/*.lock")
    parser.add_argument(
        "--no-deps",
        nargs="*",
        default=[],
        metavar="PKG==V",
        help="packages installed without their dependencies (the judge's weights)",
    )
    parser.add_argument(
        "--keep",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="keep the versions the current locks pin, adding only what is new (default); "
        "--no-keep resolves everything afresh",
    )
    args = parser.parse_args()
    locks = ROOT / "requirements"
    kept = {
        name: pins(*(locks / f"{lock}.lock" for lock in sources)) if args.keep else []
        for name, sources in {
            "dev": ("torch", "dev"),
            "peers": ("peers",),
            "phoenix": ("phoenix",),
        }.items()
    }
    with tempfile.TemporaryDirectory(prefix="ragtrace-lock-") as tmp:
        venv.EnvBuilder(with_pip=True).create(tmp)
        python = Path(tmp) / "bin" / "python"
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--upgrade", "pip"],
                       check=True)  # fmt: skip
        tools = ["setuptools>=68", "pip"]
        dev = resolve(python, [TORCH, *dev_requirements(), *tools], keep=kept["dev"])
        judge = (
            resolve(python, args.no_deps, no_deps=True, keep=kept["dev"]) if args.no_deps else []
        )
        torch = [line for line in dev if line.startswith("torch==")]
        write(ROOT / "requirements" / "torch.lock", torch)
        write(ROOT / "requirements" / "dev.lock", [x for x in dev + judge if x not in torch])
        peers = resolve(python, ["-r", str(ROOT / "requirements" / "peers.txt"),
                                 *tools], keep=kept["peers"])  # fmt: skip
        write(ROOT / "requirements" / "peers.lock", peers)
        phoenix = resolve(python, [PHOENIX, *tools], keep=kept["phoenix"])
        write(ROOT / "requirements" / "phoenix.lock", phoenix)


if __name__ == "__main__":
    main()
