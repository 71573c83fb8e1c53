// The waiting room in front of a showtime's seat map. While the operator has it on, a hold needs an admission
// token: the customer joins the queue (POST /showtimes/{id}/queue), sees his position and the estimated wait,
// and polls (GET /queue/{ticket}) until the room admits him; the token then goes with every hold as
// X-Admission-Token until it lapses (a hold refused 403 ADMISSION_REQUIRED sends him back to the queue). A
// ticket the room no longer knows (404) joins again; while the room cannot answer (503) he keeps polling;
// when every seat is booked the room says sold out. The token is kept in this browser for a reload.
// A visitor not signed in queues too (no token): when he is admitted the room says signIn (onSignIn), his
// ticket is kept in this tab, and after the sign-in `claim` polls it with his token for the admission token.
"use strict";

const POLL_MS = { min: 2000, max: 5000 };

class WaitingRoom {
  constructor(showtimeId, api, { onQueued, onAdmitted, onSoldOut, onOpen, onSignIn }) {
    this.showtimeId = showtimeId;
    this.api = api;  // (url, options) -> {status, body}, with the customer's token if he signed in
    this.handlers = { onQueued, onAdmitted, onSoldOut, onOpen, onSignIn };
    this.key = `ticketing.admission.${showtimeId}`;
    this.ticketKey = `ticketing.queue-ticket.${showtimeId}`;
    this.polling = false;
    this.joining = false;
  }

  // Joining or polling: a token given meanwhile goes with every later call, so the same place is his.
  busy() { return this.joining || this.polling; }

  // The admission kept in this browser, while it is valid: {admissionToken, expiresAt}.
  admission() {
    const kept = JSON.parse(localStorage.getItem(this.key) || "null");
    return kept && Date.parse(kept.expiresAt) > Date.now() ? kept : null;
  }

  forget() { localStorage.removeItem(this.key); }

  // A visitor's ticket admitted before his sign-in, kept in this tab until his token claims it.
  pending() { return sessionStorage.getItem(this.ticketKey); }

  keep(ticket) {
    if (ticket) sessionStorage.setItem(this.ticketKey, ticket);
    else sessionStorage.removeItem(this.ticketKey);
  }

  // Signed in after the room admitted him as a visitor: his token claims the place (the poll answers the
  // admission token, bound to him); a place taken or ended (404) joins again.
  claim() {
    const ticket = this.pending();
    this.keep(null);
    return ticket ? this.poll(ticket) : this.join();
  }

  // Whether the showtime has a room on: queue for it, or go straight to the map (onOpen). The HTTP status when
  // the room could not be asked (401: the token was refused).
  async enter() {
    const r = await this.api(`/showtimes/${this.showtimeId}/waiting-room`);
    if (r.status === 401) return 401;
    if (r.status !== 200 || !r.body.enabled) return this.handlers.onOpen(null);  // no room: a hold says if one came
    if (r.body.soldOut) return this.handlers.onSoldOut();
    const kept = this.admission();
    return kept ? this.handlers.onAdmitted(kept) : this.join();
  }

  async join() {
    this.forget();
    this.joining = true;
    try {
      return await this.queueUp();
    } finally {
      this.joining = false;
    }
  }

  async queueUp() {
    for (;;) {
      const r = await this.api(`/showtimes/${this.showtimeId}/queue`, { method: "POST" });
      if (r.status === 202) {
        if (r.body.soldOut) return this.handlers.onSoldOut();
        this.handlers.onQueued({ position: r.body.position, estimatedWaitSeconds: null, opensAt: r.body.opensAt });
        return this.poll(r.body.ticket);
      }
      if (r.status === 404) return this.handlers.onOpen(null);  // the room was turned off meanwhile
      if (r.status === 409) return this.handlers.onSoldOut(r.body && r.body.message);  // sales closed
      // 429 (too many joins from this address) or 503 (the room cannot answer): try again a little later.
      const wait = Number(r.headers && r.headers.get("retry-after")) * 1000 || POLL_MS.max;
      this.handlers.onQueued({ position: null, estimatedWaitSeconds: null, opensAt: null, retrying: true });
      await sleep(wait);
    }
  }

  async poll(ticket) {
    if (this.polling) return;
    this.polling = true;
    try {
      for (;;) {
        const r = await this.api(`/queue/${encodeURIComponent(ticket)}`);
        if (r.status === 404) {  // the place ended (not polled for long, or forged): join again
          this.polling = false;
          return this.join();
        }
        const s = r.status === 200 ? r.body : null;
        if (s && s.soldOut) return this.handlers.onSoldOut();
        if (s && s.admitted && s.signIn) {  // a visitor's turn: signing in claims it
          this.keep(ticket);
          this.polling = false;  // before onSignIn: a token given meanwhile claims the turn at once (claim)
          return this.handlers.onSignIn(ticket, s);
        }
        if (s && s.admitted) {
          if (!s.admissionToken) return this.handlers.onOpen(null);  // the room was turned off
          const admission = { admissionToken: s.admissionToken, expiresAt: s.expiresAt };
          localStorage.setItem(this.key, JSON.stringify(admission));
          return this.handlers.onAdmitted(admission);
        }
        if (s) this.handlers.onQueued(s);
        const wait = s && s.estimatedWaitSeconds ? s.estimatedWaitSeconds * 250 : POLL_MS.min;
        await sleep(Math.min(POLL_MS.max, Math.max(POLL_MS.min, wait)));
      }
    } finally {
      this.polling = false;
    }
  }
}

function sleep(ms) { return new Promise((done) => setTimeout(done, ms)); }

// "12 min", "45 s": how long the room expects the wait to be.
function waitText(seconds) {
  if (seconds === null || seconds === undefined) return _("being measured");
  return seconds >= 90 ? _("about {minutes} min", { minutes: Math.round(seconds / 60) })
    : _("about {seconds} s", { seconds: Math.max(1, Math.round(seconds)) });
}
