-- The hot voucher row of voucher-service's normal mode (sql/vouchers.sql reserve_use, its step `taken`): every
-- client on ONE row.
UPDATE voucher SET used_count = used_count + 1
WHERE code = :code AND used_count < total_limit AND now() >= starts_at AND now() < ends_at
RETURNING used_count;
