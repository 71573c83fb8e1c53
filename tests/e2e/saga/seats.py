"""Seats: one owner each, booked at most once, booked exactly when paid."""

from __future__ import annotations

from collections import defaultdict

from .facts import Facts
from .verdict import Check, by, data


def single_owner(facts: Facts) -> Check:
    check = Check("seats.single_owner", "no seat has two live holders; show_seat agrees with the bookings")
    owners: dict[tuple[int, str], list[str]] = defaultdict(list)
    for b in facts.bookings.values():
        if b["status"] == "BOOKED" or (b["status"] == "HELD" and not b["expired"]):
            for seat in b["seats"]:
                owners[(b["showtime_id"], seat)].append(b["booking_id"])
    by_hold = {b["hold_id"]: b for b in facts.bookings.values()}
    for row in facts.seats:
        key = (row["showtime_id"], row["seat_code"])
        check.expect(len(owners[key]) <= 1, f"seat {key} has {len(owners[key])} live holders {owners[key]}")
        if row["status"] == "BOOKED":
            b = by_hold.get(row["hold_id"])
            check.expect(b is not None and b["status"] == "BOOKED" and row["seat_code"] in b["seats"],
                         f"seat {key} BOOKED for hold {row['hold_id']} whose booking is "
                         f"{b and b['status']} with seats {b and b['seats']}")
    return check


def booked_once(facts: Facts) -> Check:
    """A seat is BOOKED by one booking at a time: at most one BOOKED booking holds it now, and in its showtime's
    seat-map order each BookingConfirmed finds it free (a booking cancelled before gives it back to the sale)."""
    check = Check("seats.booked_once", "no seat BOOKED twice at once (bookings now; BookingConfirmed and "
                                       "BookingCancelled in seat-map order: booked again only once cancelled)")
    booked: dict[tuple[int, str], set[str]] = defaultdict(set)
    for b in facts.bookings.values():
        if b["status"] == "BOOKED":
            for seat in b["seats"]:
                booked[(b["showtime_id"], seat)].add(b["booking_id"])
    holder: dict[tuple[int, str], str] = {}
    changes = [e for e in facts.events if e.get("type") in ("BookingConfirmed", "BookingCancelled")]
    for e in sorted(changes, key=lambda e: (e["showtimeId"], data(e).get("seatMapVersion", 0))):
        booking = str(e["bookingId"])
        for seat in data(e).get("seats", []):
            key = (e["showtimeId"], seat)
            if e["type"] == "BookingCancelled":
                if holder.get(key) == booking:
                    del holder[key]
                continue
            check.expect(holder.get(key, booking) == booking,
                         f"seat {key} booked by {booking} while booking {holder.get(key)} still had it")
            holder[key] = booking
    for key, booking in holder.items():
        booked[key].add(booking)
    for key, bookings in sorted(booked.items()):
        check.expect(len(bookings) == 1, f"seat {key} booked by {sorted(bookings)}")
    return check


def booked_iff_paid(facts: Facts) -> Check:
    """BOOKED seats == the seats of SUCCEEDED (not refunded) payments, payment by payment."""
    check = Check("seats.booked_iff_paid", "BOOKED seats == seats of SUCCEEDED, not refunded, payments")
    booked = {(r["showtime_id"], r["seat_code"]) for r in facts.seats if r["status"] == "BOOKED"}
    paid: set[tuple[int, str]] = set()
    for p in facts.payments.values():
        if p["status"] != "SUCCEEDED":
            continue
        b = facts.bookings.get(p["booking_id"])
        check.expect(b is not None and b["status"] == "BOOKED" and b["payment_id"] == p["payment_id"],
                     f"payment {p['payment_id']} SUCCEEDED but its booking is {b and b['status']} "
                     f"(booked by payment {b and b['payment_id']})")
        paid |= {(p["showtime_id"], seat) for seat in (b["seats"] if b else [])}
    for b in facts.bookings.values():
        if b["status"] == "BOOKED":
            p = facts.payments.get(b["payment_id"] or "")
            check.expect(p is not None and p["status"] == "SUCCEEDED",
                         f"booking {b['booking_id']} BOOKED by payment {b['payment_id']} which is "
                         f"{p and p['status']}")
    check.expect(booked == paid, f"BOOKED seats without a live payment {sorted(booked - paid)[:10]}, "
                                 f"paid seats not BOOKED {sorted(paid - booked)[:10]}")
    return check


def one_effect_per_fact(facts: Facts) -> Check:
    """Exactly-once effects, seen on the topic: distinct event ids for one fact mean a double effect."""
    check = Check("events.once", "one BookingConfirmed and one BookingCancelled per booking; one PaymentSucceeded, "
                                 "one BookingFailed and one RefundIssued per payment")
    for kind, key in (("BookingConfirmed", "bookingId"), ("BookingCancelled", "bookingId"),
                      ("PaymentSucceeded", "paymentId"), ("BookingFailed", "paymentId"), ("RefundIssued", "paymentId")):
        for subject, events in by(facts.of_type(kind), key).items():
            check.expect(len(events) == 1, f"{len(events)} x {kind} for {key} {subject}")
    return check
