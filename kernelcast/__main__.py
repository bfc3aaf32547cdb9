from kernelcast.cli import main

raise SystemExit(main())
