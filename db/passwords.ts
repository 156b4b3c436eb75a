// Passwords: Argon2id (node:crypto, Node 24.7+) at OWASP's recommended minimum of 19 MiB memory,
// 2 passes, 1 lane, stored as a PHC string. Verification reads the parameters from the stored
// string, so raising them later only affects new hashes.
import { argon2, randomBytes, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';

const derive = promisify(argon2);
const PARAMETERS = { memory: 19_456, passes: 2, parallelism: 1, tagLength: 32 } as const;
const PHC = /^\$argon2id\$v=19\$m=(\d+),t=(\d+),p=(\d+)\$([A-Za-z0-9+/]+)\$([A-Za-z0-9+/]+)$/;

const b64 = (bytes: Buffer) => bytes.toString('base64').replace(/=+$/, '');

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const hash = await derive('argon2id', { message: password, nonce: salt, ...PARAMETERS });
  const { memory, passes, parallelism } = PARAMETERS;
  return `$argon2id$v=19$m=${memory},t=${passes},p=${parallelism}$${b64(salt)}$${b64(hash)}`;
}

/**
 * Hashed whenever there is no stored hash (unknown user), so that answer takes as long as a wrong
 * password does and the two cannot be told apart.
 */
const DUMMY = hashPassword(randomBytes(16).toString('hex'));

/** True only when `phc` is a valid Argon2id hash of `password`; null checks against a dummy. */
export async function verifyPassword(password: string, phc: string | null): Promise<boolean> {
  const stored = phc ?? (await DUMMY);
  const match = PHC.exec(stored);
  if (!match) return false;
  const [, memory, passes, parallelism, salt, expected] = match;
  const expectedBytes = Buffer.from(expected!, 'base64');
  const actual = await derive('argon2id', {
    message: password,
    nonce: Buffer.from(salt!, 'base64'),
    memory: Number(memory),
    passes: Number(passes),
    parallelism: Number(parallelism),
    tagLength: expectedBytes.length,
  });
  return timingSafeEqual(actual, expectedBytes) && phc !== null;
}

/** What a password set by an administrator must be: long enough to resist guessing. */
export function passwordProblem(password: string): string | undefined {
  if (password.length < 12) return 'a password needs at least 12 characters';
  if (password.length > 1024) return 'a password may have at most 1024 characters';
  return undefined;
}
