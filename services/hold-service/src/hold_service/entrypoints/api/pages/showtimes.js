// GET /showtimes whole: an answer lists at most CATALOGUE_PAGE_SIZE showtimes and names the rest (`next`), which
// is read page after page. Resolves to the showtimes in order, or to null when a page cannot be had (its status
// in `failed.status`, 0 without the network).
"use strict";

async function allShowtimes(params, failed = {}) {
  const showtimes = [];
  let next = `/showtimes?${params}`;
  for (let page = 0; next && page < 100; page++) {  // 100 pages: a bound, far above any chain's window
    const r = await fetch(next).catch(() => null);
    if (!r || r.status !== 200) {
      failed.status = r ? r.status : 0;
      return null;
    }
    const answer = await r.json();
    showtimes.push(...answer.showtimes);
    next = answer.next;
  }
  return showtimes;
}
