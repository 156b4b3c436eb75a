// Sending one webhook message, the Standard Webhooks way (standardwebhooks.com):
//
//   POST <url>   Content-Type: application/json
//   webhook-id:        the message id (the event id; the same on every retry, for deduplication)
//   webhook-timestamp: seconds since the epoch, of this attempt
//   webhook-signature: v1,<base64 HMAC-SHA256 over "<id>.<timestamp>.<body>", keyed with the
//                      bytes of the endpoint's secret (whsec_<base64>)>
//
// Server-side request forgery: an endpoint's URL is the caller's choice, and the service sits
// inside someone's network. So only http(s), no credentials in the URL, and no loopback, private,
// link-local or otherwise internal address, checked on the address actually connected to (the
// lookup is ours, so a name that resolves to an internal address, or changes its answer between a
// check and the connection, is refused too). WEBHOOK_ALLOW_PRIVATE=true lifts the address rule
// (tests, and receivers on the same private network). Redirects are not followed.
import { createHmac, randomBytes } from 'node:crypto';
import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';

export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

export function signWebhook(secret: string, messageId: string, timestamp: number, body: string) {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const mac = createHmac('sha256', key)
    .update(`${messageId}.${timestamp}.${body}`)
    .digest('base64');
  return `v1,${mac}`;
}

/** Addresses a webhook may not reach unless WEBHOOK_ALLOW_PRIVATE=true. */
const INTERNAL = new net.BlockList();
for (const [network, bits] of [
  ['0.0.0.0', 8], // "this" network
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, cloud metadata services
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15], // benchmarking
  ['224.0.0.0', 3], // multicast and reserved
] as const) {
  INTERNAL.addSubnet(network, bits, 'ipv4');
}
for (const [network, bits] of [
  ['::', 96], // unspecified, loopback, and the deprecated IPv4-compatible ::a.b.c.d
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['ff00::', 8], // multicast
  ['64:ff9b::', 96], // NAT64 of any IPv4 address
] as const) {
  INTERNAL.addSubnet(network, bits, 'ipv6');
}

export function isInternalAddress(address: string): boolean {
  const family = net.isIP(address);
  if (family === 4) return INTERNAL.check(address, 'ipv4');
  if (family !== 6) return true; // not an address at all: refuse
  // IPv4-mapped (::ffff:a.b.c.d, or ::ffff:7f00:1 in hex): judged as the IPv4 address it is.
  const dotted = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (dotted) return INTERNAL.check(dotted[1]!, 'ipv4');
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address);
  if (hex) {
    const [high, low] = [parseInt(hex[1]!, 16), parseInt(hex[2]!, 16)];
    return INTERNAL.check(`${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`, 'ipv4');
  }
  return INTERNAL.check(address, 'ipv6');
}

/** Why a URL cannot be a webhook endpoint (undefined: it can, as far as its text shows). */
export function webhookUrlProblem(text: string, allowPrivate: boolean): string | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return 'must be an absolute URL';
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'must be http or https';
  if (url.username || url.password) return 'must not carry credentials';
  if (url.hash) return 'must not have a fragment';
  if (allowPrivate) return undefined;
  // Without brackets, and without the trailing dot of a fully qualified name (localhost.).
  const host = url.hostname
    .replace(/^\[(.*)\]$/, '$1')
    .replace(/\.$/, '')
    .toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost') || host.endsWith('.internal')) {
    return 'must not point at this machine or an internal network (WEBHOOK_ALLOW_PRIVATE)';
  }
  if (net.isIP(host) && isInternalAddress(host)) {
    return 'must not point at a loopback, private or link-local address (WEBHOOK_ALLOW_PRIVATE)';
  }
  return undefined;
}

export interface WebhookMessage {
  url: string;
  secret: string;
  messageId: string;
  body: string;
}

export interface WebhookAnswer {
  /** The HTTP status; undefined when there was no answer (see error). */
  status?: number;
  /** The first 1,000 characters of the answer's body. */
  response?: string;
  error?: string;
  durationMs: number;
}

const RESPONSE_KEEP = 1000;

/** Sends one message; never throws (a failure is an answer with an error). */
export function deliverWebhook(
  message: WebhookMessage,
  options: { timeoutMs: number; allowPrivate: boolean },
): Promise<WebhookAnswer> {
  const started = performance.now();
  const took = () => Math.round(performance.now() - started);
  return new Promise((resolve) => {
    let settled = false;
    const finish = (answer: Omit<WebhookAnswer, 'durationMs'>) => {
      if (settled) return;
      settled = true;
      // PostgreSQL text holds no NUL: an answer carrying one is kept without it.
      const clean = (text: string | undefined) => text?.replaceAll('\u0000', '');
      resolve({
        ...answer,
        response: clean(answer.response),
        error: clean(answer.error),
        durationMs: took(),
      });
    };
    const problem = webhookUrlProblem(message.url, options.allowPrivate);
    if (problem) {
      finish({ error: `refused: the URL ${problem}` });
      return;
    }
    const url = new URL(message.url);
    const timestamp = Math.floor(Date.now() / 1000);
    const client = url.protocol === 'https:' ? https : http;
    const request = client.request(url, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        'User-Agent': 'weld-data-service-webhooks',
        'webhook-id': message.messageId,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signWebhook(
          message.secret,
          message.messageId,
          timestamp,
          message.body,
        ),
      },
      // The connection goes to the address checked here, nowhere else.
      lookup: (hostname, lookupOptions, callback) => {
        dns.lookup(hostname, { ...lookupOptions, all: true }, (error, addresses) => {
          if (error) return callback(error, '', 0);
          const list = addresses;
          const refused = options.allowPrivate
            ? undefined
            : list.find((a) => isInternalAddress(a.address));
          if (refused || list.length === 0) {
            const reason = refused
              ? `refused: ${hostname} resolves to an internal address (WEBHOOK_ALLOW_PRIVATE)`
              : `${hostname} has no address`;
            return callback(new Error(reason), '', 0);
          }
          if (lookupOptions.all) return callback(null, list);
          return callback(null, list[0]!.address, list[0]!.family);
        });
      },
    });
    // The whole attempt, answer included, within the timeout: an endpoint that trickles its answer
    // holds the endpoint's worker no longer than one that does not answer at all.
    const deadline = setTimeout(
      () => request.destroy(new Error(`no answer within ${options.timeoutMs} ms`)),
      options.timeoutMs,
    );
    request.on('close', () => clearTimeout(deadline));
    request.on('error', (error) => finish({ error: error.message }));
    request.on('response', (response) => {
      let text = '';
      const answered = () => {
        finish({ status: response.statusCode, response: text.slice(0, RESPONSE_KEEP) });
        request.destroy(); // the rest of a long answer is not read
      };
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        text += chunk;
        if (text.length >= RESPONSE_KEEP) answered();
      });
      response.on('end', answered);
      response.on('error', (error) =>
        finish({ status: response.statusCode, error: error.message }),
      );
    });
    request.end(message.body);
  });
}
