from beavertui.cli import main

raise SystemExit(main())
