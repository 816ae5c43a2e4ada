"""``python -m ragtrace.offline ARGS`` is ``ragtrace eval ARGS``."""

from __future__ import annotations

from ragtrace.offline.cli import main

raise SystemExit(main())
