// The weld map, on an ISO's screen (#/welds?isoId=..., welds.tsx): the ISO's drawing with a mark
// for every weld placed on it.
//
// - The drawing is an attachment of the ISO (its drawingId): a PDF, drawn a page at a time into a
//   canvas by pdf.js, or a PNG or JPEG, decoded into the same canvas. pdf.js is a chunk of its own
//   (loaded only for a PDF) and runs its worker from the origin (server/pwa.ts); the service
//   worker keeps both with the shell, and the drawing's bytes with the data it keeps (sw.ts), so
//   a drawing seen once opens offline.
// - A weld's mark sits at its mapPage, mapX and mapY (fractions of the page's width and height
//   from its top-left corner, so a mark stays put at any zoom and screen width), coloured as its
//   status badge, and links to the weld. The ISO's welds follow the live stream: a colleague's
//   change moves or recolours a mark at once.
// - Inspectors and above place welds: pick one (or a placed one, to move it), then tap the
//   drawing, or move the aim with the arrow keys and press Enter. It is PATCH /welds/{id} with
//   If-Match; without a network it is queued like a status change (outbox.ts: sent when the
//   network returns, a weld changed meanwhile shown as a conflict). The mark shows at once, dashed
//   while it waits.
// - Engineers and admins upload the drawing (POST /attachments, then PATCH /isos/{id}), or choose
//   one of the ISO's files.
import type { PDFDocumentProxy } from 'pdfjs-dist';
import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { api, ApiError, download, NetworkError, type User } from './api.ts';
import { subscribe } from './live.ts';
import {
  byWeldNumber,
  query,
  tagOf,
  type Attachment,
  type Iso,
  type Page,
  type Weld,
} from './model.ts';
import { enqueue, isPlace, placeOf, requeue, type Place, type QueuedPlace } from './outbox.ts';
import { describeError, sentence, type Shell } from './ui.tsx';

/** What a drawing may be (an ISO's other files, CSV among them, are not offered). */
const DRAWABLE = new Set(['application/pdf', 'image/png', 'image/jpeg']);
/** A page is drawn at most this wide, and this many pixels in all: a phone holds that easily. */
const MAX_WIDTH = 4096;
const MAX_PIXELS = 16_000_000;
const ZOOMS = [1, 1.5, 2, 3, 4];

const mayPlace = (user: User) => user.role !== 'viewer';
const mayChooseDrawing = (user: User) => user.role === 'engineer' || user.role === 'admin';

/** A fraction of the page, within it, to the 4 decimals the service keeps. */
const fraction = (value: number) => Math.round(Math.min(1, Math.max(0, value)) * 10_000) / 10_000;
const percent = (value: number) => `${Math.round(value * 1_000_000) / 10_000}%`;

//------------------------------------------------------------------------------------------------
// Drawings: a PDF or an image, each page drawn into a canvas of its own

type PdfJs = typeof import('pdfjs-dist');
let pdfjs: Promise<PdfJs> | undefined;

function loadPdfJs(): Promise<PdfJs> {
  pdfjs ??= import('pdfjs-dist').then((lib) => {
    lib.GlobalWorkerOptions.workerSrc = new URL('pdf.worker.mjs', document.baseURI).href;
    return lib;
  });
  pdfjs.catch(() => (pdfjs = undefined));
  return pdfjs;
}

interface Drawing {
  pages: number;
  /** Page `page` (from 1) drawn into a new canvas about `width` pixels wide. */
  render(page: number, width: number): Promise<HTMLCanvasElement>;
  close(): void;
}

/** The scale that makes a w x h page `width` wide, within MAX_WIDTH and MAX_PIXELS. */
const scaleFor = (w: number, h: number, width: number) =>
  Math.min(Math.min(width, MAX_WIDTH) / w, Math.sqrt(MAX_PIXELS / (w * h)));

