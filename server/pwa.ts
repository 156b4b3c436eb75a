// The inspectors' web app (the sources are in app/): built by esbuild when the service first
// serves it, held in memory, and served at /app/ on every tenant's origin. There is no build
// command and no build output on disk: what runs is always what the sources say.
//
// Every asset is served from here (no CDN) under a Content-Security-Policy that allows scripts,
// styles, connections and workers from the origin only: no inline script or style, no eval, no
// framing. Assets carry a strong ETag (their content hash) and `no-cache`, so a browser revalidates
// and the service worker (app/src/sw.ts) fetches a new shell when the build changes.
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { build, stop } from 'esbuild';
import type { Response } from 'express';
import { problems } from '../rest-adapter/http/problem.ts';
import type { Route } from '../rest-adapter/http/route.ts';

const APP = path.resolve(import.meta.dirname, '..', 'app');

/** The files served as they are, by name, with their media type. */
const STATIC_FILES: Record<string, string> = {
  'index.html': 'text/html; charset=utf-8',
  'app.css': 'text/css; charset=utf-8',
  'manifest.webmanifest': 'application/manifest+json',
  'icon.svg': 'image/svg+xml',
  'icon-192.png': 'image/png',
  'icon-512.png': 'image/png',
};

/**
 * pdf.js's worker (the weld map draws PDF drawings with pdf.js, app/src/weld-map.tsx), served
 * from the origin as /app/pdf.worker.mjs: the same package as the pdf.js the app bundles, so the
 * two versions always agree.
 */
const PDF_WORKER = createRequire(import.meta.url).resolve('pdfjs-dist/build/pdf.worker.min.mjs');

// The weld map needs nothing more than this: pdf.js runs from the origin (its worker by
// worker-src 'self') with eval and WebAssembly turned off (weld-map.tsx), draws into a canvas
// and gives the browser a PDF's fonts as bytes or system font names (FontFace), never as URLs; a
// PNG or JPEG drawing is decoded by createImageBitmap into a canvas, not shown by an <img> from a
// blob: URL. So img-src stays 'self', and no 'unsafe-eval', 'wasm-unsafe-eval', blob: or data:
// is needed anywhere (test/browser/weld-map.test.ts fails on any violation the page reports).
export const APP_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "manifest-src 'self'",
  "worker-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

interface Asset {
  body: Buffer;
  type: string;
  etag: string;
}

export type AppAssets = Map<string, Asset>;

const asset = (body: Buffer | string, type: string): Asset => {
  const bytes = typeof body === 'string' ? Buffer.from(body) : body;
  const hash = createHash('sha256').update(bytes).digest('base64url').slice(0, 22);
  return { body: bytes, type, etag: `"${hash}"` };
};

/**
 * Builds the app: the page script (app/src/main.tsx, as app.js and the chunks it imports later)
 * and the service worker (app/src/sw.ts) as minified ES bundles, and the static files and pdf.js's
 * worker beside them. The service worker is told the build's version (a hash of everything else)
 * and the shell's file names, so each build caches its own.
 */
export async function buildApp(): Promise<AppAssets> {
  const assets: AppAssets = new Map();
  for (const [name, type] of Object.entries(STATIC_FILES)) {
    assets.set(name, asset(await readFile(path.join(APP, name)), type));
  }
  const bundle = async (entry: string, define: Record<string, string> = {}) => {
    const result = await build({
      entryPoints: [path.join(APP, 'src', entry)],
      bundle: true,
      format: 'esm',
      target: 'es2022',
      minify: true,
      write: false,
      // What the page imports only when it needs it (pdf.js, 400 KB, for a drawing) is a chunk
      // of its own: app.js stays small. Nothing is written to `outdir`; it only names the files.
      splitting: true,
      outdir: path.join(APP, 'build'),
      entryNames: '[name]',
      chunkNames: 'chunk-[hash]',
      jsx: 'automatic',
      jsxImportSource: 'preact',
      define,
      logLevel: 'silent',
    });
    return result.outputFiles.map((file) => ({ name: path.basename(file.path), text: file.text }));
  };
  const script = 'text/javascript; charset=utf-8';
  for (const { name, text } of await bundle('main.tsx')) {
    assets.set(name === 'main.js' ? 'app.js' : name, asset(text, script));
  }
  assets.set('pdf.worker.mjs', asset(await readFile(PDF_WORKER), script));

  const version = createHash('sha256');
  for (const [name, a] of [...assets].sort(([x], [y]) => x.localeCompare(y))) {
    version.update(name).update(a.etag);
  }
  const shell = ['./', ...assets.keys()].filter((name) => name !== 'index.html');
  const [worker] = await bundle('sw.ts', {
    BUILD_VERSION: JSON.stringify(version.digest('base64url').slice(0, 16)),
    SHELL_FILES: JSON.stringify(shell),
  });
  assets.set('sw.js', asset(worker!.text, script));
  // esbuild keeps its build process for the next build; there is none: let it go.
  await stop();
  return assets;
}

function send(res: Response, ifNoneMatch: string | undefined, a: Asset): void {
  res.setHeader('Content-Security-Policy', APP_CSP);
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Referrer-Policy', 'no-referrer');
  res.setHeader('Cache-Control', 'no-cache');
  res.setHeader('ETag', a.etag);
  if (ifNoneMatch === a.etag) return void res.status(304).end();
  res.type(a.type).send(a.body);
}

let built: Promise<AppAssets> | undefined;

/**
 * The build, once per process, made by the first request to /app/ (about 0.1 s): an instance
 * that only serves the API never holds it. A failed build is tried again by the next request.
 */
export function appAssets(): Promise<AppAssets> {
  built ??= buildApp().catch((error: unknown) => {
    built = undefined;
    throw error;
  });
  return built;
}

/**
 * GET /app (redirects to /app/), /app/ (the page) and /app/<file>. Anonymous: the app shell is
 * the same for everyone and signs in itself; the data it shows comes from the REST paths.
 */
export function appRoutes(): Route[] {
  return [
    {
      method: 'GET',
      path: '/app',
      anonymous: true,
      handler: (_req, res) => void res.redirect(308, '/app/'),
    },
    {
      method: 'GET',
      path: '/app/',
      anonymous: true,
      handler: async (req, res) =>
        send(res, req.get('if-none-match'), (await appAssets()).get('index.html')!),
    },
    {
      method: 'GET',
      path: '/app/:file',
      anonymous: true,
      handler: async (req, res) => {
        const file = (await appAssets()).get(req.params.file as string);
        if (!file || req.params.file === 'index.html') {
          throw problems.notFound(`No resource at ${req.path}.`);
        }
        send(res, req.get('if-none-match'), file);
      },
    },
  ];
}
