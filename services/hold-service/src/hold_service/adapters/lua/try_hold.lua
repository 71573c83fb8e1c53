-- All-or-nothing seat gate for one or more hold requests on one showtime (those that arrived together),
-- taken one after the other: a later request sees the keys an earlier one set.
-- KEYS: seat:{showtimeId}:code of every request, request after request (one hash slot per showtime).
-- ARGV[1] = TTL in ms, then per request: its number of seats, its hold id.
-- A key set by the same hold id is not "taken": a retry of one hold (an Idempotency-Key) goes on to
-- Postgres, which answers it with the hold it already has.
-- Returns per request the indexes (1-based, within the request) of the seats already taken; an empty list
-- means every key of that request was set to its hold id.
local answers, k = {}, 0
for r = 2, #ARGV, 2 do
  local n, hold = tonumber(ARGV[r]), ARGV[r + 1]
  local taken = {}
  for i = 1, n do
    local owner = redis.call('GET', KEYS[k + i])
    if owner and owner ~= hold then taken[#taken + 1] = i end
  end
  if #taken == 0 then
    for i = 1, n do
      redis.call('SET', KEYS[k + i], hold, 'PX', ARGV[1])
    end
  end
  answers[#answers + 1] = taken
  k = k + n
end
return answers
