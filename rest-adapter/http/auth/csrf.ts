// CSRF tokens (OWASP, signed double-submit): "<nonce>.<HMAC(tenant key, session id . nonce)>".
// A cookie planted by a sibling subdomain cannot carry a valid signature for the victim's session.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export function csrfToken(key: Buffer, sessionId: string): string {
  const nonce = randomBytes(16).toString('base64url');
  return `${nonce}.${csrfSignature(key, sessionId, nonce)}`;
}

export function csrfTokenValid(key: Buffer, sessionId: string, token: string): boolean {
  const [nonce, signature, extra] = token.split('.');
  if (!nonce || !signature || extra !== undefined) return false;
  return sameBytes(csrfSignature(key, sessionId, nonce), signature);
}

/**
 * Constant-time equality of two strings as UTF-8 bytes. Comparing byte lengths, not string lengths,
 * matters: a header of non-ASCII characters can have the cookie's length in characters but not in
 * bytes, and timingSafeEqual throws on buffers of different lengths.
 */
export function sameBytes(a: string, b: string): boolean {
  const left = Buffer.from(a, 'utf8');
  const right = Buffer.from(b, 'utf8');
  return left.length === right.length && timingSafeEqual(left, right);
}

function csrfSignature(key: Buffer, sessionId: string, nonce: string): string {
  return createHmac('sha256', key).update(`${sessionId}.${nonce}`).digest('base64url');
}
