"""hold-service's and voucher-service's rate limits lifted, and every API's load shedding off, for the service
processes a test or benchmark starts.

Every test client comes from 127.0.0.1 and the counters live in the shared Redis: with the defaults (120 holds
a minute per address, 10 queue joins without a token a minute per address, 8 seat-map streams per address,
voucher quotes per customer) the tests that run first would spend the budget of those that come after (a page
opened before its token is pasted joins as a visitor), and schema fuzzing asks for hundreds of quotes. Tests release
hundreds of requests at once at one process (R1's 200 holds at a barrier), which its limit of work in flight
(SHED_MAX_IN_FLIGHT) would shed. The tests of the limits and of shedding start their service with limits of
their own.
The automatic waiting room is off too (WAITING_ROOM_AUTO_DEFAULT): hundreds of test customers on one showtime
would open a room nobody configured, and a test of something else would meet ADMISSION_REQUIRED. The room's
own tests, and the demo, turn it on.
"""

UNLIMITED_HOLDS = {"HOLD_RATE_LIMIT_PER_MINUTE": "1000000000", "HOLD_RATE_LIMIT_PER_IP_PER_MINUTE": "1000000000",
                   "WAITING_ROOM_ANONYMOUS_JOINS_PER_IP_PER_MINUTE": "1000000000",
                   "SEAT_MAP_MAX_STREAMS_PER_ADDRESS": "1000000", "VOUCHER_QUOTE_RATE_LIMIT_PER_MINUTE": "1000000000",
                   "WAITING_ROOM_AUTO_DEFAULT": "false", "SHED_MAX_IN_FLIGHT": "0"}