function canvasOf(width: number, height: number): HTMLCanvasElement {
  const canvas = document.createElement('canvas');
  canvas.width = Math.max(1, Math.floor(width));
  canvas.height = Math.max(1, Math.floor(height));
  return canvas;
}

function pdfDrawing(doc: PDFDocumentProxy): Drawing {
  return {
    pages: doc.numPages,
    async render(pageNumber, width) {
      const page = await doc.getPage(pageNumber);
      const whole = page.getViewport({ scale: 1 }); // as shown: its rotation applied
      const viewport = page.getViewport({ scale: scaleFor(whole.width, whole.height, width) });
      const canvas = canvasOf(viewport.width, viewport.height);
      await page.render({ canvas, viewport }).promise;
      return canvas;
    },
    close: () => void doc.destroy(),
  };
}

function imageDrawing(image: ImageBitmap): Drawing {
  return {
    pages: 1,
    // At most its own size: drawn once, the browser scales it for any zoom.
    render() {
      const scale = Math.min(1, scaleFor(image.width, image.height, MAX_WIDTH));
      const canvas = canvasOf(image.width * scale, image.height * scale);
      canvas.getContext('2d')!.drawImage(image, 0, 0, canvas.width, canvas.height);
      return Promise.resolve(canvas);
    },
    close: () => image.close(),
  };
}

/** The drawing's bytes (the service worker's copy offline), opened by pdf.js or decoded. */
async function openDrawing(attachment: Attachment): Promise<Drawing> {
  const bytes = await download(`/attachments/${attachment.id}/content`);
  const type = bytes.type || attachment.contentType;
  if (type === 'application/pdf') {
    const lib = await loadPdfJs();
    const doc = await lib.getDocument({
      data: new Uint8Array(await bytes.arrayBuffer()),
      // The app's CSP allows neither eval nor WebAssembly (server/pwa.ts): pdf.js is told so,
      // rather than trying them (fonts are drawn from paths, rare image codecs done in script).
      isEvalSupported: false,
      useWasm: false,
    }).promise;
    return pdfDrawing(doc);
  }
  if (type === 'image/png' || type === 'image/jpeg') {
    // Into a canvas, as a PDF page is: no <img> from a blob: URL, which the CSP would need.
    return imageDrawing(await createImageBitmap(bytes));
  }
  throw new Error(`${attachment.fileName} is not a PDF or an image: it cannot be shown.`);
}

//------------------------------------------------------------------------------------------------
// The ISO's welds

async function readWelds(isoId: string): Promise<Weld[]> {
  const all: Weld[] = [];
  let cursor: string | undefined;
  do {
    const { body } = await api<Page<Weld>>(`/welds${query({ isoId, limit: '500', cursor })}`);
    all.push(...body.items);
    cursor = body.nextCursor ?? undefined;
  } while (cursor);
  return all.sort(byWeldNumber);
}

/** The list with `weld` in it, when it is newer than the one there (events come in any order). */
function withWeld(list: Weld[] | undefined, weld: Weld): Weld[] | undefined {
  if (!list) return list;
  const known = list.find((w) => w.id === weld.id);
  if (known && known.version >= weld.version) return list;
  const others = list.filter((w) => w.id !== weld.id);
  return [...others, weld].sort(byWeldNumber);
}

//------------------------------------------------------------------------------------------------
// The map

/** A place made here, shown until the weld itself says where it is (a newer version). */
interface Guess {
  place: Place;
  version: number;
}

