// Sending one webhook message, the Standard Webhooks way (standardwebhooks.com):
//
//   POST <url>   Content-Type: application/json
//   webhook-id:        the message id (the event id; the same on every retry, for deduplication)
//   webhook-timestamp: seconds since the epoch, of this attempt
//   webhook-signature: v1,<base64 HMAC-SHA256 over "<id>.<timestamp>.<body>", keyed with the
//                      bytes of the endpoint's secret (whsec_<base64>)>
//
// Server-side request forgery: an endpoint's URL is the caller's choice. So only http(s), no
// credentials in the URL, and only globally routable addresses (webhook-address.ts), checked on
// every address the name resolves to, and the connection goes to the checked address (pinned: no
// second lookup, a fresh connection each time, redirects not followed).
//
// The caller learns as little as possible about what is behind the URL: the answer's status and
// how long it took, never its body or headers. An attempt that got no HTTP answer (an address
// refused by the rule, a name that does not resolve, a refused connection, a reset, a TLS
// failure, a timeout) is one outcome, NO_ANSWER, reported when the full timeout has passed
// whatever happened sooner, so that an open port and a closed one look the same. The cause goes
// to the server's log only (onFailure). The timeout covers the whole attempt, the name's lookup
// included: a name whose DNS answers slowly ends the same way, at the same time.
import { createHmac, randomBytes } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import {
  openSecret,
  SecretUnreadable,
  type SecretOwner,
  type StoredSecret,
  type WebhookSecretKeys,
} from '../../db/webhook-secrets.ts';
import type { Logger } from './log.ts';
import { addressProblem, resolveTarget, type TargetRules } from './webhook-address.ts';

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

/** Special-use names (RFC 6761, 6762, 8375) that never name a receiver on the internet. */
const LOCAL_NAME = /(^|\.)(localhost|local|localdomain|internal|home\.arpa)$/;

/** Why a URL cannot be a webhook endpoint (undefined: it can, as far as its text shows). */
export function webhookUrlProblem(text: string, rules: TargetRules): string | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return 'must be an absolute URL';
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'must be http or https';
  if (url.username || url.password) return 'must not carry credentials';
  if (url.hash) return 'must not have a fragment';
  if (rules.allowPrivate) return undefined;
  // Without brackets, and without the trailing dot of a fully qualified name (localhost.).
  const host = url.hostname
    .replace(/^\[(.*)\]$/, '$1')
    .replace(/\.$/, '')
    .toLowerCase();
  if (LOCAL_NAME.test(host)) {
    return 'must not name this machine or a local network (a globally routable address only)';
  }
  const problem = addressProblem(host, rules);
  if (problem && problem !== 'is not an IP address') {
    return `must be a globally routable address: ${host} ${problem}`;
  }
  return undefined;
}

export interface WebhookMessage {
  url: string;
  secret: string;
  messageId: string;
  body: string;
}

export interface DeliveryOptions extends TargetRules {
  /** The whole attempt, and the one time after which every attempt without an answer ends. */
  timeoutMs: number;
  /** Why an attempt got no answer, for the server's log (never for the endpoint's admin). */
  onFailure?: (cause: string) => void;
  /** Whose attempt it is (the tenant): its lookups share that owner's lookup slots. */
  owner?: string;
}

export interface WebhookAnswer {
  /** The HTTP status; undefined when there was no answer (error says so). */
  status?: number;
  /** NO_ANSWER (the one outcome of every failure without an HTTP status), or a refusal to send. */
  error?: string;
  durationMs: number;
  /**
   * The attempt never began: every lookup slot stayed taken (by other tenants' slow names) until
   * its deadline. The worker tries again rather than count it against the endpoint.
   */
  deferred?: true;
}

/** The error of every attempt that got no HTTP answer, whatever the cause. */
export function noAnswer(timeoutMs: number): string {
  return `no answer: the address was refused or unreachable, or it did not answer within ${timeoutMs} ms`;
}

