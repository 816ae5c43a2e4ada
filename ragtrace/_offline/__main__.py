"""``python -m ragtrace._offline ARGS`` is ``ragtrace eval ARGS``."""

from __future__ import annotations

from ragtrace._offline.cli import main

raise SystemExit(main())
