"""``python -m ragtrace`` is the ``ragtrace`` command."""

from ragtrace.cli import main

raise SystemExit(main())
