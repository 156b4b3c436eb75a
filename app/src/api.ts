// The app's one way to the service: fetch on the same origin with the session cookies (cookie
// mode, `cookieOnly`: both tokens are HttpOnly cookies that script never sees), the CSRF token
// from the svc_csrf cookie echoed on every unsafe method, RFC 9457 problems turned into ApiError,
// and a 401 answered by one silent refresh (shared by every tab) and one retry.
//
// What the app keeps of a session is never a token: the user's name and role (localStorage) and
// when the token is due for a refresh (IndexedDB, which every tab reads alike), so every tab
// schedules the same refresh and a refresh by one tab is seen by all.

import { inStore } from './idb.ts';

export interface Problem {
  type?: string;
  title?: string;
  status: number;
  detail?: string;
  allowed?: string[];
  errors?: Array<{ pointer?: string; parameter?: string; detail: string }>;
  welds?: Array<{
    weldId: string;
    weldNumber?: string;
    status?: string;
    result?: string;
    allowed?: string[];
  }>;
  [key: string]: unknown;
}

export class ApiError extends Error {
  readonly status: number;
  readonly problem: Problem;
  constructor(problem: Problem) {
    super(problem.detail ?? problem.title ?? `HTTP ${problem.status}`);
    this.status = problem.status;
    this.problem = problem;
  }
}

/** The network could not be reached (offline, or the service is down): not an answer. */
export class NetworkError extends Error {}

export interface User {
  id: string;
  userName: string;
  displayName: string;
  role: 'viewer' | 'inspector' | 'engineer' | 'admin';
  tenant: { slug: string; name: string };
}

interface StoredSession {
  user: User;
}

/** When the access token is due for a refresh and when it was last refreshed, by any tab (ms). */
interface Clock {
  refreshAt: number;
  refreshedAt: number;
}

const SESSION_KEY = 'weld.session';
const REFRESH_LOCK = 'weld.refresh';
/** Refresh this long before the access token ends (at half its life when that is shorter). */
const REFRESH_AHEAD_MS = 60_000;

/** The signed-in user as last known (to start offline, and to follow other tabs). */
export function storedSession(): StoredSession | undefined {
  try {
    const raw = localStorage.getItem(SESSION_KEY);
    return raw ? (JSON.parse(raw) as StoredSession) : undefined;
  } catch {
    return undefined;
  }
}

/** The user this page is signed in as (undefined: signed out, or not known yet). */
let pageUserId: string | undefined;

function storeUser(user: User): void {
  pageUserId = user.id;
  localStorage.setItem(SESSION_KEY, JSON.stringify({ user }));
}

export function forgetSession(): void {
  pageUserId = undefined;
  localStorage.removeItem(SESSION_KEY);
  clearTimeout(refreshTimer);
  void inStore('session', 'readwrite', (store) => store.delete('clock')).catch(() => {});
}

const readClock = () =>
  inStore<Clock | undefined>(
    'session',
    'readonly',
    (store) => store.get('clock') as IDBRequest<Clock | undefined>,
  );

async function writeClock(expiresIn: number): Promise<Clock> {
  const now = Date.now();
  const life = expiresIn * 1000;
  const clock = { refreshAt: now + life - Math.min(REFRESH_AHEAD_MS, life / 2), refreshedAt: now };
  await inStore('session', 'readwrite', (store) => store.put(clock, 'clock'));
  return clock;
}

export function csrfToken(): string | undefined {
  const pair = document.cookie.split('; ').find((c) => c.startsWith('svc_csrf='));
  return pair ? decodeURIComponent(pair.slice('svc_csrf='.length)) : undefined;
}

/** Called when the session cannot be refreshed: the app shows the sign-in form. */
let onSignedOut: () => void = () => {};
export function whenSignedOut(callback: () => void): void {
  onSignedOut = callback;
}

/**
 * Called when another tab signs in as someone else (or signs in while this page shows the
 * sign-in form): the browser's cookies are now that user's, so this page must not go on as the
 * user it shows. The app reloads.
 */
let onUserChanged: () => void = () => {};
export function whenUserChanged(callback: () => void): void {
  onUserChanged = callback;
}

export interface Answer<T> {
  body: T;
  etag: string | undefined;
  status: number;
}

interface Options {
  method?: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  /** Sent as JSON; FormData is sent as it is (multipart/form-data, the browser sets the boundary). */
  body?: unknown;
  ifMatch?: string;
  /** What the answer may be (default JSON: the data paths; a file's bytes are anything). */
  accept?: string;
  /** false: a 401 is the answer (sign-in, refresh and sign-out themselves). */
  refresh?: boolean;
}

async function send(path: string, options: Options): Promise<Response> {
  const method = options.method ?? 'GET';
  const headers: Record<string, string> = { Accept: options.accept ?? 'application/json' };
  const form = options.body instanceof FormData ? options.body : undefined;
  if (options.body !== undefined && !form) headers['Content-Type'] = 'application/json';
  if (options.ifMatch) headers['If-Match'] = options.ifMatch;
  if (method !== 'GET') {
    const csrf = csrfToken();
    if (csrf) headers['X-CSRF-Token'] = csrf;
  }
  try {
    return await fetch(path, {
      method,
      headers,
      credentials: 'same-origin',
      body: form ?? (options.body === undefined ? undefined : JSON.stringify(options.body)),
    });
  } catch (error) {
    throw new NetworkError(error instanceof Error ? error.message : 'network error');
  }
}

