-- A customer's slot is over before its time (he paid, or cancelled): someone else may come in.
-- KEYS: as room_join.lua; ARGV[1] = customer. His ticket stays until his next poll says it is gone.
redis.call('ZREM', KEYS[7], ARGV[1])
return redis.call('ZREM', KEYS[4], ARGV[1])
