// Where a webhook may connect: globally routable unicast addresses only (SECURITY.md, "Outbound
// requests"). An endpoint's URL is an admin's choice and the service sits inside someone's
// network, so every range of the IANA special-purpose registries is refused, and so is every
// address of this machine's own interfaces (a listener bound to 0.0.0.0 answers on all of them).
//
//   IPv4  https://www.iana.org/assignments/iana-ipv4-special-registry (and multicast, 224.0.0.0/4)
//   IPv6  only global unicast (2000::/3) is allowed at all, and within it the special-purpose
//         blocks of https://www.iana.org/assignments/iana-ipv6-special-registry are refused;
//         IPv4-mapped and IPv4-compatible forms are refused outright (use the IPv4 address)
//
// Two ways around it, both deliberate:
//   allowPrivate   everything is allowed (WEBHOOK_ALLOW_PRIVATE=true: tests and the embedded
//                  quick start only; server/config.ts refuses it with a database URL)
//   allowNetworks  WEBHOOK_ALLOW_NETWORKS: private networks where your receivers are (10.1.2.0/24).
//                  Inside them the special-purpose rule is lifted, except for the ranges that are
//                  never a receiver: this network, loopback, link-local (cloud metadata),
//                  multicast, reserved and broadcast, and this machine's own addresses.
//
// Names are resolved with the system's resolver, on libuv's thread pool: LookupSlots bounds how
// many lookups run at once, so a tenant's slow DNS cannot take the threads the rest of the
// service needs.
import dns from 'node:dns';
import net from 'node:net';
import os from 'node:os';

interface Range {
  network: string;
  bits: number;
  /** What the registry calls it, for the message of a refused registration. */
  what: string;
  /** Never allowed, not even inside WEBHOOK_ALLOW_NETWORKS. */
  always?: boolean;
}

const IPV4: Range[] = [
  { network: '0.0.0.0', bits: 8, what: '"this network" address', always: true },
  { network: '10.0.0.0', bits: 8, what: 'private address' },
  { network: '100.64.0.0', bits: 10, what: 'shared (carrier-grade NAT) address' },
  { network: '127.0.0.0', bits: 8, what: 'loopback address', always: true },
  { network: '169.254.0.0', bits: 16, what: 'link-local address', always: true },
  { network: '172.16.0.0', bits: 12, what: 'private address' },
  { network: '192.0.0.0', bits: 24, what: 'IETF protocol assignment' },
  { network: '192.0.2.0', bits: 24, what: 'documentation address (TEST-NET-1)' },
  { network: '192.31.196.0', bits: 24, what: 'AS112 anycast address' },
  { network: '192.52.193.0', bits: 24, what: 'AMT anycast address' },
  { network: '192.88.99.0', bits: 24, what: '6to4 relay anycast address' },
  { network: '192.168.0.0', bits: 16, what: 'private address' },
  { network: '192.175.48.0', bits: 24, what: 'AS112 anycast address' },
  { network: '198.18.0.0', bits: 15, what: 'benchmarking address' },
  { network: '198.51.100.0', bits: 24, what: 'documentation address (TEST-NET-2)' },
  { network: '203.0.113.0', bits: 24, what: 'documentation address (TEST-NET-3)' },
  { network: '224.0.0.0', bits: 4, what: 'multicast address', always: true },
  { network: '240.0.0.0', bits: 4, what: 'reserved or broadcast address', always: true },
];

/** Outside 2000::/3, and the special-purpose blocks inside it. */
const IPV6: Range[] = [
  { network: '::', bits: 128, what: 'unspecified address', always: true },
  { network: '::1', bits: 128, what: 'loopback address', always: true },
  { network: '::ffff:0:0', bits: 96, what: 'IPv4-mapped address', always: true },
  { network: '::', bits: 96, what: 'IPv4-compatible address', always: true },
  { network: '64:ff9b::', bits: 96, what: 'NAT64 address' },
  { network: '64:ff9b:1::', bits: 48, what: 'local NAT64 address' },
  { network: '100::', bits: 64, what: 'discard-only address', always: true },
  { network: 'fc00::', bits: 7, what: 'unique local address' },
  { network: 'fe80::', bits: 10, what: 'link-local address', always: true },
  { network: 'fec0::', bits: 10, what: 'site-local address', always: true },
  { network: 'ff00::', bits: 8, what: 'multicast address', always: true },
  { network: '2001::', bits: 23, what: 'IETF protocol assignment (Teredo, ORCHID, benchmarking)' },
  { network: '2001:db8::', bits: 32, what: 'documentation address' },
  { network: '2002::', bits: 16, what: '6to4 address' },
  { network: '2620:4f:8000::', bits: 48, what: 'AS112 anycast address' },
  { network: '3fff::', bits: 20, what: 'documentation address' },
];

