// The app's IndexedDB database: what must survive a reload and be seen alike by every tab at once
// (localStorage is not: Chromium hands a change to other tabs a moment later).
//
//   outbox   changes made offline (a status, a place on a drawing), in order (outbox.ts)
//   session  one record, 'clock': when a refresh is due and when the last one was (api.ts)

const NAME = 'weld-app';
export type StoreName = 'outbox' | 'session';

function open(): Promise<IDBDatabase> {
  return new Promise((resolve, reject) => {
    const request = indexedDB.open(NAME, 1);
    request.onupgradeneeded = () => {
      request.result.createObjectStore('outbox', { keyPath: 'key', autoIncrement: true });
      request.result.createObjectStore('session');
    };
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error ?? new Error('IndexedDB is not available'));
  });
}

/** One request in a transaction of its own; resolves when the transaction has committed. */
export async function inStore<T>(
  name: StoreName,
  mode: IDBTransactionMode,
  work: (store: IDBObjectStore) => IDBRequest<T>,
): Promise<T> {
  const db = await open();
  try {
    return await new Promise<T>((resolve, reject) => {
      const tx = db.transaction(name, mode);
      const request = work(tx.objectStore(name));
      tx.oncomplete = () => resolve(request.result);
      tx.onerror = () => reject(tx.error ?? new Error('IndexedDB transaction failed'));
    });
  } finally {
    db.close();
  }
}