export function WeldMap({ shell, isoId }: { shell: Shell; isoId: string }) {
  const [iso, setIso] = useState<Iso | undefined>();
  const [welds, setWelds] = useState<Weld[] | undefined>();
  const [error, setError] = useState<unknown>();
  const [file, setFile] = useState<{ attachment: Attachment; drawing: Drawing } | undefined>();
  const [fileError, setFileError] = useState<unknown>();
  const [pageNumber, setPageNumber] = useState(1);
  const [zoom, setZoom] = useState(0);
  /** The pixel width the sheet needs (its CSS width times the device's pixel ratio). */
  const [width, setWidth] = useState(0);
  /** What the canvas shows: "<attachment id>:<page>". */
  const [drawn, setDrawn] = useState('');
  const [picked, setPicked] = useState<string | undefined>();
  const [aim, setAim] = useState({ x: 0.5, y: 0.5 });
  const [guesses, setGuesses] = useState<Map<string, Guess>>(new Map());
  const [notice, setNotice] = useState('');
  const canvas = useRef<HTMLCanvasElement>(null);
  const sheet = useRef<HTMLDivElement>(null);
  const aimButton = useRef<HTMLButtonElement>(null);
  /** The mark to focus once drawn: the weld just placed (the aim it was placed with is gone). */
  const focusMark = useRef<string | undefined>();

  const readIso = () => api<Iso>(`/isos/${isoId}`).then(({ body }) => setIso(body));

  useEffect(() => {
    let gone = false;
    setError(undefined);
    Promise.all([api<Iso>(`/isos/${isoId}`), readWelds(isoId)]).then(
      ([{ body }, all]) => {
        if (gone) return;
        setIso(body);
        setWelds(all);
        setGuesses(new Map()); // the welds as they are now say where they are
      },
      (e: unknown) => !gone && setError(e),
    );
    return () => {
      gone = true;
    };
  }, [isoId, shell.revision]);

  // Live: the ISO's welds as colleagues change them, and its drawing when an engineer changes it.
  useEffect(
    () =>
      subscribe((event) => {
        if (event.type === 'iso.updated' && event.subjectId === isoId) {
          readIso().catch(() => {});
          return;
        }
        if (!event.type.startsWith('weld.')) return;
        const weld = event.data as unknown as Weld;
        if (typeof weld.version !== 'number') return;
        setWelds((list) =>
          weld.isoId === isoId ? withWeld(list, weld) : list?.filter((w) => w.id !== weld.id),
        );
      }),
    [isoId],
  );

  // The drawing: read again when it changes, or when it could not be read and the network is back.
  const drawingId = iso?.drawingId ?? null;
  const [retry, setRetry] = useState(0);
  useEffect(() => {
    if (fileError !== undefined) setRetry((n) => n + 1);
  }, [shell.revision]);
  useEffect(() => {
    setFile(undefined);
    setFileError(undefined);
    setDrawn('');
    if (!drawingId) return;
    let gone = false;
    let opened: Drawing | undefined;
    (async () => {
      const { body: attachment } = await api<Attachment>(`/attachments/${drawingId}`);
      const drawing = await openDrawing(attachment);
      if (gone) return drawing.close();
      opened = drawing;
      setPageNumber((n) => Math.min(n, drawing.pages));
      setFile({ attachment, drawing });
    })().catch((e: unknown) => !gone && setFileError(e));
    return () => {
      gone = true;
      opened?.close();
    };
  }, [drawingId, retry]);

  // The sheet's width decides how finely a PDF page is drawn (a zoom draws it again, finer).
  useEffect(() => {
    const element = sheet.current;
    if (!element) return;
    const observer = new ResizeObserver(() => {
      const pixels = element.clientWidth * devicePixelRatio;
      setWidth(Math.min(MAX_WIDTH, Math.ceil(pixels / 256) * 256));
    });
    observer.observe(element);
    return () => observer.disconnect();
  }, [file]);

  useEffect(() => {
    if (!file || !width) return;
    let gone = false;
    // Drawn aside, then copied in one go: the canvas never shows half a page, and a drawing that
    // a newer one overtook (another page, a zoom) is dropped.
    file.drawing.render(pageNumber, width).then(
      (aside) => {
        const shown = canvas.current;
        if (gone || !shown) return;
        shown.width = aside.width;
        shown.height = aside.height;
        shown.getContext('2d')!.drawImage(aside, 0, 0);
        setDrawn(`${file.attachment.id}:${pageNumber}`);
      },
      (e: unknown) => !gone && setFileError(e),
    );
    return () => {
      gone = true;
    };
  }, [file, pageNumber, width]);

  // A weld picked: the aim takes the focus (the keyboard's way to place it) as it first appears
  // (once its page is drawn), so no key pressed meanwhile goes elsewhere.
  const aimed = useRef<string | undefined>();
  useLayoutEffect(() => {
    if (!picked) aimed.current = undefined;
    else if (aimed.current !== picked && aimButton.current) {
      aimed.current = picked;
      aimButton.current.focus({ preventScroll: true });
    }
  });
  useLayoutEffect(() => {
    if (!focusMark.current) return;
    const mark = document.getElementById(`mark-${focusMark.current}`);
    if (mark) {
      mark.focus({ preventScroll: true });
      focusMark.current = undefined;
    }
  });

  /** Where a weld shows: a place waiting to be sent, one just made, or its own. */
  const waiting = new Map(
    shell.queued.filter((c): c is QueuedPlace => isPlace(c)).map((c) => [c.weldId, c]),
  );
  const placeShown = (weld: Weld): Place | null => {
    const guess = guesses.get(weld.id);
    return (
      waiting.get(weld.id)?.place ??
      (guess && weld.version <= guess.version ? guess.place : placeOf(weld))
    );
  };

  const place = async (weld: Weld, at: Place) => {
    setPicked(undefined);
    setNotice('');
    const queued = shell.queued.find((c) => c.weldId === weld.id);
    if (queued && !isPlace(queued)) return; // its status change waits (not offered, see below)
    focusMark.current = weld.id;
    setGuesses((known) => new Map(known).set(weld.id, { place: at, version: weld.version }));
    const forget = () =>
      setGuesses((known) => {
        const left = new Map(known);
        left.delete(weld.id);
        return left;
      });
    const keep = async () => {
      const queuedAt = new Date().toISOString();
      // Moved again before it was sent: the queued place moves (its If-Match stays the weld's).
      if (queued) await requeue({ ...queued, place: at, queuedAt });
      else {
        await enqueue({
          kind: 'place',
          userId: shell.user.id,
          weldId: weld.id,
          weldNumber: weld.weldNumber,
          place: at,
          fromPlace: placeOf(weld),
          ifMatch: tagOf(weld),
          queuedAt,
        });
      }
      shell.queuedChange();
      shell.announce(`Saved offline: ${weld.weldNumber} on the drawing, sent when online.`);
    };
    try {
      if (queued || !navigator.onLine) return await keep();
      const { body } = await api<Weld>(`/welds/${weld.id}`, {
        method: 'PATCH',
        body: at,
        ifMatch: tagOf(weld),
      });
      setWelds((list) => withWeld(list, body));
      shell.announce(`Weld ${body.weldNumber} is on the drawing, page ${at.mapPage}.`);
    } catch (e) {
      if (e instanceof NetworkError) return await keep();
      forget();
      if (e instanceof ApiError && e.status === 412) {
        // Someone changed the weld meanwhile: show it as it is now, and let the inspector decide.
        const now = await api<Weld>(`/welds/${weld.id}`).then(
          (answer) => answer.body,
          () => undefined,
        );
        if (now) setWelds((list) => withWeld(list, now));
        setNotice(
          `${weld.weldNumber} was changed by someone else meanwhile` +
            (now ? ` (it is ${now.status}, ${placeOf(now) ? 'on' : 'not on'} the drawing)` : '') +
            ': it was not placed. Place it again if it is still where you said.',
        );
      } else {
        setNotice(`${weld.weldNumber} was not placed: ${describeError(e)}`);
      }
    }
  };

  const pick = (weld: Weld) => {
    setNotice('');
    if (picked === weld.id) return setPicked(undefined);
    const at = placeShown(weld);
    if (at && file) setPageNumber(Math.min(at.mapPage, file.drawing.pages));
    setAim(at ? { x: at.mapX, y: at.mapY } : { x: 0.5, y: 0.5 });
    setPicked(weld.id);
  };

  if (error) {
    return (
      <section class="weld-map" aria-labelledby="map-heading">
        <h2 id="map-heading">Drawing</h2>
        <p class="notice problem" role="alert">
          The drawing could not be read: {describeError(error)}
        </p>
      </section>
    );
  }
  if (!iso || !welds) return <p aria-busy="true">Loading the drawing…</p>;

  const picking = welds.find((w) => w.id === picked);
  const page = file && drawn === `${file.attachment.id}:${pageNumber}` ? pageNumber : undefined;
  const pages = file?.drawing.pages ?? 1;
  const unplaced = welds.filter((w) => w.status !== 'VOIDED' && !placeShown(w));
  const placed = welds.filter((w) => placeShown(w));
  const blocked = (w: Weld) => shell.queued.some((c) => c.weldId === w.id && !isPlace(c));
  const drawingName = `Drawing of ${iso.isoNumber}${pages > 1 ? `, page ${pageNumber} of ${pages}` : ''}`;

  const clickAt = (event: MouseEvent) => {
    if (!picking || !page || !sheet.current) return;
    const box = sheet.current.getBoundingClientRect();
    void place(picking, {
      mapPage: page,
      mapX: fraction((event.clientX - box.left) / box.width),
      mapY: fraction((event.clientY - box.top) / box.height),
    });
  };
  const moveAim = (event: KeyboardEvent) => {
    if (event.key === 'Escape') return setPicked(undefined);
    const step = event.shiftKey ? 0.05 : 0.01;
    const moves: Record<string, [number, number]> = {
      ArrowLeft: [-step, 0],
      ArrowRight: [step, 0],
      ArrowUp: [0, -step],
      ArrowDown: [0, step],
    };
    const move = moves[event.key];
    if (!move) return;
    event.preventDefault();
    setAim((a) => ({ x: fraction(a.x + move[0]), y: fraction(a.y + move[1]) }));
  };

  const pickButton = (w: Weld, label = w.weldNumber) => (
    <button
      key={w.id}
      type="button"
      class="chip"
      aria-pressed={picked === w.id}
      disabled={blocked(w) || !page}
      title={blocked(w) ? 'Its status change waits to be sent: place it after that.' : undefined}
      onClick={() => pick(w)}
    >
      {label}
    </button>
  );

  return (
    <section class="weld-map" aria-labelledby="map-heading">
      <h2 id="map-heading">Drawing</h2>
      {!drawingId && (
        <p class="hint">
          This ISO has no drawing yet
          {mayChooseDrawing(shell.user) ? ': add one below.' : '. An engineer can add one.'}
        </p>
      )}
      {fileError !== undefined && (
        <p class="notice problem" role="alert">
          The drawing could not be shown: {describeError(fileError)}
          {!shell.online && ' (offline: a drawing opens offline once it has been seen online)'}
        </p>
      )}
      {drawingId && !file && fileError === undefined && (
        <p aria-busy="true">Loading the drawing…</p>
      )}
      {file && (
        <>
          <div class="map-tools">
            <span class="hint">{file.attachment.fileName}</span>
            {pages > 1 && (
              <span class="field">
                <label for="map-page">Page</label>
                <select
                  id="map-page"
                  value={pageNumber}
                  onChange={(e) => setPageNumber(Number(e.currentTarget.value))}
                >
                  {Array.from({ length: pages }, (_, i) => (
                    <option key={i} value={i + 1}>
                      {i + 1} of {pages}
                    </option>
                  ))}
                </select>
              </span>
            )}
            <span class="zoom">
              <button
                type="button"
                class="secondary"
                aria-label="Zoom out"
                disabled={zoom === 0}
                onClick={() => setZoom(zoom - 1)}
              >
                −
              </button>
              <span aria-live="polite">{ZOOMS[zoom]! * 100} %</span>
              <button
                type="button"
                class="secondary"
                aria-label="Zoom in"
                disabled={zoom === ZOOMS.length - 1}
                onClick={() => setZoom(zoom + 1)}
              >
                +
              </button>
            </span>
          </div>
          {mayPlace(shell.user) && (
            <div class="placer">
              <div class="choices" role="group" aria-labelledby="to-place">
                <span id="to-place" class="legend">
                  Place a weld on the drawing:
                </span>
                {unplaced.map((w) => pickButton(w))}
                {unplaced.length === 0 && (
                  <span class="hint">none left: every weld of the ISO is placed.</span>
                )}
              </div>
              {placed.length > 0 && (
                <details class="move-fold" open={!!picking && !!placeShown(picking)}>
                  <summary>Move a weld ({placed.length} on the drawing)</summary>
                  <div class="choices" role="group" aria-label="Move a weld">
                    {placed.map((w) =>
                      pickButton(
                        w,
                        pages > 1 ? `${w.weldNumber} (page ${placeShown(w)!.mapPage})` : undefined,
                      ),
                    )}
                  </div>
                </details>
              )}
              {picking && (
                <p class="notice" role="status">
                  Tap the drawing where {picking.weldNumber} is (or move the aim with the arrow keys
                  and press Enter).{' '}
                  <button type="button" class="secondary" onClick={() => setPicked(undefined)}>
                    Cancel
                  </button>
                </p>
              )}
              {notice && (
                <p class="notice problem" role="alert">
                  {sentence(notice)}
                </p>
              )}
            </div>
          )}
          <div
            class="map-view"
            role="region"
            aria-label={drawingName}
            aria-busy={!page}
            tabIndex={0}
          >
            <div
              ref={sheet}
              class={picking ? 'sheet placing' : 'sheet'}
              style={{ width: percent(ZOOMS[zoom]!) }}
              onClick={clickAt}
            >
              <canvas ref={canvas} role="img" aria-label={drawingName} data-drawn={page} />
              {picking && page && (
                <button
                  ref={aimButton}
                  type="button"
                  class="aim"
                  style={{ left: percent(aim.x), top: percent(aim.y) }}
                  aria-label={`Place ${picking.weldNumber} here (the arrow keys move this aim)`}
                  onKeyDown={moveAim}
                  onClick={(event) => {
                    event.stopPropagation(); // (a click by keyboard: the sheet's is a tap's)
                    void place(picking, { mapPage: page, mapX: aim.x, mapY: aim.y });
                  }}
                />
              )}
              {page &&
                welds.map((w) => {
                  const at = placeShown(w);
                  if (!at || at.mapPage !== page) return null;
                  const unsent = waiting.has(w.id);
                  return (
                    <a
                      key={w.id}
                      id={`mark-${w.id}`}
                      href={`#/welds/${w.id}`}
                      class={`marker status ${w.status}${unsent ? ' unsent' : ''}`}
                      style={{ left: percent(at.mapX), top: percent(at.mapY) }}
                      aria-label={`Weld ${w.weldNumber}, ${w.status}${unsent ? ', placed offline, not sent yet' : ''}`}
                      data-weld={w.id}
                    >
                      {w.weldNumber}
                    </a>
                  );
                })}
            </div>
          </div>
        </>
      )}
      {mayChooseDrawing(shell.user) && <DrawingFile shell={shell} iso={iso} changed={setIso} />}
    </section>
  );
}

