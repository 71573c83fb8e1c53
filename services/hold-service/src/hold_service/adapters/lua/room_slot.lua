-- Whether the slot an admission token names is still the customer's (the seat gate checks the same inside
-- try_hold.lua; this one serves SEAT_GATE_ENABLED=false). KEYS: as room_join.lua.
-- ARGV[1] = customer, ARGV[2] = the slot's end (ms). Returns 1 or 0.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local slot = tonumber(ARGV[2])
if slot <= now then return 0 end
if tonumber(redis.call('ZSCORE', KEYS[4], ARGV[1])) == slot then return 1 end
local st = redis.call('HMGET', KEYS[1], 'since', 'paused_until')
if not st[1] or slot <= (tonumber(st[2]) or 0) then return 1 end
return 0
