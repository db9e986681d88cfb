"""The command line, ``python -m core``: everything the app shows, produced headless as JSON.

:mod:`core.cli.main` builds the parser, checks the arguments and runs a command; one module per group of
subcommands, and the pieces they share (:mod:`~core.cli.common`, :mod:`~core.cli.output`, :mod:`~core.cli.progress`,
:mod:`~core.cli.config_file`). Every module here imports only light floors at module level (no torch), so refused
input answers at once; the commands import the library inside their functions."""
