-- The reservation expiry releases a use only once payment-service says its payment ended unpaid
-- (service_layer/expiry.py). A use kept because its payment is still open (PENDING, SUCCEEDED) is asked
-- about again later, behind the others: the queue is ordered by the last check, so a pile of kept uses can
-- never starve newer expired ones.
ALTER TABLE voucher_redemption ADD COLUMN expiry_checked_at TIMESTAMPTZ;
CREATE INDEX ix_redemption_expiry_queue ON voucher_redemption ((coalesce(expiry_checked_at, created_at)))
    WHERE status = 'RESERVED';
DROP INDEX ix_redemption_reserved;  -- the old queue's order (created_at only)
