from heisenbisect.entry import main

raise SystemExit(main())
