"""`python -m wkhost.cli`: the same as the `wkhost` command."""

from .main import main

raise SystemExit(main())