const GLOBAL_UNICAST_V6 = new net.BlockList();
GLOBAL_UNICAST_V6.addSubnet('2000::', 3, 'ipv6');

const compiled = (ranges: Range[], family: 'ipv4' | 'ipv6') =>
  ranges.map((range) => {
    const list = new net.BlockList();
    list.addSubnet(range.network, range.bits, family);
    return { ...range, list };
  });
const V4 = compiled(IPV4, 'ipv4');
const V6 = compiled(IPV6, 'ipv6');

export interface TargetRules {
  /** Lift the address rule entirely (tests; the embedded quick start). */
  allowPrivate: boolean;
  /** Networks (CIDR) where receivers may be despite the special-purpose ranges. */
  allowNetworks?: readonly string[];
  /** This machine's addresses; default: every address of os.networkInterfaces(). */
  localAddresses?: () => string[];
  /** Name resolution; default: the system's (dns.lookup, every address). */
  lookup?: (hostname: string) => Promise<Array<{ address: string; family: number }>>;
  /** The lookups that may run at once; default: this process's (LOOKUP_SLOTS). */
  lookupSlots?: LookupSlots;
}

/**
 * A bound on the lookups that run at once. dns.lookup is getaddrinfo on libuv's thread pool (4
 * threads), which WebCrypto, argon2 and file reads share: a name whose DNS answers slowly holds a
 * thread for as long as it takes, whether or not anyone still waits for the answer. So at most
 * `size` lookups run at once, at most `perOwner` of them for one owner (a tenant), and a slot is
 * free only when its lookup has ended. A caller waits for a slot in order of arrival, and no
 * longer than its deadline.
 */
/** What LookupSlots.run answers when no slot came free before the deadline. */
export const NO_SLOT = Symbol('no lookup slot');

export class LookupSlots {
  #running = 0;
  readonly #byOwner = new Map<string, number>();
  readonly #waiting: Array<{ owner: string; start: () => void }> = [];

  readonly size: number;
  readonly perOwner: number;

  constructor(size: number, perOwner: number) {
    this.size = size;
    this.perOwner = perOwner;
  }