/** Sends one message; never throws (a failure is an answer with an error). */
export async function deliverWebhook(
  message: WebhookMessage,
  options: DeliveryOptions,
): Promise<WebhookAnswer> {
  // The attempt's deadline runs from here: the lookup, the connection and the answer all fit in it.
  const started = performance.now();
  const expired = new AbortController();
  const deadline = setTimeout(() => expired.abort(), options.timeoutMs);
  try {
    return await attempt(message, options, started, expired.signal);
  } finally {
    clearTimeout(deadline);
  }
}

async function attempt(
  message: WebhookMessage,
  options: DeliveryOptions,
  started: number,
  expired: AbortSignal,
): Promise<WebhookAnswer> {
  const failed = async (cause: string): Promise<WebhookAnswer> => {
    options.onFailure?.(cause);
    const left = options.timeoutMs - (performance.now() - started);
    if (left > 0) await new Promise((resolve) => setTimeout(resolve, left));
    return { error: noAnswer(options.timeoutMs), durationMs: options.timeoutMs };
  };

  const problem = webhookUrlProblem(message.url, options);
  if (problem) return failed(`refused: the URL ${problem}`);
  const url = new URL(message.url);
  const target = await resolveTarget(url.hostname, options, {
    owner: options.owner,
    signal: expired,
  });
  if ('problem' in target) {
    const answer = await failed(`refused: ${target.problem}`);
    return 'noSlot' in target ? { ...answer, deferred: true } : answer;
  }
  if (expired.aborted) return failed(`no answer within ${options.timeoutMs} ms`);

  // The checked address, and no other: net.connect asks this instead of the resolver.
  const pinned: LookupFunction = (_hostname, lookupOptions, callback) => {
    if (lookupOptions.all) callback(null, [{ address: target.address, family: target.family }]);
    else callback(null, target.address, target.family);
  };
  const timestamp = Math.floor(Date.now() / 1000);
  const client = url.protocol === 'https:' ? https : http;
  const outcome = await new Promise<{ status: number } | { cause: string }>((resolve) => {
    let settled = false;
    const settle = (value: { status: number } | { cause: string }) => {
      if (settled) return;
      settled = true;
      resolve(value);
    };
    const request = client.request(url, {
      method: 'POST',
      // A connection of its own: never a pooled socket opened for an earlier lookup.
      agent: false,
      lookup: pinned,
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
    });
    // The whole attempt within the timeout: an endpoint that trickles its headers holds its lane
    // no longer than one that does not answer at all.
    const onExpired = () => request.destroy(new Error(`no answer within ${options.timeoutMs} ms`));
    expired.addEventListener('abort', onExpired, { once: true });
    request.on('close', () => expired.removeEventListener('abort', onExpired));
    request.on('error', (error: Error & { code?: string }) =>
      settle({ cause: error.code ?? error.message }),
    );
    request.on('response', (response) => {
      // The status is the answer; the body is neither read nor kept.
      settle({ status: response.statusCode ?? 0 });
      response.destroy();
      request.destroy();
    });
    request.end(message.body);
  });
  if ('cause' in outcome) return failed(outcome.cause);
  return { status: outcome.status, durationMs: Math.round(performance.now() - started) };
}

/**
 * Opens the endpoint's stored secret and sends the message signed with it. A secret this
 * instance cannot open (its key is not configured here) is not sent at all: the attempt fails
 * with a message naming the key (never unsigned, never with another secret), and is retried.
 */
export async function signedDelivery(
  keys: WebhookSecretKeys,
  stored: StoredSecret,
  owner: SecretOwner,
  message: Omit<WebhookMessage, 'secret'>,
  options: DeliveryOptions,
  logger: Logger,
): Promise<WebhookAnswer> {
  let secret: string;
  try {
    secret = openSecret(keys, stored, owner);
  } catch (error) {
    if (!(error instanceof SecretUnreadable)) throw error;
    logger.warn({ ...owner, keyId: error.keyId }, error.message);
    return {
      error: `not sent: this instance cannot open the endpoint's secret (key ${error.keyId}); the operator must configure that key`,
      durationMs: 0,
    };
  }
  return deliverWebhook({ ...message, secret }, { ...options, owner: owner.tenantId });
}
