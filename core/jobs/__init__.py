"""Jobs: the app's long computations off the server — the queue (:mod:`core.jobs.manager`), the worker process
and its job-kind registry (:mod:`core.jobs.worker`), the navigation map views (:mod:`core.jobs.mapview`) and the
Your model audit (:mod:`core.jobs.own_model_audit`). No Streamlit. A module that registers a job kind lives under
``core`` so the worker can import it by name.

Imports ``core.analyses``, ``core.audit`` and below."""
