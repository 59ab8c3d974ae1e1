// The learner token: where the page gets it, where it keeps it, and how it is renewed.
//
// Sources, first found wins:
//   1. <script type="application/json" id="gradquiz-launch">, put there by the server when an LTI
//      launch renders the page (service/learn: render_exercise_page(slug, launch=...));
//   2. the address's fragment, #token=...&learner=..., from a frontend without an LMS: read, then
//      removed from the address bar (a fragment never reaches a server);
//   3. this tab's sessionStorage (kept across reloads of the tab, gone with it).
// The token is sent only in an Authorization header, to this origin.
// Before it expires it is renewed (POST {api}/learner-tokens/refresh); a 401 there means the session
// has ended (the server's maximum session age, or a revoked platform): the page says so, keeps the
// learner's draft, and turns Run and Submit off.

const STORE = "gradquiz.learner-session";
const LAUNCH_ID = "gradquiz-launch";
const MIN_MARGIN_MS = 10_000;
const MAX_MARGIN_MS = 5 * 60_000;
const RETRY_MS = 30_000;

function base64urlJson(part) {
  const b64 = part.replace(/-/g, "+").replace(/_/g, "/").padEnd(Math.ceil(part.length / 4) * 4, "=");
  const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  return JSON.parse(new TextDecoder().decode(bytes));
}

// The token's claims, read (not verified: the server does that) for its learner and expiry.
export function claimsOf(token) {
  try {
    const parts = String(token).split(".");
    return parts.length === 3 ? base64urlJson(parts[1]) : {};
  } catch {
    return {};
  }
}

function sameOrigin(url) {
  try {
    return new URL(url, location.href).origin === location.origin;
  } catch {
    return false;
  }
}

// One normalised record from a launch, a fragment or a stored session; null without a token.
function normalise(raw, apiBase) {
  if (!raw || typeof raw.token !== "string" || !raw.token) return null;
  const claims = claimsOf(raw.token);
  const now = Date.now();
  let expiresAt = null;
  if (raw.expires_at !== undefined && raw.expires_at !== null && raw.expires_at !== "") {
    const at = Number(raw.expires_at);
    expiresAt = Number.isFinite(at) ? at * 1000 : Date.parse(raw.expires_at);
  } else if (raw.expiresAt) expiresAt = Number(raw.expiresAt);
  else if (raw.expires_in !== undefined && raw.expires_in !== "") expiresAt = now + Number(raw.expires_in) * 1000;
  else if (claims.exp) expiresAt = claims.exp * 1000;
  const lifetime = claims.exp && claims.iat ? (claims.exp - claims.iat) * 1000 : raw.lifetime || (expiresAt ? expiresAt - now : null);
  const refresh = raw.refresh || raw.refresh_url || `${apiBase}/learner-tokens/refresh`;
  return {
    token: raw.token,
    learner: raw.learner || claims.sub || null,
    role: raw.role || claims.role || "learner",
    exercise: raw.exercise || claims.exercise || null,
    expiresAt: Number.isFinite(expiresAt) ? expiresAt : null,
    lifetime: Number.isFinite(lifetime) ? lifetime : null,
    // The token is sent to this origin only (the page's connect-src says the same).
    refresh: sameOrigin(refresh) ? refresh : `${apiBase}/learner-tokens/refresh`,
    // The last token of the session (its maximum age reached): it is not renewed, it runs out.
    final: Boolean(raw.final),
    // Launched from an assignment of several exercises (/learn/assignment lists them).
    assignment: Boolean(raw.assignment),
  };
}

function fromLaunchBlock() {
  const block = document.getElementById(LAUNCH_ID);
  if (!block) return null;
  try {
    return JSON.parse(block.textContent);
  } catch {
    return null;
  } finally {
    block.remove(); // read once; nothing else on the page needs it
  }
}

function fromFragment() {
  if (!location.hash || location.hash.length < 2) return null;
  const params = new URLSearchParams(location.hash.slice(1));
  if (!params.has("token")) return null;
  const raw = Object.fromEntries(params.entries());
  // Out of the address bar (and so out of bookmarks, shared links and the history entry).
  history.replaceState(history.state, "", location.pathname + location.search);
  return raw;
}

function fromStorage() {
  try {
    return JSON.parse(sessionStorage.getItem(STORE) || "null");
  } catch {
    return null;
  }
}

export class LearnerSession extends EventTarget {
  constructor(apiBase) {
    super();
    this.apiBase = apiBase;
    this.current = null;
    this.state = "none"; // none | active | ended
    this.timer = null;
    this.source = null;
    // A frontend that hands over another token while the page is open (same document, new fragment):
    // keep it for the tab and load the page afresh for that learner.
    window.addEventListener("hashchange", () => {
      const next = normalise(fromFragment(), this.apiBase);
      if (!next) return;
      try {
        sessionStorage.setItem(STORE, JSON.stringify(next));
      } catch {
        /* storage off: the reload starts signed out */
      }
      location.reload();
    });
    document.addEventListener("visibilitychange", () => {
      // Timers of a hidden tab are throttled: look again when the learner comes back.
      if (document.visibilityState === "visible" && this.current) this.schedule();
    });
  }

