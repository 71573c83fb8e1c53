// The door scanner's service worker: the page and its scripts kept in this browser, so that a scanner opened or
// reloaded without the network still works (it keeps its keys, showtimes and queued scans itself, door-offline.js).
// The network first, always, so a scanner online gets the page as it is now; the kept copy only when the network
// does not answer. Calls to the API are never answered from here.
"use strict";

const SHELL = "ticketing-door-shell";
const PAGE = "/pages/door";
const FILES = [PAGE, "/pages/assets/pages.css", "/pages/assets/catalogues.js", "/pages/assets/i18n.js",
               "/pages/assets/oidc-client-ts.min.js", "/pages/assets/auth.js", "/pages/assets/tickets.js",
               "/pages/assets/showtimes.js", "/pages/assets/door-offline.js", "/pages/assets/door-camera.js",
               "/pages/assets/door.js"];

self.addEventListener("install", (event) => {
  event.waitUntil(caches.open(SHELL).then((cache) => cache.addAll(FILES)).then(() => self.skipWaiting()));
});

self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));

self.addEventListener("fetch", (event) => {
  const url = new URL(event.request.url);
  const file = url.origin === location.origin && event.request.method === "GET" && FILES.includes(url.pathname)
    ? url.pathname : null;  // the page whatever its query (?showtime=&door=)
  if (!file) return;
  event.respondWith(fetch(event.request).then((response) => {
    if (response.ok) {
      const copy = response.clone();
      event.waitUntil(caches.open(SHELL).then((cache) => cache.put(file, copy)));
    }
    return response;
  }).catch(async () => (await caches.match(file)) || Response.error()));
});
