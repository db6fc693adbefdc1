from heisenbisect.cli import main

raise SystemExit(main())
