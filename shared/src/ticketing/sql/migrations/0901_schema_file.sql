-- depends: 0900_outbox_quarantine
-- Which text of the service's sql/schema.sql (its functions and triggers as they are now) this schema has, by
-- digest: ticketing.migrations applies the file again when it changed, or when a migration ran.

CREATE TABLE schema_file (
    name       TEXT PRIMARY KEY,  -- the service package (hold_service)
    sha256     TEXT        NOT NULL,
    applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
