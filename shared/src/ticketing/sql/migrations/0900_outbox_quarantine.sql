-- depends: 0000_outbox_inbox
-- Outbox quarantine: a row that Kafka refuses for good (too large, an illegal topic name, headers that
-- cannot be sent) is set aside by the relay instead of stopping it (ticketing/relay/batches.py says why and what
-- happens to the order of its key). The row is kept, unpublished, with the refusal and its time;
-- `ticketing outbox replay` clears `quarantined_at` to put it back in line and keeps the error as history.
--
-- Plain added columns with no default: no table rewrite, a short lock only, safe under a running relay.

ALTER TABLE outbox
    ADD COLUMN quarantined_at   TIMESTAMPTZ,
    ADD COLUMN quarantine_error TEXT;

-- The relay looks here for every row it claims (is an earlier row of the same key in quarantine?), so the
-- index holds only quarantined rows: usually none, so the look-up costs nearly nothing.
CREATE INDEX outbox_quarantined ON outbox (topic, message_key, id) WHERE quarantined_at IS NOT NULL;
