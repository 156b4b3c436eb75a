// GraphiQL (ruru, at /graphiql) with the web app's session (issue F17). A browser signed in to the
// web app holds HttpOnly access and refresh cookies and the readable svc_csrf cookie; POST
// /graphql in cookie mode needs X-CSRF-Token equal to svc_csrf (rest-adapter/http/session.ts),
// which GraphiQL does not send by itself, so it answered 403 csrf-rejected. This page script wraps
// the page's fetch before GraphiQL takes it: requests to this origin's /graphql carry the CSRF
// token (unless the analyst set an Authorization header: a bearer token needs none), and a 401 is
// answered by one refresh of the session (POST /auth/refresh, the web app's lock so that two tabs
// never rotate the same refresh token at once) and one retry. The cookies stay HttpOnly: script
// never sees a token. Without the CSRF cookie this browser has no web-app session, and a note
// says how to sign in (checked when the page loads and when its tab is shown again).
//
// Nothing here weakens CSRF: the token is read from a cookie only this origin's script can read,
// exactly as the web app does; a page elsewhere can neither read it nor run this script here.

/** Runs in the GraphiQL page, in its <head>, before GraphiQL makes its fetcher. */
const PAGE_SCRIPT = `
(() => {
  const cookie = (name) => {
    const pair = document.cookie.split('; ').find((c) => c.startsWith(name + '='));
    try {
      return pair ? decodeURIComponent(pair.slice(name.length + 1)) : undefined;
    } catch {
      return undefined; // a malformed cookie is no session
    }
  };
  const pageFetch = window.fetch.bind(window);
  const headersOf = (input, init) =>
    new Headers((init && init.headers) || (input instanceof Request ? input.headers : undefined));
  const withSession = (input, init) => {
    const headers = headersOf(input, init);
    const csrf = cookie('svc_csrf');
    if (csrf && !headers.has('authorization')) headers.set('X-CSRF-Token', csrf);
    return { ...init, headers, credentials: 'same-origin', redirect: 'error' };
  };
  // The session's refresh token rotates: a refresh whose answer is lost must be asked again
  // within the service's 10-second grace, or the next one looks like a stolen token (as the web
  // app does, app/src/api.ts). Under the app's lock, so tabs never refresh at once.
  const refreshOnce = () =>
    pageFetch('/auth/refresh', withSession('/auth/refresh', { method: 'POST' })).then(
      (r) => r.ok,
      () => new Promise((done) => setTimeout(done, 3000)).then(() =>
        pageFetch('/auth/refresh', withSession('/auth/refresh', { method: 'POST' })).then(
          (r) => r.ok,
          () => false,
        ),
      ),
    );
  const locked = (work) => (navigator.locks ? navigator.locks.request('weld.refresh', work) : work());
  window.fetch = async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input), location.href);
    if (url.origin !== location.origin || url.pathname !== '/graphql') return pageFetch(input, init);
    const response = await pageFetch(input, withSession(input, init));
    // A 401 of a bearer token typed into the Headers tab is the analyst's to renew, not ours.
    const ownToken = headersOf(input, init).has('authorization');
    if (response.status !== 401 || ownToken || !cookie('svc_csrf')) return response;
    return locked(async () => {
      // Another tab may have refreshed while this request was refused: try it again first.
      const again = await pageFetch(input, withSession(input, init));
      if (again.status !== 401) return again;
      return (await refreshOnce()) ? pageFetch(input, withSession(input, init)) : again;
    });
  };
  const signedOut = () => {
    document.getElementById('weld-signin').hidden = Boolean(cookie('svc_csrf'));
  };
  document.addEventListener('DOMContentLoaded', signedOut);
  document.addEventListener('visibilitychange', signedOut);
})();
`;

/** Shown over GraphiQL while no web-app session is in this browser. */
const SIGN_IN_NOTE = `
<div id="weld-signin" role="note" hidden
  style="position:fixed;bottom:12px;left:50%;transform:translateX(-50%);z-index:10;max-width:38rem;
         padding:10px 14px;border-radius:6px;background:#fff8db;color:#3b3000;
         font:14px/1.4 system-ui,sans-serif;box-shadow:0 2px 8px rgba(0,0,0,.25)">
  <strong>Not signed in.</strong> Sign in to the web app at <a href="/app/">/app/</a> in this browser
  and come back: GraphiQL then runs as you. Or put <code>{"Authorization": "Bearer &lt;token&gt;"}</code>
  in the Headers tab below (a token from <code>POST /auth/login</code>).
</div>
`;

/**
 * Headers of the GraphiQL page: it runs as the signed-in user, so no other page may frame it
 * (a sibling tenant's page could otherwise steer a framed, signed-in editor by clicks).
 */
export const GRAPHIQL_HEADERS = {
  'Content-Security-Policy': "frame-ancestors 'none'",
  'X-Frame-Options': 'DENY',
  'X-Content-Type-Options': 'nosniff',
} as const;

/** ruru's page parts: the script before GraphiQL starts, the note above its root. */
export const graphiqlHtmlParts = {
  headerScripts: (original: string) => `${original}\n<script>${PAGE_SCRIPT}</script>`,
  bodyContent: (original: string) => `${SIGN_IN_NOTE}\n${original}`,
};
