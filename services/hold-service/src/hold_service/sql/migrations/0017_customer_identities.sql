-- depends: 0016_showtime_currency
-- Customers who sign in with the chain's identity provider (docs/sign-in.md).
--
-- - customer_identity: a provider's subject (issuer, sub) -> our customer id, made the first time the subject's
--   token is seen (a hold, a checkout: any call), so a first-time customer buys at once. Ids come from their
--   own sequence starting at 10^12, clear of the small ids that dev tokens (`ticketing token --sub 7`) and the
--   operators' directory use.
-- - the buyer's contact as the token's standard claims last stated it (email, email_verified, name, locale),
--   read by the notifier (GET /buyer-contacts/{bookingId}) when it sends the ticket: personal data stays here,
--   never on booking-events.
CREATE SEQUENCE customer_identity_id START WITH 1000000000000;

CREATE TABLE customer_identity (
    issuer          TEXT        NOT NULL,
    subject         TEXT        NOT NULL,
    customer_id     BIGINT      NOT NULL UNIQUE DEFAULT nextval('customer_identity_id'),
    email           TEXT,
    email_verified  BOOLEAN     NOT NULL DEFAULT false,
    name            TEXT,
    locale          TEXT,
    first_seen_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (issuer, subject)
);
ALTER SEQUENCE customer_identity_id OWNED BY customer_identity.customer_id;