//------------------------------------------------------------------------------------------------
// The drawing's file (engineers and admins)

function DrawingFile({
  shell,
  iso,
  changed,
}: {
  shell: Shell;
  iso: Iso;
  changed: (iso: Iso) => void;
}) {
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState('');
  /** The ISO's other PDFs and images: any of them can become the drawing. */
  const [files, setFiles] = useState<Attachment[]>([]);
  const readFiles = () =>
    api<Page<Attachment>>(`/attachments${query({ isoId: iso.id, limit: '100' })}`).then(
      ({ body }) =>
        setFiles(body.items.filter((a) => DRAWABLE.has(a.contentType) && a.id !== iso.drawingId)),
      () => {},
    );
  useEffect(() => void readFiles(), [iso.id, iso.drawingId]);

  const use = async (attachment: Attachment) => {
    try {
      const { body } = await api<Iso>(`/isos/${iso.id}`, {
        method: 'PATCH',
        body: { drawingId: attachment.id },
        ifMatch: `"${iso.version}"`,
      });
      changed(body);
      shell.announce(`${attachment.fileName} is the drawing of ${body.isoNumber} now.`);
    } catch (e) {
      // Changed meanwhile (412): shown as it is now, the choice is the engineer's again.
      if (e instanceof ApiError && e.status === 412) {
        await api<Iso>(`/isos/${iso.id}`).then(
          ({ body }) => changed(body),
          () => {},
        );
      }
      throw e;
    }
  };

  const choose = async (attachment: Attachment) => {
    setBusy(true);
    setProblem('');
    try {
      await use(attachment);
    } catch (e) {
      setProblem(describeError(e));
    } finally {
      setBusy(false);
    }
  };

  const upload = async (event: Event) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const file = (form.elements.namedItem('file') as HTMLInputElement).files?.[0];
    if (!file) return;
    setBusy(true);
    setProblem('');
    let attachment: Attachment | undefined;
    try {
      const body = new FormData();
      body.append('isoId', iso.id);
      body.append('file', file, file.name);
      attachment = (await api<Attachment>('/attachments', { method: 'POST', body })).body;
      await use(attachment);
      form.reset();
    } catch (e) {
      setProblem(
        attachment
          ? `${attachment.fileName} was uploaded but is not the drawing: ${describeError(e)} ` +
              'Choose it below to try again.'
          : describeError(e),
      );
      void readFiles();
    } finally {
      setBusy(false);
    }
  };

  const said = problem && (
    <p class="notice problem" role="alert">
      {problem}
    </p>
  );
  const choices = files.length > 0 && (
    <div class="choices" role="group" aria-labelledby="drawing-files">
      <span id="drawing-files" class="legend">
        Or use a file of this ISO:
      </span>
      {files.map((a) => (
        <button
          key={a.id}
          type="button"
          class="chip"
          disabled={busy || !shell.online}
          onClick={() => void choose(a)}
          title={`${a.fileName}, attached ${a.createdAt.slice(0, 10)}, ${a.sha256.slice(0, 8)}`}
        >
          {a.fileName} ({a.createdAt.slice(0, 10)})
        </button>
      ))}
    </div>
  );
  const form = (
    <form class="panel" onSubmit={upload} aria-label="The drawing's file">
      <div class="field">
        <label for="drawing-file">
          {iso.drawingId ? 'A new drawing' : 'The drawing'} (PDF, PNG or JPEG)
        </label>
        <input
          id="drawing-file"
          name="file"
          type="file"
          accept="application/pdf,image/png,image/jpeg,.pdf,.png,.jpg,.jpeg"
          required
        />
      </div>
      {said}
      <button type="submit" disabled={busy || !shell.online}>
        {busy ? 'Uploading…' : 'Upload the drawing'}
      </button>
      {!shell.online && <span class="hint"> Uploading needs the network.</span>}
      {choices}
    </form>
  );
  // With a drawing, replacing it is folded away; without one, adding it is what the screen asks.
  return iso.drawingId ? (
    <details class="move-fold">
      <summary>Replace the drawing</summary>
      {form}
    </details>
  ) : (
    form
  );
}