  /**
   * Runs `lookup` in a slot of `owner`'s. Resolves with its answer; with NO_SLOT when `signal`
   * aborts while it still waits for a slot (it never began: the slots were others'); with
   * undefined when `signal` aborts while the lookup runs (the slot stays taken until it ends).
   */
  run<T>(
    owner: string,
    signal: AbortSignal,
    lookup: () => Promise<T>,
  ): Promise<T | undefined | typeof NO_SLOT> {
    return new Promise<T | undefined | typeof NO_SLOT>((resolve, reject) => {
      if (signal.aborted) return resolve(NO_SLOT);
      const onAbort = () => {
        const index = this.#waiting.indexOf(entry);
        if (index >= 0) {
          this.#waiting.splice(index, 1);
          resolve(NO_SLOT);
        } else resolve(undefined);
      };
      const entry = {
        owner,
        start: () => {
          this.#running += 1;
          this.#byOwner.set(owner, (this.#byOwner.get(owner) ?? 0) + 1);
          // The promise settles once; an answer after the abort is dropped.
          new Promise<T>((answer) => answer(lookup())).then(resolve, reject).finally(() => {
            signal.removeEventListener('abort', onAbort);
            this.#running -= 1;
            const left = this.#byOwner.get(owner)! - 1;
            if (left === 0) this.#byOwner.delete(owner);
            else this.#byOwner.set(owner, left);
            this.#next();
          });
        },
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.#waiting.push(entry);
      this.#next();
    });
  }

  /** Starts the first waiting lookups whose owners are under their share, while slots are free. */
  #next(): void {
    for (let i = 0; i < this.#waiting.length && this.#running < this.size;) {
      const entry = this.#waiting[i]!;
      if ((this.#byOwner.get(entry.owner) ?? 0) >= this.perOwner) {
        i += 1;
        continue;
      }
      this.#waiting.splice(i, 1);
      entry.start();
    }
  }
}

/**
 * This process's lookups for webhooks: two at once, one per tenant, so webhooks never take more
 * than half of libuv's thread pool, and one tenant's slow names leave a slot to the others.
 */
export const LOOKUP_SLOTS = new LookupSlots(2, 1);

/** Every address of this machine's interfaces, without IPv6 zone ids. */
export function hostAddresses(): string[] {
  return Object.values(os.networkInterfaces())
    .flat()
    .flatMap((entry) => (entry ? [entry.address.replace(/%.*$/, '')] : []));
}

/** Parses WEBHOOK_ALLOW_NETWORKS entries ("10.1.2.0/24", "fd12::/48"); undefined if one is bad. */
export function networkList(entries: readonly string[]): net.BlockList | undefined {
  const list = new net.BlockList();
  for (const entry of entries) {
    const [address = '', bits, extra] = entry.split('/');
    const family = net.isIP(address);
    const max = family === 4 ? 32 : 128;
    if (family === 0 || extra !== undefined || bits === undefined || !/^[0-9]{1,3}$/.test(bits)) {
      return undefined;
    }
    if (Number(bits) > max) return undefined;
    list.addSubnet(address, Number(bits), family === 4 ? 'ipv4' : 'ipv6');
  }
  return list;
}

const parsedNetworks = new Map<string, net.BlockList | undefined>();
/** networkList, parsed once per list. */
function allowedNetworks(entries: readonly string[]): net.BlockList | undefined {
  const key = entries.join(',');
  if (!parsedNetworks.has(key)) parsedNetworks.set(key, networkList(entries));
  return parsedNetworks.get(key);
}

/**
 * Why a webhook may not connect to `address` (an IP address as text), or undefined when it may.
 * The reason names the range, for the 422 of a registration with an address in its URL (which
 * tells the caller nothing it does not know); a delivery reports every refusal the same way.
 */
export function addressProblem(address: string, rules: TargetRules): string | undefined {
  if (rules.allowPrivate) return undefined;
  const family = net.isIP(address);
  if (family === 0 || address.includes('%')) return 'is not an IP address';
  const type = family === 4 ? 'ipv4' : 'ipv6';
  const allowed = rules.allowNetworks?.length ? allowedNetworks(rules.allowNetworks) : undefined;
  const inAllowed = allowed?.check(address, type) ?? false;
  const ranges = family === 4 ? V4 : V6;
  for (const range of ranges) {
    if (range.list.check(address, type) && (range.always || !inAllowed)) {
      return `is a ${range.what} (${range.network}/${range.bits})`;
    }
  }
  if (family === 6 && !GLOBAL_UNICAST_V6.check(address, 'ipv6') && !inAllowed) {
    return 'is not a global unicast IPv6 address (outside 2000::/3)';
  }
  const own = new net.BlockList();
  for (const local of (rules.localAddresses ?? hostAddresses)()) {
    const localFamily = net.isIP(local);
    if (localFamily) own.addAddress(local, localFamily === 4 ? 'ipv4' : 'ipv6');
  }
  if (own.check(address, type)) return "is one of this machine's own addresses";
  return undefined;
}

const systemLookup = (hostname: string) =>
  dns.promises.lookup(hostname, { all: true, verbatim: true });

/**
 * Resolves `hostname` (an IP address stands for itself) and checks every address it has: one bad
 * address refuses the name, so a name cannot mix a public address with an internal one and hope
 * for the internal one to be picked. Returns the address to connect to (the first), which the
 * caller pins for the connection: there is no second lookup for the answer to change in between.
 * The lookup runs in one of `owner`'s lookup slots (LookupSlots), and is given up when `signal`
 * aborts (the attempt's deadline), whether it waited for a slot or for the answer.
 */
export async function resolveTarget(
  hostname: string,
  rules: TargetRules,
  {
    owner = '',
    signal = new AbortController().signal,
  }: { owner?: string; signal?: AbortSignal } = {},
): Promise<{ address: string; family: 4 | 6 } | { problem: string; noSlot?: true }> {
  const bare = hostname.replace(/^\[(.*)\]$/, '$1');
  const literal = net.isIP(bare);
  let addresses: Array<{ address: string; family: number }>;
  if (literal) addresses = [{ address: bare, family: literal }];
  else {
    try {
      const lookup = rules.lookup ?? systemLookup;
      const answer = await (rules.lookupSlots ?? LOOKUP_SLOTS).run(owner, signal, () =>
        lookup(bare),
      );
      if (answer === NO_SLOT) {
        // Not this name's doing: other tenants' slow names held every slot.
        return { problem: 'no lookup slot came free in time', noSlot: true };
      }
      if (answer === undefined) return { problem: 'the name did not resolve in time' };
      addresses = answer;
    } catch (error) {
      return {
        problem: `cannot resolve the name (${(error as { code?: string }).code ?? 'error'})`,
      };
    }
  }
  if (addresses.length === 0) return { problem: 'the name has no address' };
  for (const { address } of addresses) {
    const problem = addressProblem(address, rules);
    if (problem) return { problem: `the name resolves to ${address}, which ${problem}` };
  }
  const first = addresses[0]!;
  return { address: first.address, family: first.family === 6 ? 6 : 4 };
}
