// Part of the REST contract fuzzer (helpers/fuzz.ts, which describes it and re-exports what its
// users need): from a plan to the bytes that are sent (materialize), and sending
// them within what node's HTTP parser takes.
import http from 'node:http';
import type { HttpResponse } from './http.ts';
import type { FuzzWorld } from './fuzz-world.ts';
import {
  IdRef,
  Huge,
  RawJson,
  type Text,
  type AuthPlan,
  type RequestPlan,
  isPlainObject,
} from './fuzz-plans.ts';

//------------------------------------------------------------------------------------------------
// From a plan to bytes

/** A request as sent. */
export interface SentRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[]>;
  body: Buffer | undefined;
  chunked: boolean;
  /** What the Authorization or Cookie are, in words (a token is long and says nothing). */
  identity: string;
}

/**
 * A header value holds a tab and bytes 0x20 to 0xff (node refuses to send others): text beyond
 * goes as its UTF-8 bytes, control characters are left out.
 */
export const headerSafe = (text: string) =>
  [...Buffer.from(text, 'utf8').toString('latin1')]
    .filter((c) => c === '\t' || (c >= ' ' && c !== '\x7f'))
    .join('');

/** Percent-encoding of the UTF-8 bytes (a lone surrogate becomes U+FFFD, as in any UTF-8). */
export const percent = (value: string) =>
  [...Buffer.from(value, 'utf8')]
    .map((byte) => {
      const c = String.fromCharCode(byte);
      return /[A-Za-z0-9._~-]/.test(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
    })
    .join('');

export function pick(world: FuzzWorld, ref: IdRef): string {
  const list =
    ref.form === 'foreign'
      ? world.foreign
      : ref.pool === '*'
        ? [...world.pools.values()].flat()
        : (world.pools.get(ref.pool) ?? []);
  const id = list.length
    ? list[ref.n % list.length]!
    : `00000000-0000-4000-8000-${String(ref.n % 1e12).padStart(12, '0')}`;
  return ref.form === 'upper' ? id.toUpperCase() : id;
}

export function text(world: FuzzWorld, value: Text): string {
  if (value instanceof IdRef) return pick(world, value);
  if (value instanceof Huge) return value.unit.repeat(value.length);
  return value;
}

/** JSON text of a plan's value: ids drawn, huge strings built, raw JSON put in as it is. */
export function jsonText(world: FuzzWorld, value: unknown): string {
  if (value instanceof RawJson) return value.text;
  if (value instanceof IdRef || value instanceof Huge) return JSON.stringify(text(world, value));
  if (Array.isArray(value)) return `[${value.map((v) => jsonText(world, v)).join(',')}]`;
  if (isPlainObject(value)) {
    const members = Object.entries(value).filter(([, v]) => v !== undefined);
    return `{${members.map(([k, v]) => `${JSON.stringify(k)}:${jsonText(world, v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** A token with one part changed: its signature no longer fits, or it claims no algorithm. */
export function tamper(token: string, how: Extract<AuthPlan, { kind: 'tampered' }>['how']): string {
  const [header = '', payload = '', signature = ''] = token.split('.');
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as object;
  switch (how) {
    case 'signature':
      return `${header}.${payload}.${signature.startsWith('A') ? 'B' : 'A'}${signature.slice(1)}`;
    case 'payload':
      return `${header}.${part({ ...claims, role: 'admin', exp: 4102444800 })}.${signature}`;
    case 'alg-none':
      return `${part({ alg: 'none', typ: 'at+jwt' })}.${payload}.`;
    case 'truncated':
      return token.slice(0, -12);
    case 'extra-part':
      return `${token}.e30`;
  }
}

export function credentials(
  world: FuzzWorld,
  auth: AuthPlan,
  headers: SentRequest['headers'],
): string {
  switch (auth.kind) {
    case 'bearer':
      headers.authorization = `Bearer ${world.tokens[auth.role]}`;
      return `the ${auth.role}'s access token (Bearer)`;
    case 'cookie':
      headers.cookie = world.cookie.header;
      if (auth.csrf === 'wrong') headers['x-csrf-token'] = world.spare[0]!.csrf;
      else if (auth.csrf !== 'missing') headers['x-csrf-token'] = world.cookie.csrf;
      if (auth.csrf === 'cross-site') headers['sec-fetch-site'] = 'cross-site';
      if (auth.csrf === 'other-origin') headers.origin = 'http://evil.test';
      return `the engineer's session cookies, CSRF token ${auth.csrf}`;
    case 'none':
      return 'no credentials';
    case 'foreign':
      headers.authorization = `Bearer ${world.foreignToken}`;
      return "another tenant's access token";
    case 'tampered':
      headers.authorization = `Bearer ${tamper(world.tokens.viewer, auth.how)}`;
      return `the viewer's access token, tampered (${auth.how})`;
    case 'garbage':
      headers.authorization = headerSafe(text(world, auth.authorization));
      return 'a garbage Authorization header';
    case 'bad-cookie':
      headers.cookie = (Array.isArray(auth.cookie) ? auth.cookie : [auth.cookie]).map((c) =>
        headerSafe(text(world, c)),
      );
      if (auth.bearer) headers.authorization = `Bearer ${world.tokens.admin}`;
      return `garbage cookies${auth.bearer ? " beside the admin's access token" : ''}`;
  }
}

/** A JSON object as a form (application/x-www-form-urlencoded); any other JSON as its text. */
function formText(json: string): string {
  const value: unknown = JSON.parse(json);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return json;
  return new URLSearchParams(
    Object.entries(value).map(([k, v]): [string, string] => [
      k,
      typeof v === 'string' ? v : JSON.stringify(v),
    ]),
  ).toString();
}

export function materialize(world: FuzzWorld, plan: RequestPlan): SentRequest {
  const o = plan.operation;
  const hosts = {
    tenant: world.host,
    unknown: 'nobody.fuzz.test',
    'other-tenant': world.otherHost,
  };
  const headers: SentRequest['headers'] = { host: hosts[plan.host] };
  const identity = credentials(world, plan.auth, headers);
  for (const [name, value] of plan.headers) {
    headers[name.toLowerCase()] = headerSafe(text(world, value));
  }

  let path = plan.prefix + o.template;
  if (plan.id !== undefined) {
    // The plan's own oddities (%2F, %ZZ, ..) go as they are; anything else is encoded.
    const id = text(world, plan.id);
    path = path.replace('{id}', /^[\x21-\x7e]+$/.test(id) && !/[/?#]/.test(id) ? id : percent(id));
  }
  if (plan.query.length) {
    path += '?' + plan.query.map(([k, v]) => `${percent(k)}=${percent(text(world, v))}`).join('&');
  }

  const b = plan.body;
  let body: Buffer | undefined;
  if (b.kind === 'json') {
    const json = jsonText(world, b.value);
    // An OAuth2 endpoint's form: the same values, form-encoded (anything but an object as it is).
    body = Buffer.from(
      o.body?.type === 'application/x-www-form-urlencoded' ? formText(json) : json,
    );
  }
  if (b.kind === 'text') body = Buffer.from(text(world, b.text));
  if (b.kind === 'bytes') body = Buffer.from(b.bytes);
  if (b.kind === 'json-bad-utf8') {
    const json = Buffer.from(jsonText(world, b.value));
    const at = json.indexOf('":"') + 3; // into the first string value
    const bytes = Buffer.from(b.bytes);
    body = at > 2 ? Buffer.concat([json.subarray(0, at), bytes, json.subarray(at)]) : json;
  }
  if (body !== undefined && plan.contentType !== undefined) {
    headers['content-type'] = headerSafe(plan.contentType);
  }
  return { method: o.method, path, headers, body, chunked: plan.chunked, identity };
}

//------------------------------------------------------------------------------------------------
// Sending

export type FuzzResponse = HttpResponse;

/**
 * Sends a request over loopback and reads the whole answer (its first MiB is kept), or only the
 * head of an event stream, which does not end. No answer within `timeoutMs` is an error.
 */
export function send(port: number, req: SentRequest, timeoutMs: number): Promise<FuzzResponse> {
  const headers = { ...req.headers };
  if (req.body !== undefined && req.chunked) headers['transfer-encoding'] = 'chunked';
  else if (req.body !== undefined) headers['content-length'] = String(req.body.length);
  return new Promise((resolve, reject) => {
    const outgoing = http.request(
      { host: '127.0.0.1', port, method: req.method, path: req.path, headers, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        let kept = 0;
        const answer = () => {
          clearTimeout(timer);
          const text = Buffer.concat(chunks).toString('utf8');
          let json: unknown;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode!, headers: res.headers, text, json });
        };
        if (String(res.headers['content-type']).startsWith('text/event-stream')) {
          res.destroy();
          answer();
          return;
        }
        res.on('data', (chunk: Buffer) => {
          if (kept < 1 << 20) chunks.push(chunk);
          kept += chunk.length;
        });
        res.on('end', answer);
        res.on('error', fail);
      },
    );
    const timer = setTimeout(
      () => outgoing.destroy(new Error(`no answer within ${timeoutMs} ms`)),
      timeoutMs,
    );
    function fail(error: Error) {
      clearTimeout(timer);
      reject(error);
    }
    outgoing.on('error', fail);
    outgoing.end(req.body);
  });
}
