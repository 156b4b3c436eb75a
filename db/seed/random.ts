// Where the seed's chance comes from, and its calendar.
//
// Two streams, so that a seeded tenant can be reproduced and two tenants seeded alike differ
// only where they must:
//
// - The data stream draws every number, date, choice and status. It is mulberry32 seeded with
//   --seed alone: two tenants seeded with the same --seed get identical data apart from ids.
// - Ids are UUIDv5s in NAMESPACE below, named `${slug}:${seed}:${n}` for the tenant's n-th id
//   (counting from 0): the same slug and --seed give the same ids in any database, and another
//   slug gives ids of its own, as unlikely as any two UUIDs to meet another tenant's.
//
// Each id also moves the data stream past the 31 draws it cost when ids came from that stream,
// so a seed still gives the data it always gave (bench data and earlier runs stay comparable).
// The order of the draws is part of the data too: moving one changes what every seed gives.
import { createHash } from 'node:crypto';

export interface Random {
  /** A number in [0, 1). */
  next(): number;
  /** A whole number from min to max, both included. */
  int(min: number, max: number): number;
  chance(p: number): boolean;
  pick<T>(items: readonly T[]): T;
  /** One of the values, each as likely as its weight. */
  weighted<T>(choices: ReadonlyArray<readonly [T, number]>): T;
  /** The tenant's next id. */
  id(): string;
}

/** The namespace of seeded ids (a random UUID, fixed once). */
const NAMESPACE = Buffer.from('6cb688726fbe43389bdb9b765d48e569', 'hex');

/** The draws the data stream used to spend on an id: 31 hex digits and variant of a UUIDv4. */
const DRAWS_PER_ID = 31;

/** The streams of one seeding: data from the seed, ids from the slug and the seed. */
export function random(slug: string, seed: number): Random {
  const data = mulberry32(seed);
  let ids = 0;
  const next = data.next;
  return {
    next,
    int: (min, max) => min + Math.floor(next() * (max - min + 1)),
    chance: (p) => next() < p,
    pick: (items) => items[Math.floor(next() * items.length)]!,
    weighted: (choices) => {
      let roll = next() * choices.reduce((sum, [, w]) => sum + w, 0);
      for (const [value, weight] of choices) if ((roll -= weight) < 0) return value;
      return choices.at(-1)![0];
    },
    id: () => {
      data.skip(DRAWS_PER_ID);
      return uuidV5(`${slug}:${seed}:${ids++}`);
    },
  };
}

/** mulberry32: small, fast, and the same sequence for the same seed everywhere. */
function mulberry32(seed: number) {
  const STEP = 0x6d2b79f5;
  let state = seed >>> 0;
  return {
    next: (): number => {
      state = (state + STEP) >>> 0;
      let x = state;
      x = Math.imul(x ^ (x >>> 15), x | 1);
      x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
      return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
    },
    /** As if next() were called `draws` times: each call moves the state by STEP. */
    skip: (draws: number): void => {
      state = (state + Math.imul(draws, STEP)) >>> 0;
    },
  };
}

/** RFC 9562 UUID version 5: SHA-1 of the namespace and the name, with version and variant set. */
function uuidV5(name: string): string {
  const hash = createHash('sha1').update(NAMESPACE).update(name).digest();
  hash[6] = (hash[6]! & 0x0f) | 0x50;
  hash[8] = (hash[8]! & 0x3f) | 0x80;
  const hex = hash.toString('hex', 0, 16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** Day 0 of the project: work starts on a Monday. */
const PROJECT_START = Date.UTC(2026, 0, 5);
const DAY = 86_400_000;

/** The date of a project day, as Postgres reads a date. */
export const date = (day: number): string =>
  new Date(PROJECT_START + day * DAY).toISOString().slice(0, 10);

/** A moment of a project day, `minutes` after midnight UTC. */
export const instant = (day: number, minutes: number): string =>
  new Date(PROJECT_START + day * DAY + minutes * 60_000).toISOString();
