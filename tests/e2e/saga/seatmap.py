"""R15: booking-events as a changelog of each showtime's seat map.

Applying a showtime's SeatsHeld, SeatsReleased, BookingConfirmed and BookingCancelled in seatMapVersion order must
reproduce
GET /showtimes/{id}/seats exactly; versions run 1..N with no gap and no duplicate; and each event may only
change seats in the state it claims (a SeatsReleased names only seats its hold still had, a SeatsHeld takes
only seats the stream shows free, a BookingConfirmed books only its hold's seats, a BookingCancelled frees only
seats its booking had BOOKED). The replay applies every
event as a consumer would, so a wrong event also shows as a wrong map.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from .facts import Facts
from .verdict import Check, data

CHANGES = ("SeatsHeld", "SeatsReleased", "BookingConfirmed", "BookingCancelled")


def _stream(facts: Facts, showtime: int) -> list[dict[str, Any]]:
    return sorted((e for e in facts.events if e.get("showtimeId") == showtime and e.get("type") in CHANGES),
                  key=lambda e: data(e).get("seatMapVersion", 0))


def versions(facts: Facts) -> Check:
    check = Check("seatmap.versions", "seatMapVersion runs 1..N per showtime, no gap, no duplicate, "
                                      "N == the showtime's version (database and GET)")
    for showtime, version in sorted(facts.showtimes.items()):
        seen = Counter(data(e).get("seatMapVersion") for e in _stream(facts, showtime))
        twice = sorted(v for v, n in seen.items() if n > 1)
        gaps = sorted(set(range(1, version + 1)) - set(seen))
        served = facts.seat_maps.get(showtime, {}).get("version")
        check.expect(not twice, f"showtime {showtime}: versions used twice {twice[:10]}")
        check.expect(not gaps, f"showtime {showtime}: versions missing from the topic {gaps[:10]} of 1..{version}")
        check.expect(max(seen, default=0) == version == served,
                     f"showtime {showtime}: last event version {max(seen, default=0)}, database {version}, "
                     f"GET {served}")
    return check


def replay(facts: Facts) -> tuple[Check, Check]:
    """(the per-event check, the final map check)."""
    moves = Check("seatmap.events_change_what_they_claim", "SeatsReleased lists only seats its hold freed; "
                                                           "SeatsHeld takes free seats; BookingConfirmed its own; "
                                                           "BookingCancelled frees its booked seats")
    final = Check("seatmap.replay", "the seat map rebuilt from booking-events == GET /showtimes/{id}/seats")
    codes: dict[int, list[str]] = {}
    for row in facts.seats:
        codes.setdefault(row["showtime_id"], []).append(row["seat_code"])
    for showtime in sorted(facts.showtimes):
        state = dict.fromkeys(codes.get(showtime, []), "AVAILABLE")
        owner: dict[str, str] = {}
        for e in _stream(facts, showtime):
            _apply(e, state, owner, moves)
        served = {s["code"]: s["status"] for s in facts.seat_maps.get(showtime, {}).get("seats", [])}
        wrong = sorted(c for c in set(state) | set(served) if state.get(c) != served.get(c))
        final.expect(not wrong, f"showtime {showtime}: {len(wrong)} seats differ, e.g. "
                                f"{[(c, 'events', state.get(c), 'GET', served.get(c)) for c in wrong[:4]]}")
    return moves, final


def _apply(e: dict[str, Any], state: dict[str, str], owner: dict[str, str], check: Check) -> None:
    d, kind = data(e), e["type"]
    hold, version = str(d.get("holdId")), d.get("seatMapVersion")
    for seat in d.get("seats", []):
        where = f"showtime {e['showtimeId']} v{version} {kind} of hold {hold}: seat {seat}"
        if kind == "SeatsHeld":
            check.expect(state.get(seat) == "AVAILABLE",
                         f"{where} taken while the stream shows it {state.get(seat)} by hold {owner.get(seat)}")
            state[seat], owner[seat] = "HELD", hold
        elif kind == "BookingCancelled":
            check.expect(state.get(seat) == "BOOKED" and owner.get(seat) == hold,
                         f"{where} cancelled but the stream shows it {state.get(seat)} by hold {owner.get(seat)}")
            state[seat] = "AVAILABLE"
            owner.pop(seat, None)
        elif kind == "SeatsReleased":
            check.expect(state.get(seat) == "HELD" and owner.get(seat) == hold,
                         f"{where} released but the stream shows it {state.get(seat)} by hold {owner.get(seat)}")
            state[seat] = "AVAILABLE"
            owner.pop(seat, None)
        else:
            check.expect(state.get(seat) == "HELD" and owner.get(seat) == hold,
                         f"{where} booked but the stream shows it {state.get(seat)} by hold {owner.get(seat)}")
            state[seat], owner[seat] = "BOOKED", hold
