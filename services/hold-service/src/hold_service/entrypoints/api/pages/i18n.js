// The pages' languages: English (the texts of the code, gettext's msgids), Spanish and Vietnamese, from the
// catalogues in pages/locale/<language>/LC_MESSAGES/pages.po, which hold-service compiles into
// /pages/assets/catalogues.js (PAGE_CATALOGUES) when it starts. The language is the page's `?locale=` when it is
// given, else the one setLocale() last chose in this tab (the sign-in passes the token's `locale` claim), else the
// browser's first language we speak, else English. `_(text, {name})` translates a text and fills its {name}
// placeholders; static markup says what to translate with data-i18n (the element's text) and data-i18n-attrs (its
// attributes named there). A text missing from a catalogue shows in English (tests keep the catalogues complete).
"use strict";

const LANGUAGES = ["en", "es", "vi"];
const LOCALE_KEY = "ticketing.locale";
const i18n = { language: "en", locale: "en", catalogue: {} };

function languageOf(tag) {
  const language = String(tag || "").toLowerCase().split(/[-_]/)[0];
  return LANGUAGES.includes(language) ? language : null;
}

function _(text, values = {}) {
  const translated = i18n.catalogue[text] || text;
  return translated.replace(/\{(\w+)\}/g, (whole, name) => (name in values ? String(values[name]) : whole));
}

// A text to translate later (a table of names): marks it for the catalogues, returns it as it is.
function N_(text) { return text; }

// The markup's texts in the current language; the English ones are kept in the data-i18n* attributes.
function translatePage(root = document) {
  for (const element of root.querySelectorAll("[data-i18n]")) {
    if (!element.dataset.i18n) element.dataset.i18n = element.textContent.trim().replace(/\s+/g, " ");
    element.textContent = _(element.dataset.i18n);
  }
  for (const element of root.querySelectorAll("[data-i18n-attrs]")) {
    for (const name of element.dataset.i18nAttrs.split(" ")) {
      const kept = `data-i18n-${name}`;
      if (!element.hasAttribute(kept)) element.setAttribute(kept, element.getAttribute(name) || "");
      element.setAttribute(name, _(element.getAttribute(kept)));
    }
  }
}

// The page's language from a BCP 47 tag ("es", "vi-VN", "en-GB"), kept for this tab's next pages; another language
// falls back to English. Numbers, money and dates follow the whole tag when its language is ours. The pages redraw
// on the `localechange` event.
function setLocale(tag) {
  keepLocale(tag);
  return showLocale(tag);
}

function keepLocale(tag) {
  try { sessionStorage.setItem(LOCALE_KEY, String(tag)); } catch { /* storage off: this page only */ }
}

function showLocale(tag) {
  const language = languageOf(tag) || "en";
  i18n.language = language;
  i18n.locale = languageOf(tag) ? String(tag).replace("_", "-") : "en";
  i18n.catalogue = (typeof PAGE_CATALOGUES === "object" && PAGE_CATALOGUES[language]) || {};
  document.documentElement.lang = language;
  translatePage();
  document.dispatchEvent(new CustomEvent("localechange", { detail: { language, locale: i18n.locale } }));
  return language;
}

function startingLocale() {
  const asked = new URLSearchParams(location.search).get("locale");
  if (asked) keepLocale(asked);
  let kept = null;
  try { kept = sessionStorage.getItem(LOCALE_KEY); } catch { /* storage off */ }
  if (languageOf(asked)) return asked;
  if (kept) return kept;  // the sign-in's choice stands, even a language we do not speak (then English)
  return (navigator.languages || [navigator.language]).find(languageOf) || "en";
}

// An amount in `currency` (ISO 4217, the API's; EUR when it gives none), as the customer's locale writes it.
function money(cents, currency) {
  return new Intl.NumberFormat(i18n.locale, { style: "currency", currency: currency || "EUR" }).format(cents / 100);
}

// A time as the customer's locale writes it; `options` as toLocaleString's.
function localeTime(iso, options) {
  return new Date(iso).toLocaleString(i18n.locale, options);
}

showLocale(startingLocale());
