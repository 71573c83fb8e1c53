-- All-or-nothing seat gate. KEYS: seat:{showtimeId}:code (one hash slot per showtime);
-- ARGV[1] = hold id, ARGV[2] = TTL in ms. Returns the indexes (1-based) of the seats already
-- taken; an empty list means every key was set to this hold id.
local taken = {}
for i, key in ipairs(KEYS) do
  if redis.call('EXISTS', key) == 1 then taken[#taken + 1] = i end
end
if #taken > 0 then return taken end
for _, key in ipairs(KEYS) do
  redis.call('SET', key, ARGV[1], 'PX', ARGV[2])
end
return taken
