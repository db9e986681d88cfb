import sys

try:
    from core.cli.main import main
except KeyboardInterrupt:  # Ctrl-C while the (light) CLI module loads, before its handler exists
    print("interrupted; cached models are kept", file=sys.stderr)
    sys.exit(130)

sys.exit(main())
