// Refresh tokens: "<session id>.<256 random bits>", opaque to clients and stored only as their
// SHA-256 (the rotation and reuse rules are SQL, migration 000003). Carrying the session id lets
// the CSRF check of a cookie refresh bind to the session before any lookup.
import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';

const REFRESH_TOKEN =
  /^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.[A-Za-z0-9_-]{43}$/;

export function newRefreshToken(sessionId: string): string {
  return `${sessionId}.${randomBytes(32).toString('base64url')}`;
}

/** The session a well-formed refresh token belongs to; undefined for anything else. */
export function refreshTokenSession(token: string): string | undefined {
  return REFRESH_TOKEN.exec(token)?.[1];
}

export function tokenHash(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

/** AES-256-GCM under a key derived from the old token: only its holder can open the successor. */
function successorKey(oldToken: string): Buffer {
  return Buffer.from(hkdfSync('sha256', oldToken, 'weld-refresh-successor', '', 32));
}

export function sealSuccessor(oldToken: string, successor: string): Buffer {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', successorKey(oldToken), iv);
  const body = Buffer.concat([cipher.update(successor, 'utf8'), cipher.final()]);
  return Buffer.concat([iv, body, cipher.getAuthTag()]);
}

export function openSuccessor(oldToken: string, box: Buffer): string {
  const decipher = createDecipheriv('aes-256-gcm', successorKey(oldToken), box.subarray(0, 12));
  decipher.setAuthTag(box.subarray(box.length - 16));
  return Buffer.concat([
    decipher.update(box.subarray(12, box.length - 16)),
    decipher.final(),
  ]).toString('utf8');
}
