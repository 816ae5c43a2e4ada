"""``python -m ragtrace.review list | show ID | label ID ... | export | serve | prune``."""

from ragtrace.review._cli import main

raise SystemExit(main())
