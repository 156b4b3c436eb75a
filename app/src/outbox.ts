// Status changes made without a network: kept in IndexedDB (they survive a reload or a closed
// tab), sent in the order they were made when the network returns, each with the If-Match of the
// weld as the inspector saw it. The service decides as it would have then: a weld that changed
// meanwhile answers 412, a change the rules refuse 409, and such a change becomes a conflict the
// app shows, never a silent overwrite. One tab sends at a time (a Web Lock), and a change leaves
// the queue as soon as its answer is in, so each is applied once.
import { api, ApiError, NetworkError, type Problem } from './api.ts';
import { inStore } from './idb.ts';
import type { Status, Weld } from './model.ts';

export interface QueuedChange {
  key?: number;
  /** Who made it: only that user's session sends it (main.tsx discards another user's). */
  userId: string;
  weldId: string;
  weldNumber: string;
  fromStatus: Status;
  status: Status;
  reason?: string;
  /** The ETag of the weld the change was made on. */
  ifMatch: string;
  queuedAt: string;
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
): Promise<{ applied: Weld[]; conflicts: Conflict[] }> {
  const applied: Weld[] = [];
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
        const { body } = await api<Weld>(`/welds/${change.weldId}/status`, {
          method: 'PATCH',
          body: { status: change.status, ...(change.reason && { reason: change.reason }) },
          ifMatch: change.ifMatch,
        });
        applied.push(body);
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
        if (!(error.status === 412 && current?.status === change.status)) {
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
