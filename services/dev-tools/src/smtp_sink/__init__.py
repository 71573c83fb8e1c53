"""The dev SMTP sink (server.py): it keeps every e-mail the notifier sends as one `.eml` file. A dev tool: only
the dev image and the dev venv hold it, never the production image."""
