// What every screen shares: the shell's services, the focused heading, the status badge and the
// way a refused request is shown.
import type { ComponentChildren } from 'preact';
import { useEffect, useRef } from 'preact/hooks';
import { ApiError, NetworkError, type User } from './api.ts';
import type { Status } from './model.ts';
import type { QueuedChange } from './outbox.ts';

/** What every screen gets from the shell (main.tsx). */
export interface Shell {
  user: User;
  online: boolean;
  /**
   * Says something to screen readers and shows it briefly, on the screen `at` (a URL fragment;
   * default: this one), so a form can say what it did on the screen it goes back to.
   */
  announce: (message: string, at?: string) => void;
  /** Goes up when the screens should read their data again (back online, the queue sent). */
  revision: number;
  /** The changes waiting to be sent (outbox.ts). */
  queued: QueuedChange[];
  /** The offline queue changed (a screen queued a change). */
  queuedChange: () => void;
}

/** A screen's heading, focused when the screen opens so a screen reader says where it is. */
export function Heading({ children }: { children: ComponentChildren }) {
  const ref = useRef<HTMLHeadingElement>(null);
  useEffect(() => ref.current?.focus(), []);
  return (
    <h1 tabIndex={-1} ref={ref}>
      {children}
    </h1>
  );
}

export function StatusBadge({ status }: { status: Status }) {
  return <span class={`status ${status}`}>{status}</span>;
}

/** A form field's text, trimmed; undefined when empty. */
export function formText(form: HTMLFormElement, name: string): string | undefined {
  const value = new FormData(form).get(name);
  return typeof value === 'string' && value.trim() ? value.trim() : undefined;
}

/** The text with a capital first letter (problem details start in lower case). */
export function sentence(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/**
 * Names the item at `index` of the list `key` of what was sent ("welds", 0 -> "weld W001"), so an
 * error names what the user sees, not a position; undefined: "welds 1".
 */
export type ItemNamer = (key: string, index: number, parents: string[]) => string | undefined;

/** A JSON pointer in words: "/filmIntervals/1/weldIds" is "film intervals 2, weld ids". */
function fieldName(pointer: string, name?: ItemNamer): string {
  const parts = pointer.split('/').filter(Boolean);
  const words: string[] = [];
  for (let at = 0; at < parts.length; at++) {
    const part = parts[at]!;
    const index = parts[at + 1];
    const named =
      index !== undefined && /^\d+$/.test(index)
        ? name?.(part, Number(index), parts.slice(0, at))
        : undefined;
    if (named !== undefined) {
      words.push(named);
      at++;
    } else if (/^\d+$/.test(part) && words.length > 0) {
      words[words.length - 1] += ` ${Number(part) + 1}`; // "welds 2": its place, 1-based
    } else {
      words.push(part.replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase());
    }
  }
  return words.join(', ');
}

/** A failed request in words: the problem's detail and each field it names. */
export function describeError(error: unknown, name?: ItemNamer): string {
  if (error instanceof NetworkError) return 'The service cannot be reached (offline?).';
  if (!(error instanceof ApiError)) return error instanceof Error ? error.message : String(error);
  const named = (error.problem.errors ?? []).map((e) => {
    const field = fieldName(e.pointer ?? e.parameter ?? '', name);
    return field ? `${field}: ${e.detail}` : e.detail;
  });
  return sentence(named.length ? named.join('; ') : error.message);
}

export function ErrorNotice({ error }: { error: unknown }) {
  if (!error) return null;
  return (
    <p class="notice problem" role="alert">
      {describeError(error)}
    </p>
  );
}
