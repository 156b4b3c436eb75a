// The Weld Data app: the shell around the screens. It signs in (cookie mode), keeps the session
// alive (api.ts), follows the live stream (live.ts), sends the offline queue when the network
// returns (outbox.ts), and routes by the URL's fragment:
//
//   #/isos                    ISOs with their progress (isos.tsx)
//   #/welds?isoId=&status=... welds, filtered, in pages (welds.tsx)
//   #/welds/<id>              a weld: fields, status change, history, NDT, inspections, checks
//   #/welds/<id>/ndt          record an NDT result (records.tsx)
//   #/welds/<id>/inspection   record an inspection (records.tsx)
//   #/dashboard               the QC manager's dashboard, engineers and admins (dashboard.tsx)
import { render } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import {
  ApiError,
  csrfToken,
  currentUser,
  NetworkError,
  signIn,
  signOut,
  storedSession,
  whenSignedOut,
  whenUserChanged,
  type Problem,
  type User,
} from './api.ts';
import { Dashboard, mayUseDashboard } from './dashboard.tsx';
import { resetLive, startLive, stopLive, watchConnection } from './live.ts';
import { IsoList } from './isos.tsx';
import {
  changeText,
  clearOutbox,
  flushOutbox,
  isPlace,
  queued,
  watchOutbox,
  type Conflict,
  type QueuedChange,
} from './outbox.ts';
import { InspectionForm, NdtForm } from './records.tsx';
import { describeError, formText, Heading, sentence, type Shell } from './ui.tsx';
import { WeldDetail, WeldList } from './welds.tsx';

type Route =
  | { screen: 'isos' }
  | { screen: 'dashboard' }
  | { screen: 'welds'; params: URLSearchParams }
  | { screen: 'weld' | 'ndt' | 'inspection'; id: string };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function parseRoute(hash: string): Route {
  const [path = '', search = ''] = hash.replace(/^#/, '').split('?');
  const parts = path.split('/').filter(Boolean);
  // Only an id goes into a request path: a link cannot steer the app's requests elsewhere.
  if (parts[0] === 'welds' && parts[1] && UUID.test(parts[1])) {
    const id = parts[1];
    if (parts[2] === 'ndt') return { screen: 'ndt', id };
    if (parts[2] === 'inspection') return { screen: 'inspection', id };
    return { screen: 'weld', id };
  }
  if (parts[0] === 'welds') return { screen: 'welds', params: new URLSearchParams(search) };
  if (parts[0] === 'dashboard') return { screen: 'dashboard' };
  return { screen: 'isos' };
}

function useRoute(): Route {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const follow = () => setHash(location.hash);
    addEventListener('hashchange', follow);
    return () => removeEventListener('hashchange', follow);
  }, []);
  return parseRoute(hash);
}

/** The password as typed: spaces at either end are part of it. */
function passwordOf(form: HTMLFormElement): string {
  const value = new FormData(form).get('password');
  return typeof value === 'string' ? value : '';
}

function SignIn({ onSignedIn }: { onSignedIn: (user: User) => void }) {
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    setBusy(true);
    setError('');
    try {
      onSignedIn(await signIn(formText(form, 'userName') ?? '', passwordOf(form)));
    } catch (e) {
      if (e instanceof ApiError && e.status === 401) setError('Wrong user name or password.');
      else if (e instanceof ApiError && e.status === 429)
        setError(`Too many attempts. ${e.message}`);
      else if (e instanceof NetworkError) setError('No network: signing in needs the service.');
      else setError(e instanceof Error ? e.message : 'Signing in failed.');
    } finally {
      setBusy(false);
    }
  };
  return (
    <main id="main" class="signin">
      <Heading>Sign in to Weld Data</Heading>
      <form onSubmit={submit} aria-describedby={error ? 'signin-error' : undefined}>
        <div class="field">
          <label for="userName">User name</label>
          <input id="userName" name="userName" autocomplete="username" required />
        </div>
        <div class="field">
          <label for="password">Password</label>
          <input
            id="password"
            name="password"
            type="password"
            autocomplete="current-password"
            required
          />
        </div>
        {error && (
          <p id="signin-error" class="error" role="alert">
            {error}
          </p>
        )}
        <button type="submit" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}

function OfflineQueue({ changes, online }: { changes: QueuedChange[]; online: boolean }) {
  if (online && changes.length === 0) return null;
  return (
    <div class="banner offline" role="status">
      {!online && <strong>Offline. </strong>}
      {changes.length > 0
        ? `${changes.length} ${changes.some(isPlace) ? 'change' : 'status change'}` +
          `${changes.length === 1 ? '' : 's'} waiting to be sent: ` +
          changes.map(changeText).join(', ')
        : 'Changes you make are kept and sent when the network returns.'}
    </div>
  );
}

