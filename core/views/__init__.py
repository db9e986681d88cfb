"""Views: figures and the HTML report, built from results. Imports ``core.analyses`` and below."""
