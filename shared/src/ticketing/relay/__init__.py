"""The outbox relay: publishes committed outbox rows to Kafka, in order, at least once.

One module per concern:
- `leadership`: one relay leads per service schema (a session advisory lock; the others wait), woken by
  LISTEN/NOTIFY with a polling fallback; it backs off and starts again after any failure;
- `pump`: the leader's loop over batches, with the next batch claimed while the broker answers this one;
- `batches`: claim, mark and quarantine (the SQL of sql/outbox.sql), and how a batch's answers become marks,
  quarantines and a retry point without breaking per-key order;
- `sending`: the producer's side: a batch enqueued in id order, rows of a key held back behind a row that
  may be refused, all of it bounded by `send_timeout`;
- `records`: a row as a Kafka record, or the reason it can never be one;
- `housekeeping`: the backlog, lag and quarantine gauges, and the retention of published rows.

Failure modes and what covers them:
- two relays of one service: the advisory lock elects one, so per-key order (rows are published in id
  order, and one booking's rows are written in commit order) holds;
- the broker is down, slow, or short of replicas, a topic does not exist yet: the batch stops at the first
  row that failed, only the rows before it are marked, the rest is retried after a backoff with a fresh
  producer (the rows before it are not sent again);
- the relay dies between the broker's ack and the mark: the rows are sent again (duplicates), and every
  consumer drops them by event id;
- a long transaction commits a row with a lower id later: ids are no high-water mark, every fresh claim
  reads all unpublished rows, so the late row goes out on the next wake-up or poll;
- Kafka refuses one row for good: it is quarantined and the later rows of its key are held back
  (`batches`), every other key goes on.
"""

from ticketing.relay.leadership import OutboxRelay, RelayConfig

__all__ = ["OutboxRelay", "RelayConfig"]