/** Why a queued change was refused, in the inspector's words (the problem's detail is for APIs). */
function whyNotApplied(problem: Problem): string {
  if (problem.status === 412) return 'Someone changed the weld while you were offline.';
  if (problem.status === 409)
    return `The rules allow from there: ${problem.allowed?.join(', ') || 'nothing'}.`;
  if (problem.status === 403) return 'Your role may not make this change.';
  if (problem.status === 422) return sentence(problem.detail ?? 'The change was refused.');
  return sentence(problem.detail ?? `The service answered ${problem.status}.`);
}

function Conflicts({ conflicts, dismiss }: { conflicts: Conflict[]; dismiss: () => void }) {
  if (conflicts.length === 0) return null;
  return (
    <div class="banner conflict" role="alert">
      <strong>
        {conflicts.length} change{conflicts.length === 1 ? ' was' : 's were'} not applied:
      </strong>
      <ul>
        {conflicts.map(({ change, current, problem }) => (
          <li key={change.key}>
            <a href={`#/welds/${change.weldId}`}>{change.weldNumber}</a>:{' '}
            {isPlace(change)
              ? `your ${change.fromPlace ? 'move' : 'placing'} of it on the drawing`
              : `your change ${change.fromStatus} → ${change.status}`}{' '}
            (made offline) was not applied. {current ? `It is now ${current.status}. ` : ''}
            {whyNotApplied(problem)}
          </li>
        ))}
      </ul>
      <button type="button" class="secondary" onClick={dismiss}>
        Dismiss
      </button>
    </div>
  );
}

/** Whose data this browser holds (the offline queue, the service worker's copies). */
const OWNER_KEY = 'weld.owner';

/**
 * A user signs in or comes back: what another user left on this device (a session that ended
 * without signing out) is discarded before anything is shown or sent, so no change queued by one
 * user is ever sent in another's name, and no one reads another's copies offline.
 */
async function adoptLocalData(user: User): Promise<void> {
  const owner = localStorage.getItem(OWNER_KEY);
  if (owner !== null && owner !== user.id) await discardLocalData();
  localStorage.setItem(OWNER_KEY, user.id);
}

/** The queue and the cached copies go; the owner stays, so what comes late is discarded too. */
async function discardLocalData(): Promise<void> {
  await clearOutbox().catch(() => {});
  await caches?.delete('weld-data').catch(() => false);
}

// The fragment routes the app, so the skip link moves the focus itself.
function skipToContent(event: Event) {
  event.preventDefault();
  document.getElementById('main')?.focus();
}

