// Live updates: one Server-Sent Events stream per tab (GET /events/stream, cookie mode), from now
// on, for the changes the screens show. Views subscribe to it; an event carries the resource as
// its GET shows it, so a weld changed by a colleague is redrawn without a request.
//
// The stream lasts as long as the access token it was opened with. EventSource reconnects by
// itself (with Last-Event-ID, so nothing is lost) when the service ends it; when the reconnect is
// refused (the token ended before the app refreshed it) the app refreshes the session and opens
// a new stream after the last event it saw.
import { api } from './api.ts';

export interface ChangeEvent {
  id: string;
  type: string;
  subjectId: string;
  actorId: string | null;
  data: Record<string, unknown>;
  change: Record<string, unknown> | null;
}

const TYPES = [
  // An ISO's drawing changing (the weld map).
  'iso.updated',
  'weld.created',
  'weld.updated',
  'weld.status_changed',
  'ndt_record.created',
  'ndt_record.updated',
  'inspection.created',
  'inspection.updated',
];

type Listener = (event: ChangeEvent) => void;
const listeners = new Set<Listener>();
let source: EventSource | undefined;
let pending: symbol | undefined;
let lastId: string | undefined;
let retryTimer: ReturnType<typeof setTimeout> | undefined;
let onState: (connected: boolean) => void = () => {};

export function subscribe(listener: Listener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** Calls `callback` at most once per `ms` while welds change (to read their counts again). */
export function onWeldChanges(callback: () => void, ms: number): () => void {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const unsubscribe = subscribe((event) => {
    if (!event.type.startsWith('weld.') || timer) return;
    timer = setTimeout(() => {
      timer = undefined;
      callback();
    }, ms);
  });
  return () => {
    clearTimeout(timer);
    unsubscribe();
  };
}

/** Tells the app whether the stream is open (shown in the bar). */
export function watchConnection(callback: (connected: boolean) => void): void {
  onState = callback;
}

/**
 * Opens the stream after the last event seen. The first time, that is the newest event now
 * (GET /events?after=now answers its id), so a stream that breaks (offline, a closed laptop)
 * resumes from there and replays what colleagues did meanwhile.
 */
export async function startLive(): Promise<void> {
  stopLive();
  const opening = Symbol('opening');
  pending = opening;
  if (lastId === undefined) {
    try {
      const { body } = await api<{ nextCursor: string }>('/events?after=now&limit=1');
      lastId ??= body.nextCursor;
    } catch {
      return; // offline or signed out: the app starts the stream again when it can
    }
  }
  if (pending !== opening) return; // stopped, or started again, meanwhile
  const stream = new EventSource(`/events/stream?after=${lastId}&types=${TYPES.join(',')}`);
  source = stream;
  stream.onopen = () => onState(true);
  const deliver = (message: MessageEvent<string>) => {
    const event = JSON.parse(message.data) as ChangeEvent;
    lastId = event.id;
    for (const listener of listeners) listener(event);
  };
  for (const type of TYPES) stream.addEventListener(type, deliver);
  stream.addEventListener('resync', () => {
    // Too far behind to replay: start from now; the screens read again on the next change.
    lastId = undefined;
  });
  stream.onerror = () => {
    onState(false);
    if (stream.readyState !== EventSource.CLOSED) return; // EventSource retries by itself
    // Refused (401 once the access token ended): a request that refreshes the session when it
    // must (api.ts), then a new stream. Offline, the app starts one when the network returns.
    clearTimeout(retryTimer);
    retryTimer = setTimeout(() => {
      if (source !== stream) return;
      api('/auth/me').then(
        () => source === stream && void startLive(),
        () => {},
      );
    }, 3000);
  };
}

export function stopLive(): void {
  pending = undefined;
  clearTimeout(retryTimer);
  source?.close();
  source = undefined;
}

/** Forgets where the stream was (sign-out: the next user starts from now). */
export function resetLive(): void {
  stopLive();
  lastId = undefined;
}
