// The service worker (scope /app/): the app shell loads without a network, and the data the
// inspector last read stays readable in the field.
//
// - The shell (the page, script, styles, manifest, icons, and pdf.js with its worker for the weld
//   map) is cached at install, one cache per build (server/pwa.ts tells this file its version and
//   file names), and served cache first; a new build installs beside the old one and takes over
//   at once, deleting the old cache. pdf.js is there before any drawing is: a drawing seen before
//   a new build still opens offline after it.
// - GET requests to the data paths go to the network first; their answers are copied into the
//   'weld-data' cache and given back only when the network fails. Sign-out deletes that cache
//   (main.tsx). Auth, the event stream and every write always go to the network.

declare const BUILD_VERSION: string;
declare const SHELL_FILES: string[];

interface ExtendableEvent extends Event {
  waitUntil(work: Promise<unknown>): void;
}
interface FetchEvent extends ExtendableEvent {
  request: Request;
  respondWith(answer: Promise<Response>): void;
}
interface WorkerScope {
  registration: { scope: string };
  skipWaiting(): Promise<void>;
  clients: { claim(): Promise<void> };
  addEventListener(type: 'install' | 'activate', listener: (event: ExtendableEvent) => void): void;
  addEventListener(type: 'fetch', listener: (event: FetchEvent) => void): void;
}
const worker = self as unknown as WorkerScope;

const SHELL = `weld-shell-${BUILD_VERSION}`;
const DATA = 'weld-data';
/**
 * The data paths whose reads are kept for offline use (never /auth, /events, /graphql); the
 * attachments among them, so an ISO's drawing once seen is there in the field (weld-map.tsx).
 */
const DATA_PATHS =
  /^\/(api\/)?(isos|welds|weld-transitions|ndt-records|inspections|attachments)(\/|$)/;

worker.addEventListener('install', (event) => {
  event.waitUntil(
    caches
      .open(SHELL)
      .then((cache) =>
        cache.addAll(SHELL_FILES.map((file) => new URL(file, worker.registration.scope).href)),
      )
      .then(() => worker.skipWaiting()),
  );
});

worker.addEventListener('activate', (event) => {
  event.waitUntil(
    caches
      .keys()
      .then((names) =>
        Promise.all(
          names
            .filter((n) => n.startsWith('weld-shell-') && n !== SHELL)
            .map((n) => caches.delete(n)),
        ),
      )
      .then(() => worker.clients.claim()),
  );
});

worker.addEventListener('fetch', (event) => {
  const request = event.request;
  const url = new URL(request.url);
  if (request.method !== 'GET' || url.origin !== location.origin) return;
  if (url.pathname.startsWith(new URL(worker.registration.scope).pathname)) {
    event.respondWith(shellFirst(request, url));
  } else if (
    DATA_PATHS.test(url.pathname) &&
    request.headers.get('accept') !== 'text/event-stream'
  ) {
    event.respondWith(networkFirst(request));
  }
});

async function shellFirst(request: Request, url: URL): Promise<Response> {
  const cache = await caches.open(SHELL);
  // Every page of the app is the one page (the fragment routes it).
  const key =
    request.mode === 'navigate' ? new URL('./', worker.registration.scope).href : url.href;
  return (await cache.match(key)) ?? fetch(request);
}

async function networkFirst(request: Request): Promise<Response> {
  const cache = await caches.open(DATA);
  try {
    const answer = await fetch(request);
    if (answer.ok) await cache.put(request, answer.clone());
    return answer;
  } catch (error) {
    const kept = await cache.match(request);
    if (kept) return kept;
    throw error;
  }
}
