// What the door scanner keeps in this browser so that it works without the network: the ticket-signing public
// keys (GET /tickets/public-key: JSON Web Keys, OKP Ed25519, fetched while online, kept by key id), the bookings this device admitted (a second
// scan of one is refused here even offline), and the scans made offline, queued with their time until
// POST /checkins/batch takes them. A ticket is `<base64url payload>.<base64url Ed25519 signature>`; the payload
// is JSON {"b": bookingId, "s": showtimeId, "seats": [...], "k": keyId} (a ticket signed before key ids has
// no "k" and is tried with every kept key). The signature is checked with the
// browser's own WebCrypto Ed25519, so a forged or altered ticket is refused offline too.
"use strict";

const BATCH_PART = 50;  // scans per POST /checkins/batch: under the server's default limit (100)
const KEYS_KEY = "ticketing.door.keys";
const QUEUE_KEY = "ticketing.door.queue";
const admittedKey = (showtimeId) => `ticketing.door.admitted.${showtimeId}`;
const kept = (key, empty) => JSON.parse(localStorage.getItem(key) || "null") || empty;
const keep = (key, value) => localStorage.setItem(key, JSON.stringify(value));

function unb64url(text) {
  const binary = atob(text.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - (text.length % 4)) % 4));
  return Uint8Array.from(binary, (c) => c.charCodeAt(0));
}

class DoorMemory {
  // The public keys by key id, as GET /tickets/public-key gives them; kept for the offline hours.
  keys() { return kept(KEYS_KEY, {}); }

  async refreshKeys() {
    const r = await fetch("/tickets/public-key");
    if (!r.ok) throw new Error(`the keys could not be fetched (${r.status})`);
    const body = await r.json();
    const keys = Object.fromEntries(body.keys.filter((k) => k.crv === "Ed25519").map((k) => [k.kid, k.x]));
    keep(KEYS_KEY, keys);
    return keys;
  }

  // {payload} when the signature holds with a kept key, else {reason}.
  async verify(text) {
    const parts = text.trim().split(".");
    if (parts.length !== 2 || !parts[0] || !parts[1]) return { reason: _("this is not a ticket's QR") };
    let raw, signature, payload;
    try {
      raw = unb64url(parts[0]);
      signature = unb64url(parts[1]);
      payload = JSON.parse(new TextDecoder().decode(raw));
      if (typeof payload !== "object" || payload === null) throw new TypeError("not an object");
    } catch {
      return { reason: _("this is not a ticket's QR") };
    }
    const known = this.keys();
    const candidates = payload.k === undefined ? Object.values(known) : [known[payload.k]].filter(Boolean);
    if (!candidates.length) return { reason: _("signed with a key this scanner does not know") };
    try {
      if (!(await this.signedByOneOf(candidates, signature, raw))) {
        return { reason: _("the signature does not match (forged or altered)") };
      }
    } catch {
      return { reason: _("this browser cannot verify tickets offline") };
    }
    if (typeof payload.b !== "string" || !Array.isArray(payload.seats)) return { reason: _("this is not a ticket's QR") };
    return { payload };
  }

  async signedByOneOf(keyTexts, signature, raw) {
    for (const text of keyTexts) {
      const key = await crypto.subtle.importKey("raw", unb64url(text), { name: "Ed25519" }, false, ["verify"]);
      if (await crypto.subtle.verify({ name: "Ed25519" }, key, signature, raw)) return true;
    }
    return false;
  }

  // The admissions this device made (online or offline) for the showtime: bookingId -> {at, door}.
  admitted(showtimeId) { return kept(admittedKey(showtimeId), {}); }

  remember(showtimeId, bookingId, at, door) {
    const all = this.admitted(showtimeId);
    all[bookingId] = all[bookingId] || { at, door };
    keep(admittedKey(showtimeId), all);
  }

  forget(showtimeId, bookingId) {
    const all = this.admitted(showtimeId);
    delete all[bookingId];
    keep(admittedKey(showtimeId), all);
  }

  queue() { return kept(QUEUE_KEY, []); }

  enqueue(scan) { keep(QUEUE_KEY, [...this.queue(), scan]); }

  // Send the earliest queued scans (POST /checkins/batch, BATCH_PART at most; earliest first, so that a part
  // sent later never takes an admission from one sent before): {results: [[scan, result]...]} for the scans it
  // took, which leave the queue; {status} when the server did not take them (they stay); null when the network
  // is gone.
  async sync(token) {
    const scans = this.queue().sort((a, b) => Date.parse(a.at) - Date.parse(b.at)).slice(0, BATCH_PART);
    if (!scans.length) return { results: [] };
    let r;
    try {
      r = await fetch("/checkins/batch", {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ scans: scans.map(({ ticket, showtimeId, door, at }) => ({ ticket, showtimeId, door, at })) }),
      });
    } catch {
      return null;
    }
    if (r.status !== 200) return { status: r.status };
    const body = await r.json();
    const sent = new Set(scans.map((s) => s.at + s.ticket));
    keep(QUEUE_KEY, this.queue().filter((s) => !sent.has(s.at + s.ticket)));  // scans queued meanwhile stay
    return { results: scans.map((scan, i) => [scan, body.results[i]]) };
  }
}