  // Read the token from the first source that has one.
  start() {
    const sources = [["launch", fromLaunchBlock()], ["fragment", fromFragment()], ["stored", fromStorage()]];
    for (const [source, raw] of sources) {
      if (source === "stored" && raw && raw.ended) {
        // Ended in this tab before a reload: say so again, and keep finding the learner's drafts.
        this.current = { token: null, learner: raw.learner || null, role: raw.role || "learner" };
        this.state = "ended";
        this.endReason = "ended";
        this.changed();
        return this;
      }
      const session = normalise(raw, this.apiBase);
      if (!session) continue;
      if (session.expiresAt !== null && session.expiresAt <= Date.now()) {
        this.current = session;
        this.end("expired");
        return this;
      }
      this.source = source;
      this.set(session);
      return this;
    }
    this.changed();
    return this;
  }

  get token() {
    return this.state === "active" && this.current ? this.current.token : null;
  }

  // Whether the token speaks for this exercise: its `exercises` claim (null: every exercise), or
  // the older one-exercise `exercise` claim. The server decides; this only lets the page say so.
  allows(slug) {
    if (!this.token) return false;
    const claims = claimsOf(this.token);
    if (Array.isArray(claims.exercises)) return claims.exercises.includes(slug);
    if (typeof claims.exercise === "string") return claims.exercise === slug;
    return true;
  }

  get learner() {
    return this.current ? this.current.learner : null;
  }

  set(session) {
    this.current = session;
    this.state = "active";
    try {
      sessionStorage.setItem(STORE, JSON.stringify(session));
    } catch {
      /* storage off: the token lives in memory only */
    }
    this.schedule();
    this.changed();
  }

  end(reason) {
    clearTimeout(this.timer);
    this.timer = null;
    this.state = "ended";
    this.endReason = reason;
    const learner = this.current ? this.current.learner : null;
    const role = this.current ? this.current.role : "learner";
    try {
      // No token kept: only who it was, so that the learner's draft is found after a reload.
      sessionStorage.setItem(STORE, JSON.stringify({ ended: true, learner, role }));
    } catch {
      /* nothing stored */
    }
    this.changed();
  }

  changed() {
    this.dispatchEvent(new Event("change"));
  }

  // Renew when a fifth of the token's life is left (between 10 s and 5 minutes before it expires).
  schedule() {
    clearTimeout(this.timer);
    const s = this.current;
    if (!s || s.expiresAt === null) return;
    if (s.final) {
      this.timer = setTimeout(() => this.current === s && this.end("expired"), Math.max(0, s.expiresAt - Date.now()));
      return;
    }
    const margin = Math.min(MAX_MARGIN_MS, Math.max(MIN_MARGIN_MS, (s.lifetime || 0) * 0.2));
    const delay = Math.max(0, s.expiresAt - margin - Date.now());
    this.timer = setTimeout(() => this.renew(), delay);
  }

  async renew() {
    const s = this.current;
    if (!s || this.state !== "active") return;
    let response;
    try {
      response = await fetch(s.refresh, {
        method: "POST",
        headers: { Authorization: `Bearer ${s.token}`, Accept: "application/json" },
        credentials: "omit",
        cache: "no-store",
      });
    } catch {
      response = null;
    }
    if (this.current !== s) return; // replaced meanwhile
    if (response && response.ok) {
      let body = {};
      try {
        body = await response.json();
      } catch {
        body = {};
      }
      const next = normalise({ ...body, learner: body.learner || s.learner, role: body.role || s.role,
        exercise: body.exercise || s.exercise, refresh: body.refresh || body.refresh_url || s.refresh,
        assignment: s.assignment }, this.apiBase);
      if (next) {
        // A renewal that does not reach further (the session's maximum age) is the last one:
        // asking again would only hammer the server until the session ends.
        const sessionEnd = body.session_expires_at ? Date.parse(body.session_expires_at) : NaN;
        next.final = next.expiresAt !== null && ((s.expiresAt !== null && next.expiresAt <= s.expiresAt + 1000) ||
          (Number.isFinite(sessionEnd) && sessionEnd <= next.expiresAt + 1000));
        this.set(next);
        this.dispatchEvent(new Event("renewed"));
        return;
      }
    }
    if (response && (response.status === 401 || response.status === 403)) {
      this.end("refused");
      return;
    }
    // The server is unreachable or cannot renew (yet): try again while the token lasts.
    if (s.expiresAt !== null && Date.now() + RETRY_MS >= s.expiresAt) {
      this.timer = setTimeout(() => this.current === s && this.end("expired"), Math.max(0, s.expiresAt - Date.now()));
    } else {
      this.timer = setTimeout(() => this.renew(), RETRY_MS);
    }
  }
}
