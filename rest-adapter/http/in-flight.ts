// Work in flight per key (a tenant, a user), against a limit: what imports, webhook test messages
// and GraphQL requests count with to refuse one more (429) rather than queue it.

export class InFlight {
  readonly #counts = new Map<string, number>();

  count(key: string): number {
    return this.#counts.get(key) ?? 0;
  }

  /**
   * Takes one of `key`'s places when it holds fewer than `limit`: returns the function that gives
   * it back (once; later calls do nothing), or undefined when every place is taken.
   */
  take(key: string, limit: number): (() => void) | undefined {
    const held = this.count(key);
    if (held >= limit) return undefined;
    this.#counts.set(key, held + 1);
    let given = false;
    return () => {
      if (given) return;
      given = true;
      const left = this.count(key) - 1;
      if (left > 0) this.#counts.set(key, left);
      else this.#counts.delete(key);
    };
  }
}

const byService = new WeakMap<object, Map<string, InFlight>>();

/**
 * The InFlight of one service (its pool) for one purpose: the routes of both prefixes (/x and
 * /api/x) share it, so a limit cannot be doubled by alternating them.
 */
export function inFlightOf(service: object, purpose: string): InFlight {
  let purposes = byService.get(service);
  if (!purposes) byService.set(service, (purposes = new Map<string, InFlight>()));
  let inFlight = purposes.get(purpose);
  if (!inFlight) purposes.set(purpose, (inFlight = new InFlight()));
  return inFlight;
}
