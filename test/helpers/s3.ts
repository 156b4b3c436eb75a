// A real S3-compatible server on loopback for the tests of the S3 attachment store: s3rver (npm),
// its data in a temporary directory, one bucket; and the service's S3Store pointed at it.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ExecutionContext } from 'ava';
import S3rver from 's3rver';
import { S3Store } from '../../db/attachment-store.ts';

export async function startS3(t: ExecutionContext, bucket = 'weld-attachments'): Promise<S3Store> {
  const directory = await mkdtemp(path.join(tmpdir(), 'weld-s3-'));
  const server = new S3rver({
    address: '127.0.0.1',
    port: 0,
    silent: true,
    directory,
    configureBuckets: [{ name: bucket }],
  });
  const { port } = await server.run();
  t.teardown(async () => {
    await server.close();
    await rm(directory, { recursive: true, force: true });
  });
  return new S3Store({
    bucket,
    prefix: 'weld/',
    region: 'us-east-1',
    endpoint: `http://127.0.0.1:${port}`,
    forcePathStyle: true,
    // s3rver's own fixed credentials.
    credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
  });
}