function App() {
  // undefined while the session is being looked up; null when signed out.
  const [user, setUser] = useState<User | null | undefined>(undefined);
  const [online, setOnline] = useState(navigator.onLine);
  const [live, setLive] = useState(false);
  const [outbox, setOutbox] = useState<QueuedChange[]>([]);
  const [conflicts, setConflicts] = useState<Conflict[]>([]);
  const [revision, setRevision] = useState(0);
  const cameBack = useRef(false);
  // What was last said, and the screen (URL fragment) it belongs to.
  const [message, setMessage] = useState({ text: '', at: '' });
  const route = useRoute();

  const announce = (text: string, at = location.hash) => setMessage({ text, at });
  const readOutbox = () => void queued().then(setOutbox, () => setOutbox([]));

  const enter = (signedIn: User) => void adoptLocalData(signedIn).then(() => setUser(signedIn));

  const flush = async (userId: string) => {
    const { applied, conflicts: found } = await flushOutbox(userId);
    if (applied.length) {
      announce(
        `${applied.length} change${applied.length === 1 ? '' : 's'} made offline applied: ` +
          applied
            .map(({ change, weld: w }) =>
              isPlace(change)
                ? `${w.weldNumber} is on the drawing`
                : `${w.weldNumber} is ${w.status}`,
            )
            .join(', '),
      );
    }
    if (found.length) setConflicts((before) => [...before, ...found]);
    readOutbox();
  };

  useEffect(() => {
    whenSignedOut(() => {
      resetLive();
      setUser(null);
    });
    whenUserChanged(() => location.reload());
    watchConnection(setLive);
    // Never signed in on this browser: the sign-in form, without asking the service first.
    if (!storedSession() && !csrfToken()) setUser(null);
    else
      currentUser().then(enter, (error: unknown) => {
        // Offline: the shell came from the service worker; go on as the user last known.
        setUser(error instanceof NetworkError ? (storedSession()?.user ?? null) : null);
      });
    readOutbox();
    const unwatch = watchOutbox(readOutbox);
    const goOnline = () => {
      cameBack.current = true;
      setOnline(true);
    };
    const goOffline = () => setOnline(false);
    addEventListener('online', goOnline);
    addEventListener('offline', goOffline);
    if ('serviceWorker' in navigator) {
      navigator.serviceWorker.register('sw.js', { scope: './' }).catch(() => {});
    }
    return () => {
      unwatch();
      removeEventListener('online', goOnline);
      removeEventListener('offline', goOffline);
    };
  }, []);

  // Signed in and online: the live stream runs, and the queue is sent. Back online, the screens
  // then read their data again: what they show came from before (or from the offline copies).
  useEffect(() => {
    if (!user || !online) return;
    void startLive();
    void flush(user.id).then(() => {
      if (cameBack.current) setRevision((n) => n + 1);
      cameBack.current = false;
    });
    return stopLive;
  }, [user?.id, online]);

  useEffect(() => {
    if (!message.text) return;
    const timer = setTimeout(() => setMessage({ text: '', at: '' }), 8000);
    return () => clearTimeout(timer);
  }, [message]);
  // A notice belongs to the screen it was said on.
  const said = message.at === location.hash ? message.text : '';

  if (user === undefined) return <main id="main" aria-busy="true" />;
  if (user === null) return <SignIn onSignedIn={enter} />;
  // This user's queued changes (another's are discarded at sign-in, and never sent).
  const mine = outbox.filter((c) => c.userId === user.id);

  const leave = async () => {
    const waiting = mine.length;
    if (waiting && !confirm(`${waiting} change(s) not yet sent will be discarded. Sign out?`))
      return;
    try {
      await signOut();
    } catch (error) {
      // The session (and its cookies) would outlive a sign-out that only looked done.
      announce(
        error instanceof NetworkError
          ? 'Signing out needs the network: you are still signed in. Try again when online.'
          : `Signing out failed (${describeError(error)}): you are still signed in. Try again.`,
      );
      return;
    }
    resetLive();
    // What this user saw stays on no shared device: the queue and the cached copies go.
    await discardLocalData();
    setConflicts([]);
    setUser(null);
  };

  const shell: Shell = {
    user,
    online,
    revision,
    announce,
    queued: mine,
    queuedChange: readOutbox,
  };
  const at = route.screen;
  return (
    <>
      <a class="skip" href="#main" onClick={skipToContent}>
        Skip to content
      </a>
      <header class="bar">
        <span class="title">Weld Data</span>
        <span>{user.tenant.name}</span>
        <nav aria-label="Main">
          <a href="#/isos" aria-current={at === 'isos' ? 'page' : undefined}>
            ISOs
          </a>
          <a href="#/welds" aria-current={at === 'welds' ? 'page' : undefined}>
            Welds
          </a>
          {mayUseDashboard(user) && (
            <a href="#/dashboard" aria-current={at === 'dashboard' ? 'page' : undefined}>
              Dashboard
            </a>
          )}
        </nav>
        <span class="who">
          <span>
            {user.displayName} ({user.role})
          </span>
          <span>{online ? (live ? 'Live' : 'Online') : 'Offline'}</span>
          <button type="button" onClick={() => void leave()}>
            Sign out
          </button>
        </span>
      </header>
      <OfflineQueue changes={mine} online={online} />
      <Conflicts conflicts={conflicts} dismiss={() => setConflicts([])} />
      <p class="sr-only" role="status" aria-live="polite">
        {said}
      </p>
      {said && (
        <p class="notice" aria-hidden="true">
          {said}
        </p>
      )}
      <main id="main" tabIndex={-1}>
        {route.screen === 'isos' && <IsoList shell={shell} />}
        {route.screen === 'dashboard' && <Dashboard shell={shell} />}
        {route.screen === 'welds' && <WeldList shell={shell} params={route.params} />}
        {route.screen === 'weld' && <WeldDetail key={route.id} shell={shell} id={route.id} />}
        {route.screen === 'ndt' && <NdtForm key={route.id} shell={shell} weldId={route.id} />}
        {route.screen === 'inspection' && (
          <InspectionForm key={route.id} shell={shell} weldId={route.id} />
        )}
      </main>
    </>
  );
}

render(<App />, document.getElementById('root')!);
