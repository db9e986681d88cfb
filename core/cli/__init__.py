"""The command line, ``python -m core`` (:mod:`core.__main__`): everything the app shows, produced headless as JSON.

:mod:`core.cli.main` builds the parser, checks the arguments and runs a command; one module per group of
subcommands (:mod:`~core.cli.analyze`, :mod:`~core.cli.compare`, :mod:`~core.cli.defend`, :mod:`~core.cli.audit`);
the pieces they share: :mod:`~core.cli.common` (one-line errors, options given once, ``--set``),
:mod:`~core.cli.output` (the one way a command writes its JSON, and the ``--out`` checks),
:mod:`~core.cli.progress` (the one progress printer), :mod:`~core.cli.config_file` (``--config`` / ``config --out``).

Every module here imports only light floors at module level (no torch): refused input answers at once, and the
commands import the library (any package of ``core`` below, ``core.jobs`` aside) inside their functions."""
