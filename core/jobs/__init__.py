"""Jobs: the app's long computations off the server — the job queue (:mod:`core.jobs.manager`: one job per
config, kind and parameters, a fair queue of owners, warm worker processes), the worker process and its job-kind
registry (:mod:`core.jobs.worker`, ``python -m core.jobs.worker``), the navigation map views it computes
(:mod:`core.jobs.mapview`) and the Your model page's audit as a kind of its own (:mod:`core.jobs.own_model_audit`).
No Streamlit: the pages (``ui/``) hold a :class:`~core.jobs.manager.JobManager` and draw. A module that registers a
job kind lives where the worker can import it by name, whatever the install: here, under ``core``.

Imports ``core.analyses``, ``core.audit`` and below (the worker runs what the CLI runs)."""
