// Changes made without a network (a weld's status, or its place on its ISO's drawing): kept in
// IndexedDB (they survive a reload or a closed tab), sent in the order they were made when the
// network returns, each with the If-Match of the weld as the inspector saw it. The service
// decides as it would have then: a weld that changed meanwhile answers 412, a change the rules
// refuse 409, and such a change becomes a conflict the app shows, never a silent overwrite. One
// tab sends at a time (a Web Lock), and a change leaves the queue as soon as its answer is in, so
// each is applied once.
import { api, ApiError, NetworkError, type Problem } from './api.ts';
import { inStore } from './idb.ts';
import type { Status, Weld } from './model.ts';

interface Queued {
  key?: number;
  /** Who made it: only that user's session sends it (main.tsx discards another user's). */
  userId: string;
  weldId: string;
  weldNumber: string;
  /** The ETag of the weld the change was made on. */
  ifMatch: string;
  queuedAt: string;
}

/** A status change (PATCH /welds/{id}/status); queued before places were, it has no `kind`. */
export interface QueuedStatus extends Queued {
  kind?: 'status';
  fromStatus: Status;
  status: Status;
  reason?: string;
  /** An acceptance's basis (one of the three), as PATCH /welds/{id}/status takes it. */
  ndtRecordId?: string;
  inspectionId?: string;
  disposition?: string;
  /** A re-weld's own welding (REPAIR -> PENDING). */
  repair?: { weldedOn: string; welderId: string | null };
}

/** Where a weld is on its ISO's drawing (weld-map.tsx). */
export interface Place {
  mapPage: number;
  mapX: number;
  mapY: number;
}

/** A weld placed on (or moved on) its ISO's drawing (PATCH /welds/{id} with the three fields). */
export interface QueuedPlace extends Queued {
  kind: 'place';
  place: Place;
  /** Where it was (null: not on the drawing). */
  fromPlace: Place | null;
}

export type QueuedChange = QueuedStatus | QueuedPlace;

export const isPlace = (change: QueuedChange): change is QueuedPlace => change.kind === 'place';

export const placeOf = (weld: Weld): Place | null =>
  weld.mapPage == null || weld.mapX == null || weld.mapY == null
    ? null
    : { mapPage: weld.mapPage, mapX: weld.mapX, mapY: weld.mapY };

/** The same place, as the service stores it (its numbers may come back rounded). */
export const samePlace = (a: Place | null, b: Place | null): boolean =>
  a === b ||
  (!!a &&
    !!b &&
    a.mapPage === b.mapPage &&
    Math.abs(a.mapX - b.mapX) < 1e-6 &&
    Math.abs(a.mapY - b.mapY) < 1e-6);

/** A queued change in a few words: "W001 → ACCEPTED", "W002 placed on the drawing". */
export function changeText(change: QueuedChange): string {
  if (!isPlace(change)) return `${change.weldNumber} → ${change.status}`;
  return `${change.weldNumber} ${change.fromPlace ? 'moved' : 'placed'} on the drawing`;
}

export interface Conflict {
  change: QueuedChange;
  /** The weld as it is now (when it could be read), and why the change was not applied. */
  current?: Weld;
  problem: Problem;
}

const LOCK = 'weld.outbox';

const listeners = new Set<() => void>();
const channel = 'BroadcastChannel' in globalThis ? new BroadcastChannel(LOCK) : undefined;
channel?.addEventListener('message', () => listeners.forEach((l) => l()));

/** Called when the queue changes, in this tab or another. */
export function watchOutbox(listener: () => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

function changed(): void {
  listeners.forEach((l) => l());
  channel?.postMessage('changed');
}

export async function queued(): Promise<QueuedChange[]> {
  return inStore('outbox', 'readonly', (store) => store.getAll() as IDBRequest<QueuedChange[]>);
}

export async function enqueue(change: QueuedChange): Promise<void> {
  await inStore('outbox', 'readwrite', (store) => store.add(change));
  changed();
}

/** A queued change replaced by a later one of the same kind (a weld moved again offline). */
export async function requeue(change: QueuedChange): Promise<void> {
  await inStore('outbox', 'readwrite', (store) => store.put(change));
  changed();
}

export async function clearOutbox(): Promise<void> {
  await inStore('outbox', 'readwrite', (store) => store.clear());
  changed();
}

async function remove(key: number): Promise<void> {
  await inStore('outbox', 'readwrite', (store) => store.delete(key));
}

/**
 * Sends the user's queued changes, oldest first. Stops at the first network failure (the rest
 * waits for the next chance). Returns the changes applied and the conflicts met.
 */
export async function flushOutbox(
  userId: string,
): Promise<{ applied: Array<{ change: QueuedChange; weld: Weld }>; conflicts: Conflict[] }> {
  const applied: Array<{ change: QueuedChange; weld: Weld }> = [];
  const conflicts: Conflict[] = [];
  const run = async () => {
    // The cookies decide who the service records: send only while they are this user's (another
    // tab may have signed someone else in since this page loaded).
    const signedIn = await api<{ id: string }>('/auth/me').then(
      (answer) => answer.body.id,
      () => undefined,
    );
    if (signedIn !== userId) return;
    for (const change of await queued()) {
      if (change.userId !== userId) continue;
      try {
        const { body } = isPlace(change)
          ? await api<Weld>(`/welds/${change.weldId}`, {
              method: 'PATCH',
              body: change.place,
              ifMatch: change.ifMatch,
            })
          : await api<Weld>(`/welds/${change.weldId}/status`, {
              method: 'PATCH',
              body: {
                status: change.status,
                ...(change.reason && { reason: change.reason }),
                ...(change.ndtRecordId && { ndtRecordId: change.ndtRecordId }),
                ...(change.inspectionId && { inspectionId: change.inspectionId }),
                ...(change.disposition && { disposition: change.disposition }),
                ...(change.repair && { repair: change.repair }),
              },
              ifMatch: change.ifMatch,
            });
        applied.push({ change, weld: body });
      } catch (error) {
        // Offline again, or signed out: the rest waits for the next chance.
        if (error instanceof NetworkError) break;
        if (!(error instanceof ApiError)) throw error;
        if (error.status === 401) break;
        const current = await api<Weld>(`/welds/${change.weldId}`).then(
          (answer) => answer.body,
          () => undefined,
        );
        // The answer to an earlier send was lost on the way back: the change is there already.
        const there =
          current &&
          (isPlace(change)
            ? samePlace(placeOf(current), change.place)
            : current.status === change.status);
        if (!(error.status === 412 && there)) {
          conflicts.push({ change, current, problem: error.problem });
        }
      }
      await remove(change.key!);
      changed();
    }
  };
  await (navigator.locks ? navigator.locks.request(LOCK, run) : run());
  return { applied, conflicts };
}
