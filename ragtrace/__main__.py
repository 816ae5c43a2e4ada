"""``python -m ragtrace`` is the ``ragtrace`` command."""

from ragtrace._cli import main

raise SystemExit(main())
