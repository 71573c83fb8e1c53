-- depends: 0003_booking_cancelled
-- The currency a payment is charged in (ISO 4217, upper case): the showtime's where hold-service says it, else
-- CURRENCY. Carried by the money events and sent to the payment provider with the amount.
ALTER TABLE payment ADD COLUMN currency text NOT NULL DEFAULT 'EUR' CHECK (currency ~ '^[A-Z]{3}$');
