// A small HTTP client over a loopback socket. node:http rather than fetch, because the tests must
// set the Host header (tenants are chosen by origin) and fetch does not allow that. Every response
// of an operation the OpenAPI document describes is checked against it (helpers/openapi.ts).
import http from 'node:http';
import { assertMatchesContract } from './openapi.ts';

export interface HttpResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  /** The body as it came (a file's bytes; requests of this module always give it). */
  bytes?: Buffer;
  /** The body parsed as JSON, or undefined when it is not JSON. */
  json: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

export interface HttpRequest {
  method?: string;
  path: string;
  /** The Host header; defaults to the address connected to. */
  host?: string;
  headers?: Record<string, string>;
  /** A string or Buffer is sent as is; anything else as JSON with Content-Type application/json. */
  body?: unknown;
}

export function request(port: number, req: HttpRequest): Promise<HttpResponse> {
  const headers: Record<string, string> = { ...req.headers };
  let payload: string | Buffer | undefined;
  if (typeof req.body === 'string' || Buffer.isBuffer(req.body)) payload = req.body;
  else if (req.body !== undefined) {
    payload = JSON.stringify(req.body);
    headers['content-type'] ??= 'application/json';
  }
  if (payload !== undefined) headers['content-length'] = String(Buffer.byteLength(payload));
  headers.host = req.host ?? `127.0.0.1:${port}`;
  return new Promise((resolve, reject) => {
    const outgoing = http.request(
      {
        host: '127.0.0.1',
        port,
        method: req.method ?? 'GET',
        path: req.path,
        headers,
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const bytes = Buffer.concat(chunks);
          const text = bytes.toString('utf8');
          let json: unknown;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          const response = { status: res.statusCode!, headers: res.headers, text, bytes, json };
          // Every response of a documented operation must match the OpenAPI contract.
          try {
            assertMatchesContract(req.method ?? 'GET', req.path, response);
          } catch (error) {
            reject(error instanceof Error ? error : new Error(String(error)));
            return;
          }
          resolve(response);
        });
      },
    );
    outgoing.on('error', reject);
    outgoing.end(payload);
  });
}

/** A user's requests at one origin, with their access token as a Bearer header. */
export interface Client {
  get(path: string, headers?: Record<string, string>): Promise<HttpResponse>;
  post(path: string, body?: unknown, headers?: Record<string, string>): Promise<HttpResponse>;
  patch(path: string, body: unknown, headers?: Record<string, string>): Promise<HttpResponse>;
  del(path: string, headers?: Record<string, string>): Promise<HttpResponse>;
}

export function bearerClient(port: number, host: string, token: string): Client {
  const send = (method: string, path: string, body?: unknown, headers?: Record<string, string>) =>
    request(port, {
      method,
      path,
      host,
      body,
      headers: { authorization: `Bearer ${token}`, ...headers },
    });
  return {
    get: (path, headers) => send('GET', path, undefined, headers),
    post: (path, body, headers) => send('POST', path, body, headers),
    patch: (path, body, headers) => send('PATCH', path, body, headers),
    del: (path, headers) => send('DELETE', path, undefined, headers),
  };
}
