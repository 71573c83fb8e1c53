"""`python -m smtp_sink --port 1025 --dir var/mail`: the dev SMTP sink (server.py)."""

from smtp_sink.server import main

if __name__ == "__main__":
    raise SystemExit(main())
