from nrirp.app.cli import main

raise SystemExit(main())
