"""SeatMaps: the committed rows as the map."""

from __future__ import annotations

import orjson
from hold_service.service_layer.seat_map_ports import SeatMaps, SeatMapSubscription, SeatMapView
from ticketing_testing.in_memory import MemoryDb


class FakeSeatMaps(SeatMaps):
    """The committed rows as the map, statuses as recorded (a lapsed hold stays HELD until its release is
    written), at once: the real maps follow the changes a few milliseconds after COMMIT. No streams here
    (subscribe raises as the real one does without its feed); the stream tests run the real process."""

    def __init__(self, db: MemoryDb) -> None:
        self.db = db

    async def get(self, showtime_id: int) -> SeatMapView | None:
        tx = self.db.begin()
        showtime = tx["showtimes"].get(showtime_id)
        if showtime is None:
            return None
        seats = sorted(((code, s) for (sid, code), s in tx["seats"].items() if sid == showtime_id),
                       key=lambda cs: _hall_order(cs[0]))
        d, places = showtime.details, showtime.places
        body = {"showtimeId": showtime_id, "title": showtime.title,
                "startsAt": showtime.starts_at.isoformat().replace("+00:00", "Z"),
                "durationMinutes": d.duration_minutes, "cinema": d.cinema, "hall": d.hall, "timeZone": d.time_zone,
                "prices": d.prices, "version": showtime.version,
                "seats": [{"code": code, "status": s.status, "category": places[code].category,
                           "row": places[code].row, "x": places[code].x} for code, s in seats]}
        return SeatMapView(showtime.version, orjson.dumps(body))

    async def subscribe(self, showtime_id: int, address: str) -> SeatMapSubscription | None:
        raise ConnectionError("the fakes keep no seat-map streams")


def _hall_order(code: str) -> tuple[int, str, int]:
    row = code.rstrip("0123456789")
    return len(row), row, int(code[len(row):])
