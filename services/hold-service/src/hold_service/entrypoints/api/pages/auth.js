// Sign-in for every page (docs/sign-in.md). With OIDC_ISSUER_URL and OIDC_CLIENT_ID (served in
// /pages/config.json) the pages sign in with the chain's identity provider through oidc-client-ts (vendored beside
// this file): authorization code with PKCE, a public client, the provider found by discovery, the session
// renewed silently with its refresh token before the access token expires (and once more after a 401), sign-out
// through the provider's end-session. Without them (make up's dev path) a token printed by `make token` is pasted
// into the page's token box. Either way tokens live in this tab's sessionStorage only, never localStorage.
//
// A page asks `await Auth.ready` (the sign-in's return handled; it resolves to the state the page gave
// `Auth.signIn`, e.g. the seats picked before it, or null), then `Auth.token()` before each call.
"use strict";

const Auth = (() => {
  // The dev path's pasted token, one per kind of page: staff at the door, an operator's, a customer's.
  const pastedKey = location.pathname.startsWith("/pages/door") ? "ticketing.staff-token"
    : location.pathname.endsWith("/operator") ? "ticketing.admin-token" : "ticketing.token";
  let manager = null;
  let user = null;
  const listeners = [];
  const changed = () => listeners.forEach((fn) => fn());

  function settings(config) {
    const here = `${location.origin}${location.pathname}`;
    const tab = new oidc.WebStorageStateStore({ store: window.sessionStorage });
    return {
      authority: config.oidcIssuerUrl, client_id: config.oidcClientId, redirect_uri: here,
      post_logout_redirect_uri: here, response_type: "code", scope: "openid profile email",
      userStore: tab, stateStore: tab, automaticSilentRenew: true, monitorSession: false, loadUserInfo: false,
    };
  }

  async function returned() {  // back from the provider's login page: ?code=...&state=...
    const params = new URLSearchParams(location.search);
    if (!params.has("state") || !(params.has("code") || params.has("error"))) return null;
    try {
      user = await manager.signinRedirectCallback();
      return user.state || null;
    } catch (error) {
      console.warn("sign-in did not complete", error);
      return null;
    } finally {
      history.replaceState(null, "", location.pathname);  // the code is used once; keep it out of the history
    }
  }

  async function start() {
    // Kept for the tab: a door scanner reopened without the network still knows its provider.
    const config = await fetch("/pages/config.json").then((r) => r.json())
      .then((c) => { sessionStorage.setItem("ticketing.config", JSON.stringify(c)); return c; })
      .catch(() => JSON.parse(sessionStorage.getItem("ticketing.config") || "{}"));
    if (!config.oidcIssuerUrl || typeof oidc === "undefined") return null;
    manager = new oidc.UserManager(settings(config));
    manager.events.addUserLoaded((u) => { user = u; speak(); changed(); });
    manager.events.addUserSignedOut(() => { user = null; changed(); });
    manager.events.addSilentRenewError(() => { user = null; changed(); });
    const state = await returned();
    if (!user) user = await manager.getUser();
    if (user && user.expired) await renew();  // an expired session: renewed silently (its refresh token)
    speak();
    return state;
  }

  async function renew() {
    if (!manager) return false;
    try {
      user = await manager.signinSilent();
    } catch {
      user = null;
    }
    changed();
    return Boolean(user && !user.expired);
  }

  // The page speaks the provider's `locale` claim (i18n.js) once the customer is signed in.
  function speak() {
    const locale = user && user.profile && user.profile.locale;
    if (locale && typeof setLocale === "function") setLocale(locale);
  }

  function claims(token) {
    try {
      return JSON.parse(atob(token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/")));
    } catch {
      return null;
    }
  }

  const ready = start();

  return {
    ready,
    get withProvider() { return Boolean(manager); },
    token() {
      if (manager) return user && !user.expired ? user.access_token : null;
      return sessionStorage.getItem(pastedKey);
    },
    // Who is signed in, for the page to show: the provider's name or e-mail, else the dev token's sub.
    who() {
      const token = this.token();
      if (!token) return null;
      const c = (manager && user && user.profile) || claims(token) || {};
      return c.name || c.email || c.preferred_username || c.sub || "?";
    },
    // Off to the provider's login page; `state` comes back from `Auth.ready` on this page. The dev path has no
    // login page: false, and the page shows its token box.
    async signIn(state) {
      if (!manager) return false;
      await manager.signinRedirect({ state: state || null });
      return true;
    },
    async signOut() {
      sessionStorage.removeItem(pastedKey);
      if (manager && user) {
        const hint = user.id_token;
        await manager.removeUser();
        await manager.signoutRedirect({ id_token_hint: hint });
        return;
      }
      user = null;
      changed();
    },
    usePasted(token) {
      sessionStorage.setItem(pastedKey, token);
      changed();
    },
    renew,
    onChange(fn) { listeners.push(fn); },
  };
})();

// The header's sign-in / sign-out control, added to the page's navigation.
(function accountControl() {
  const nav = document.querySelector("header nav") || document.querySelector("header");
  if (!nav) return;
  const box = Object.assign(document.createElement("span"), { id: "account", className: "account" });
  const who = Object.assign(document.createElement("span"), { id: "signed-in-as" });
  const signIn = Object.assign(document.createElement("button"), { id: "sign-in", type: "button",
                                                                   textContent: _("Sign in") });
  const signOut = Object.assign(document.createElement("button"), { id: "sign-out", type: "button",
                                                                    textContent: _("Sign out") });
  signIn.addEventListener("click", async () => {
    if (!await Auth.signIn(null)) {
      const tokenBox = document.getElementById("token-box");
      if (tokenBox) tokenBox.hidden = false;
    }
  });
  signOut.addEventListener("click", () => Auth.signOut());
  box.append(" ", who, " ", signIn, signOut);
  nav.append(box);
  const draw = () => {
    const name = Auth.who();
    who.textContent = name ? _("Signed in as {name}", { name }) : "";
    signIn.hidden = Boolean(name);
    signOut.hidden = !name;
  };
  Auth.onChange(draw);
  Auth.ready.then(draw);
})();