async function problemOf(response: Response): Promise<Problem> {
  try {
    const body = (await response.json()) as Problem;
    return { ...body, status: response.status };
  } catch {
    return { status: response.status, title: response.statusText };
  }
}

/** The answer to a request, once refreshed and retried when it must be; ApiError unless 2xx. */
async function answer(path: string, options: Options): Promise<Response> {
  const startedAt = Date.now();
  let response = await send(path, options);
  // Without the CSRF cookie there is no session to refresh (the refresh would be refused).
  if (response.status === 401 && options.refresh !== false && csrfToken()) {
    if (await refreshSession(startedAt)) response = await send(path, options);
  }
  if (response.status === 401 && options.refresh !== false) {
    forgetSession();
    onSignedOut();
  }
  if (!response.ok) throw new ApiError(await problemOf(response));
  return response;
}

/** A request to a documented REST path; resolves with the JSON body and the ETag. */
export async function api<T>(path: string, options: Options = {}): Promise<Answer<T>> {
  const response = await answer(path, options);
  const body = response.status === 204 ? (undefined as T) : ((await response.json()) as T);
  return { body, etag: response.headers.get('ETag') ?? undefined, status: response.status };
}

/** A file's bytes (GET /attachments/{id}/content): the same session, refresh and errors. */
export async function download(path: string): Promise<Blob> {
  const response = await answer(path, { accept: '*/*' });
  try {
    return await response.blob();
  } catch (error) {
    // The connection broke while the bytes came.
    throw new NetworkError(error instanceof Error ? error.message : 'network error');
  }
}

interface TokenAnswer {
  expiresIn: number;
  user: User;
}

export async function signIn(userName: string, password: string): Promise<User> {
  const { body } = await api<TokenAnswer>('/auth/login', {
    method: 'POST',
    // Cookie mode: the tokens stay in the HttpOnly cookies, out of this script's reach.
    body: { userName, password, cookieOnly: true },
    refresh: false,
  });
  storeUser(body.user);
  scheduleRefresh(await writeClock(body.expiresIn));
  return body.user;
}

export async function currentUser(): Promise<User> {
  const { body } = await api<User>('/auth/me');
  storeUser(body);
  // Signed in before this page loaded: the clock says when to refresh (none known: soon).
  scheduleRefresh((await readClock()) ?? { refreshAt: 0, refreshedAt: 0 });
  return body;
}

/**
 * Ends the session on the service (which clears the cookies). Only a 204, or a 401 (the session
 * had ended already), counts: without a network this throws NetworkError, and on any other answer
 * (a 503 while the database is away, a proxy's 502) the ApiError, and nothing changes. Showing a
 * signed-out app while the cookies and the session live on would only look safe.
 */
export async function signOut(): Promise<void> {
  try {
    await api('/auth/logout', { method: 'POST', refresh: false });
  } catch (error) {
    if (!(error instanceof ApiError && error.status === 401)) throw error;
  }
  forgetSession();
}

/**
 * One refresh at a time across every tab of this origin (the Web Locks API): the refresh token
 * rotates on each use, and presenting the old one again (two tabs racing) would be taken for
 * reuse. Inside the lock a tab first reads the shared clock (IndexedDB): when another tab has
 * refreshed already (since `rejectedAt`, the time a request was refused; or, without it, so that
 * the token is no longer due), the browser holds its new cookies and there is nothing to do.
 * Resolves true when the session goes on.
 */
export async function refreshSession(rejectedAt?: number): Promise<boolean> {
  const run = async (): Promise<Clock | undefined> => {
    const clock = await readClock();
    if (clock && rejectedAt !== undefined && clock.refreshedAt > rejectedAt) return clock;
    if (clock && rejectedAt === undefined && clock.refreshAt > Date.now()) return clock;
    const response = await send('/auth/refresh', { method: 'POST' });
    if (!response.ok) return undefined;
    const body = (await response.json()) as TokenAnswer;
    storeUser(body.user);
    return writeClock(body.expiresIn);
  };
  try {
    const clock = await (navigator.locks ? navigator.locks.request(REFRESH_LOCK, run) : run());
    if (clock) scheduleRefresh(clock);
    return clock !== undefined;
  } catch (error) {
    if (!(error instanceof NetworkError)) throw error;
    // No answer. The service may have rotated the token and the answer been lost: asking again
    // within its 10-second grace gets the same successor, later it would look like theft. So
    // again in 3 s (and at once when the network returns), not only when a request is refused.
    clearTimeout(refreshTimer);
    refreshTimer = setTimeout(() => void refreshSession(rejectedAt), 3000);
    return true;
  }
}

let refreshTimer: ReturnType<typeof setTimeout> | undefined;

/** Refreshes when the clock says: every tab sets the timer, one refreshes. */
function scheduleRefresh(clock: Clock): void {
  clearTimeout(refreshTimer);
  const due = Math.max(clock.refreshAt - Date.now(), 1000);
  refreshTimer = setTimeout(() => {
    void refreshSession().then((ok) => {
      if (!ok) {
        forgetSession();
        onSignedOut();
      }
    });
  }, due);
}

// Another tab signed in or out: follow it.
addEventListener('storage', (event) => {
  if (event.key !== SESSION_KEY) return;
  if (event.newValue === null) return onSignedOut();
  const signedIn = (JSON.parse(event.newValue) as StoredSession).user.id;
  if (signedIn !== pageUserId) return onUserChanged();
  void readClock().then((clock) => clock && scheduleRefresh(clock));
});

addEventListener('online', () => {
  if (pageUserId) void refreshSession(); // only when due (the clock decides)
});
