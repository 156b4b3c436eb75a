// Where attachments' bytes live: an object store, keyed by tenant and SHA-256 (content-addressed:
// a file attached twice is stored once). Two stores with one interface:
//
//   local  files under ATTACHMENT_DIR (default DATA_DIR/attachments), <tenant>/<ab>/<sha256>; each
//          written to a temporary name and renamed, so a reader never sees half a file
//   s3     any S3-compatible service (AWS S3, MinIO, Ceph, ...) through the AWS SDK: objects
//          <S3_PREFIX><tenant>/<sha256> in S3_BUCKET
//
// What is attached where is the database's (weld_public.attachments, row security); the store
// holds bytes only and is never read without that row having been read first as the caller.
// What a file is: db/file-types.ts.
import { createReadStream } from 'node:fs';
import { copyFile, mkdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { randomUUID } from 'node:crypto';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import type { AttachmentType } from './file-types.ts';

/** A stored file: its tenant and the SHA-256 of its bytes (hex). */
export interface StoreKey {
  tenantId: string;
  sha256: string;
}

export interface AttachmentStore {
  /** 'local' or 's3', for the logs and the health of the operator's view. */
  readonly kind: 'local' | 's3';
  /** Stores the file at `from` (whole or not at all). */
  put(key: StoreKey, from: string, size: number, contentType: AttachmentType): Promise<void>;
  has(key: StoreKey): Promise<boolean>;
  /** The bytes, or undefined when the store has no such file. */
  get(key: StoreKey): Promise<Readable | undefined>;
  /** Removes the file; a file already gone is no error. */
  delete(key: StoreKey): Promise<void>;
}

const SHA256 = /^[0-9a-f]{64}$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The key's path below the store's root; refuses anything but a tenant id and a hash. */
function keyPath(key: StoreKey): string[] {
  if (!UUID.test(key.tenantId) || !SHA256.test(key.sha256)) {
    throw new Error('an attachment key is a tenant id and a SHA-256');
  }
  return [key.tenantId, key.sha256.slice(0, 2), key.sha256];
}

/** Files under a directory of this machine (or a volume every instance mounts). */
export class LocalStore implements AttachmentStore {
  readonly kind = 'local';
  readonly root: string;
  constructor(root: string) {
    this.root = root;
  }

  private file(key: StoreKey): string {
    return path.join(this.root, ...keyPath(key));
  }

  async put(key: StoreKey, from: string): Promise<void> {
    const to = this.file(key);
    await mkdir(path.dirname(to), { recursive: true, mode: 0o700 });
    const partial = `${to}.${randomUUID()}.partial`;
    try {
      await copyFile(from, partial);
      await rename(partial, to);
    } finally {
      await rm(partial, { force: true });
    }
  }

  async has(key: StoreKey): Promise<boolean> {
    return stat(this.file(key)).then(
      (s) => s.isFile(),
      () => false,
    );
  }

  async get(key: StoreKey): Promise<Readable | undefined> {
    if (!(await this.has(key))) return undefined;
    return createReadStream(this.file(key));
  }

  async delete(key: StoreKey): Promise<void> {
    await rm(this.file(key), { force: true });
  }
}

export interface S3Options {
  bucket: string;
  /** Prepended to every key ("weld/" puts them in a folder of a shared bucket). */
  prefix: string;
  region: string;
  /** An S3-compatible service's address (MinIO, Ceph); none: AWS S3 itself. */
  endpoint?: string;
  /** Paths (host/bucket/key) rather than bucket.host, as most S3-compatible services want. */
  forcePathStyle: boolean;
  /** None: the AWS SDK's own chain (environment, profile, instance role). */
  credentials?: { accessKeyId: string; secretAccessKey: string };
}

const missing = (error: unknown) =>
  error instanceof S3ServiceException &&
  (error.name === 'NoSuchKey' ||
    error.name === 'NotFound' ||
    error.$metadata.httpStatusCode === 404);

/** Objects in an S3 bucket. */
export class S3Store implements AttachmentStore {
  readonly kind = 's3';
  private readonly client: S3Client;
  private readonly options: S3Options;
  constructor(options: S3Options) {
    this.options = options;
    this.client = new S3Client({
      region: options.region,
      endpoint: options.endpoint,
      forcePathStyle: options.forcePathStyle,
      credentials: options.credentials,
      // Checksums only where S3 requires them: the SDK's default trailing checksums use a chunked
      // upload encoding that S3-compatible services do not all read. (The service hashes every
      // file itself: the key is its SHA-256.)
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
  }

  private key(key: StoreKey): string {
    const [tenant, , sha256] = keyPath(key);
    return `${this.options.prefix}${tenant}/${sha256}`;
  }

  async put(key: StoreKey, from: string, size: number, contentType: AttachmentType) {
    await this.client.send(
      new PutObjectCommand({
        Bucket: this.options.bucket,
        Key: this.key(key),
        Body: createReadStream(from),
        ContentLength: size,
        ContentType: contentType,
      }),
    );
  }

  async has(key: StoreKey): Promise<boolean> {
    try {
      await this.client.send(
        new HeadObjectCommand({ Bucket: this.options.bucket, Key: this.key(key) }),
      );
      return true;
    } catch (error) {
      if (missing(error)) return false;
      throw error;
    }
  }

  async get(key: StoreKey): Promise<Readable | undefined> {
    try {
      const answer = await this.client.send(
        new GetObjectCommand({ Bucket: this.options.bucket, Key: this.key(key) }),
      );
      return answer.Body as Readable;
    } catch (error) {
      if (missing(error)) return undefined;
      throw error;
    }
  }

  async delete(key: StoreKey): Promise<void> {
    await this.client.send(
      new DeleteObjectCommand({ Bucket: this.options.bucket, Key: this.key(key) }),
    );
  }
}

/** The store a configuration names (server/config.ts: ATTACHMENT_STORE and its settings). */
export function openStore(
  config: { kind: 'local'; root: string } | ({ kind: 's3' } & S3Options),
): AttachmentStore {
  return config.kind === 'local' ? new LocalStore(config.root) : new S3Store(config);
}
